"""The discrete-event simulation of one replica serving with continuous (iteration-level) batching.

The engine, as vLLM's scheduler runs it:

* requests wait in arrival order (FCFS); one is admitted when the batch has room (``max_batch`` sequences) and
  the paged KV cache has the blocks for its prompt plus one block of growth for each running sequence
  (:class:`~.memory.ReplicaMemory`), and nothing was preempted since the running sequences last generated a token
  (vLLM admits no new prompt in a step that preempted);
* ``chunked=False``: waiting prompts that fit run as a prefill step of their own (up to ``max_batched_tokens``
  tokens; prefill first, as vLLM's default scheduler does), which yields each one's first token; otherwise every
  running sequence takes one decode step;
* ``chunked=True``: each step carries every running sequence's decode token plus up to ``chunk - b`` prompt tokens
  of the waiting prompts (Sarathi-Serve / vLLM's chunked prefill); a prompt's last chunk yields its first token;
  with speculative decoding each decoder drafts k tokens and verifies k + 1 in the step (``chunk - b (k + 1)``
  prompt tokens left), advancing E tokens (:class:`~.policy.Speculative`);
* a decode step that needs a new KV block when none is free preempts the last admitted sequence (vLLM's recompute
  preemption): its blocks are freed and it waits at the head of the queue to prefill its prompt and the tokens it
  had generated again. Preemptions are counted.

Between events (an arrival that can be admitted, a sequence finishing, the KV cache filling) the batch is fixed,
so k decode steps are taken at once: k x decode(b, c + (k - 1) / 2), the context growing by one token a step
(the surface is linear in context between grid points). The loop therefore runs a few times per request, not per
token: 10,000 requests take well under 2 s (bench/serving_sim.py).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable

import numpy as np

from .memory import ReplicaMemory
from .policy import Policy, SimRun, Speculative, cached_tokens
from .surface import StepSurface
from .workload import Requests

__all__ = ["ROUTERS", "Cancelled", "Policy", "SimRun", "Speculative", "cached_tokens", "simulate", "simulate_routed"]


ROUTERS = ("round-robin", "least-outstanding")
DEFAULT_POLICY = Policy()  # vLLM's defaults: 256 sequences, 8192 prompt tokens a step, no chunking


def simulate(requests: Requests, surface: StepSurface, memory: ReplicaMemory, policy: Policy = DEFAULT_POLICY,
             cached: np.ndarray | None = None, spec: Speculative | None = None, prefix_tokens: int = 0,
             record: bool = False) -> SimRun:
    """Serve ``requests`` on one replica; ``cached``: each request's prompt tokens found in the prefix cache
    (their blocks shared: the prefix's blocks are held once, for the whole run)."""
    return simulate_routed(requests, surface, memory, policy, cached, spec, prefix_tokens, record)[0][1]


def simulate_routed(requests: Requests, surface: StepSurface, memory: ReplicaMemory, policy: Policy = DEFAULT_POLICY,
                    cached: np.ndarray | None = None, spec: Speculative | None = None, prefix_tokens: int = 0,
                    record: bool = False, replicas: int = 1, router: str = "round-robin",
                    progress: Callable[[float], object] | None = None,
                    prefilled: bool = False) -> list[tuple[np.ndarray, SimRun]]:
    """Serve ``requests`` on ``replicas`` identical replicas behind a router: ``round-robin`` (request i to
    replica i mod R) or ``least-outstanding`` (to the replica with the fewest requests admitted or waiting and
    not finished, at the request's arrival; ties to the lowest index). Returns (the indices of the requests each
    replica served, its run), the replicas advancing together in time. ``progress`` is called with the share of
    the requests routed so far (every 1 %); when it returns False the run stops with :class:`Cancelled`.
    ``prefilled``: the requests come with their prompts' KV cache computed elsewhere (a disaggregated decode pool):
    admitted straight into the decode batch with their first token; the run's ``first`` is then the end of the
    first decode step each one takes (the decode pool's first token)."""
    if router not in ROUTERS:
        raise ValueError(f"--router: expected one of {', '.join(ROUTERS)}, got {router!r}")
    n = len(requests)
    cached = np.zeros(n, dtype=np.int64) if cached is None else cached.astype(np.int64)
    shared = _Shared(requests, cached)
    engines = [_engine(shared, surface, memory, policy, spec, prefix_tokens, record, prefilled)
               for _ in range(replicas)]
    every = max(1, n // 100)
    load = [0] * replicas
    for e in engines:
        next(e)
    assigned: list[list[int]] = [[] for _ in range(replicas)]
    for i, t in enumerate(requests.arrival.tolist()):
        for r, e in enumerate(engines):
            load[r] = e.send((t, ()))
        r = i % replicas if router == "round-robin" else min(range(replicas), key=load.__getitem__)
        load[r] = engines[r].send((t, (i,)))
        assigned[r].append(i)
        if progress is not None and i % every == 0 and progress(i / n) is False:
            raise Cancelled("serving simulation cancelled")
    out = []
    for r, e in enumerate(engines):
        e.send((math.inf, ()))
        try:
            e.send(None)
        except StopIteration as stop:
            idx = np.array(assigned[r], dtype=np.int64)
            sub = Requests(requests.arrival[idx], requests.input[idx], requests.output[idx])
            steps, busy, kv_int, preempt, slices = stop.value
            end = float(np.nanmax(shared.finish[idx])) if len(idx) else 0.0
            out.append((idx, SimRun(sub, shared.prompt[idx], shared.first[idx], shared.finish[idx], preempt, steps,
                                    busy, end, kv_int, memory.blocks, tuple(slices))))
    return out


class Cancelled(Exception):
    """The progress callback asked the simulation to stop."""


class _Shared:
    """Per-request arrays every replica writes its own requests' entries of."""

    def __init__(self, requests: Requests, cached: np.ndarray):
        n = len(requests)
        self.arrival = requests.arrival
        self.inp = requests.input.astype(np.int64)
        self.out = requests.output.astype(np.int64)
        self.cached = cached
        self.gen = np.zeros(n)  # tokens generated so far
        self.held = np.zeros(n, dtype=np.int64)  # KV blocks held
        self.prompt = (self.inp - cached).astype(np.int64)  # tokens the (last) prefill computes
        self.first, self.finish = np.full(n, np.nan), np.full(n, np.nan)


def _engine(sh: _Shared, surface: StepSurface, memory: ReplicaMemory, policy: Policy, spec: Speculative | None,
            prefix_tokens: int, record: bool, prefilled: bool = False):
    """One replica as a generator: sent (time, new request indices), it takes the new requests into its queue and
    runs its steps until its clock reaches that time (or it has nothing to do), then yields how many requests it
    holds; sent None, it returns its counters."""
    inp, out, cached, gen, held, prompt = sh.inp, sh.out, sh.cached, sh.gen, sh.held, sh.prompt
    first, finish = sh.first, sh.finish
    bs = memory.block_size
    any_cached = bool(cached.any())
    free = memory.blocks - (-(-prefix_tokens // bs) if any_cached else 0)
    if free <= 0:
        raise ValueError("memory: no KV-cache blocks left after weights and activations on this device")
    tps = spec.tokens_per_step if spec else 1.0
    per_decoder = spec.k + 1 if spec else 1  # a decoder's tokens in a chunked step (speculative: k + 1 verified)
    base = inp - cached  # a sequence's own KV tokens before it generates (the shared prefix's blocks apart)
    steps = np.zeros(policy.max_batch + 1)
    decoding: list[int] = []  # admitted and prefilled, in the order they were admitted
    prefilling: dict[int, int] = {}  # chunked: admitted, prompt tokens still to compute
    waiting: deque[int] = deque()
    busy = kv_int = 0.0
    preempt = used = 0
    hold = False  # a preemption since the last step that generated tokens: admit nothing until one has
    slices: list = []
    now = 0.0

    def blocks_for(tokens):
        return -(-tokens // bs)

    def prompt_blocks(i: int) -> int:  # the prompt (and any tokens generated before a preemption) plus one
        return blocks_for(int(prompt[i]) + 1)

    def fits(i: int, running: int) -> bool:
        """Admission (as vLLM's scheduler): the prompt's blocks plus a block of growth for each of the ``running``
        sequences are free, and, while anything runs, nothing was preempted since the last step that generated
        tokens. Without these a sequence preempted for want of a block is admitted straight back into the blocks
        it freed, recomputed and preempted again, without end."""
        return not (hold and (decoding or prefilling)) and prompt_blocks(i) + running <= free

    def release(done) -> None:
        nonlocal free, used
        released = int(held[done].sum())
        free += released
        used -= released
        held[done] = 0

    before = last_done = 0
    ran, dirty = False, True
    dec = od = bd = np.zeros(0, dtype=np.int64)
    cached_sum = 0.0
    message = yield 0
    while message is not None:
        limit, new = message
        for i in new:
            if not (decoding or prefilling or waiting):
                now = max(now, float(sh.arrival[i]))
            waiting.append(i)
        while now < limit and (decoding or prefilling or waiting):
            before = len(decoding) + len(prefilling) + len(waiting)
            ran = True
            active = len(decoding) + len(prefilling)
            can_admit = bool(waiting) and active < policy.max_batch and fits(waiting[0], active)
            if prefilled and can_admit:  # KV computed elsewhere: into the decode batch with its first token
                while waiting and len(decoding) < policy.max_batch and fits(waiting[0], len(decoding)):
                    i = waiting.popleft()
                    held[i] = prompt_blocks(i)
                    free -= int(held[i])
                    used += int(held[i])
                    gen[i] = max(gen[i], 1.0)
                    if gen[i] >= out[i]:
                        finish[i] = now
                        release(np.array([i]))
                    else:
                        decoding.append(i)
                        dirty = True
                continue
            if dirty:  # the decoding set changed: its index array and constant columns again
                dec = np.array(decoding, dtype=np.int64)
                od, bd = out[dec], base[dec]
                cached_sum = float(cached[dec].sum()) if any_cached else 0.0
                dirty = False
            if can_admit or prefilling:
                # -- a prefill step of its own, or one chunked step carrying the decoders' tokens
                b = len(dec) if policy.chunked else 0
                budget = policy.chunk - b * per_decoder if policy.chunked else policy.max_batched_tokens
                if b:  # each decoder adds one token (speculative: E on average): new blocks where they are full
                    g = gen[dec]
                    ht = bd + g
                    full = (held[dec] * bs < ht + 2) if spec is None else np.maximum(
                        -(-(ht + tps + 1) // bs) - held[dec], 0).astype(np.int64)
                    grow = int(full.sum())
                    if grow > free:
                        preempt += _preempt(decoding, held, gen, prompt, inp, cached, waiting, release)
                        dirty = hold = True
                        continue
                chunk_of: dict[int, int] = {}
                for i, left in prefilling.items():
                    if budget <= 0:
                        break
                    chunk_of[i] = min(left, budget)
                    budget -= chunk_of[i]
                while waiting and active < policy.max_batch and fits(waiting[0], active) and (
                        not chunk_of or (budget > 0 if policy.chunked else prompt[waiting[0]] <= budget)):
                    i = waiting.popleft()
                    held[i] = prompt_blocks(i)
                    free -= int(held[i])
                    used += int(held[i])
                    active += 1
                    take = int(prompt[i]) if not policy.chunked else int(min(prompt[i], max(budget, 1)))
                    prefilling[i] = int(prompt[i])
                    chunk_of[i] = take
                    budget -= take
                p = sum(chunk_of.values())
                finished = None
                if policy.chunked:
                    c = (float(ht.sum()) + cached_sum) / b if b else 1.0
                    dt = spec.mixed1(surface, b, c, p) if spec else surface.mixed1(b, c, p)
                    if b:
                        if prefilled:  # the decode pool's first token of each sequence: this step's end
                            fresh = dec[np.isnan(first[dec])]
                            first[fresh] = now + dt
                        hold = False  # the decoders generated a token
                        free -= grow
                        used += grow
                        held[dec] += full
                        newg = np.minimum(g + tps, od)
                        gen[dec] = newg
                        steps[b] += 1
                        finished = newg >= od
                else:
                    dt = surface.prefill1(len(chunk_of), p / len(chunk_of))
                kv_int += used * dt
                if record:
                    slices.append((now, dt, "mixed" if policy.chunked else "prefill", len(chunk_of) + b))
                now += dt
                busy += dt
                if finished is not None and finished.any():
                    finish[dec[finished]] = now
                    release(dec[finished])
                    decoding[:] = dec[~finished].tolist()
                    dirty = True
                for i, take in chunk_of.items():
                    prefilling[i] -= take
                    if prefilling[i] <= 0:
                        del prefilling[i]
                        if first[i] != first[i]:  # NaN: no first token yet (a recomputed prompt has one)
                            first[i] = now
                        gen[i] = min(gen[i] + 1, out[i])
                        if gen[i] >= out[i]:
                            finish[i] = now
                            release(np.array([i]))
                        else:
                            decoding.append(i)
                            dirty = True
                continue
            if not len(dec):  # waiting, nothing running to free blocks: one prompt outgrows the whole cache
                raise ValueError(f"memory: a prompt of {int(inp[waiting[0]])} tokens does not fit the KV cache "
                                 f"({memory.kv_tokens} tokens)")
            # -- k decode steps at once, the batch fixed until the next event
            g = gen[dec]
            held_tokens = bd + g
            b = len(dec)
            c = (float(held_tokens.sum()) + cached_sum) / b
            t1 = spec.step1(surface, b, c) if spec else surface.decode1(b, c)
            k = int(np.min(np.ceil((od - g) / tps)))
            if limit < math.inf and not waiting and b < policy.max_batch:  # stop at the next arrival
                k = min(k, max(1, math.ceil((limit - now) / t1)))
            room = held[dec] * bs - held_tokens - 1  # token slots left in the blocks each sequence holds

            def need(steps_: int, room=room) -> int:
                return int(np.maximum(-(-(steps_ * tps - room) // bs), 0).sum())

            if b * -(-(k * tps) // bs) + b <= free:  # every sequence's growth fits: no search
                grown = need(k)
            elif need(1) > free:
                preempt += _preempt(decoding, held, gen, prompt, inp, cached, waiting, release)
                dirty = hold = True
                continue
            elif need(k) > free:
                lo, hi = 1, k  # need(lo) fits, need(hi) does not
                while hi - lo > 1:
                    mid = (lo + hi) // 2
                    lo, hi = (mid, hi) if need(mid) <= free else (lo, mid)
                k = lo
                grown = need(k)
            else:
                grown = need(k)
            dt = k * (spec.step1(surface, b, c + (k - 1) * tps / 2) if spec else surface.decode1(b, c + (k - 1) / 2))
            if prefilled:  # the decode pool's first token of each sequence new to the batch: the first step's end
                fresh = dec[np.isnan(first[dec])]
                first[fresh] = now + t1
            hold = False  # the decoders generated tokens
            kv_int += (used + grown / 2) * dt
            free -= grown
            used += grown
            held[dec] += np.maximum(-(-(k * tps - room) // bs), 0).astype(np.int64)
            if record:
                slices.append((now, dt, "decode", b))
            steps[b] += k
            busy += dt
            now += dt
            newg = np.minimum(g + k * tps, od)
            gen[dec] = newg
            done = newg >= od
            if done.any():
                finish[dec[done]] = now
                release(dec[done])
                decoding[:] = dec[~done].tolist()
                dirty = True
        held_now = len(decoding) + len(prefilling) + len(waiting)
        if ran:  # the requests the last step finished, at its end ``now``: still outstanding before it
            last_done, ran = before - held_now, False
        # outstanding at ``limit``: what is held now, plus what the last step (ending after ``limit``) finished
        message = yield held_now + (last_done if now > limit else 0)
    return steps, busy, kv_int, preempt, slices


def _preempt(decoding: list, held, gen, prompt, inp, cached, waiting, release) -> int:
    """vLLM's recompute preemption of the last admitted decoding sequence: its blocks freed, it waits at the head
    of the queue to prefill its prompt and generated tokens again."""
    victim = decoding.pop()
    release(np.array([victim]))
    prompt[victim] = int(inp[victim] - cached[victim] + math.ceil(gen[victim]))
    waiting.appendleft(victim)
    return 1
