"""Disaggregated serving: a prefill pool and a decode pool (possibly on different hardware), the KV cache of each
prompt moved between them over a link, and the search for the pool sizes that meet the service levels at the
lowest cost (DistServe, Zhong et al., OSDI 2024, https://arxiv.org/abs/2401.09670; Splitwise, Patel et al., ISCA
2024).

    KV bytes of a prompt = 2 (K and V) x layers x KV heads x head dim x prompt tokens x bytes per element
                         = the model's KV bytes per token (the analysis, in the KV cache's format) x prompt tokens
    transfer             = latency + bytes / link bandwidth per direction

A request prefills in the prefill pool (steps of prompts only), its KV cache crosses the link, and it joins the decode
pool, admitted into the decode batch with its prompt's blocks (no prefill there). Which token the user sees first
(``first_token``):

    prefill   the prefill pool samples it and streams it (DistServe, Splitwise): TTFT is the prefill pool's; the
              later tokens come from the decode pool, so TPOT includes the transfer, spread over the answer
    decode    only the decode pool streams (vLLM's disaggregated-prefill proxy: the prefill instance's token is
              dropped): TTFT = prefill + transfer + the decode pool's first step (after any step running when the
              request joins); the decode pool generates every token, one step more per request

A decode-pool preemption re-admits the request as if its KV came again (no recompute cost is counted).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .analytic import Setup
from .result import Latency, ServingResult, met_mask, slo_checks
from .simulate import cached_tokens, simulate_routed
from .workload import SLO, Requests, Workload


@dataclass(frozen=True)
class KvLink:
    """The link the KV cache crosses between the pools: bandwidth [B/s] per direction, latency [s]."""

    bandwidth: float
    latency: float = 0.0

    def __post_init__(self):
        if not self.bandwidth > 0:
            raise ValueError(f"--kv-link: bandwidth must be > 0 B/s, got {self.bandwidth}")
        if self.latency < 0:
            raise ValueError(f"--kv-link: latency must be >= 0 s, got {self.latency}")

    def seconds(self, nbytes):
        return self.latency + np.asarray(nbytes, dtype=float) / self.bandwidth


def kv_bytes_per_token(setup: Setup) -> float:
    """The whole replica's KV bytes per token (each device holds its share: per device x devices)."""
    return setup.memory.kv_per_token * setup.memory.devices


@dataclass(frozen=True, eq=False)
class DisaggRun:
    requests: Requests
    first: np.ndarray
    finish: np.ndarray
    transfer_s: np.ndarray
    prefill_runs: tuple
    decode_runs: tuple


FIRST_TOKENS = ("prefill", "decode")


def simulate_disaggregated(workload: Workload, prefill: Setup, decode: Setup, link: KvLink, n: int, seed: int = 0,
                           router: str = "round-robin", first_token: str = "prefill") -> DisaggRun:
    """``prefill.replicas`` prefill replicas and ``decode.replicas`` decode replicas serving ``n`` requests; the
    user's first token from the pool ``first_token`` names (module docstring)."""
    if first_token not in FIRST_TOKENS:
        raise ValueError(f"--first-token: expected one of {', '.join(FIRST_TOKENS)}, got {first_token!r}")
    extra = 1 if first_token == "decode" else 0  # the decode pool generates every token: one step more
    req = workload.requests(n, seed)
    cached = cached_tokens(req, workload.prefix_tokens, workload.prefix_hit_rate, prefill.memory.block_size, seed)
    first_only = Requests(req.arrival, req.input, np.ones(len(req), dtype=np.int64))
    p_runs = simulate_routed(first_only, prefill.surface, prefill.memory, prefill.policy, cached, None,
                             workload.prefix_tokens, False, prefill.replicas, router)
    first = np.full(len(req), np.nan)
    for idx, run in p_runs:
        first[idx] = run.finish
    transfer = link.seconds(kv_bytes_per_token(prefill) * req.input)
    ready = first + transfer
    order = np.argsort(ready, kind="stable")
    moved = Requests(ready[order], req.input[order], req.output[order] + extra)
    d_runs = simulate_routed(moved, decode.surface, decode.memory, decode.policy, None, decode.spec, 0, False,
                             decode.replicas, router, prefilled=True)
    finish = np.full(len(req), np.nan)
    for idx, run in d_runs:
        finish[order[idx]] = run.finish
        if extra:
            first[order[idx]] = run.first
    return DisaggRun(req, first, finish, transfer, tuple(p_runs), tuple(d_runs))


def summarize_disaggregated(run: DisaggRun, prefill: Setup, decode: Setup, slo: SLO, rate: float) -> ServingResult:
    req = run.requests
    out = req.output.astype(float)
    ttft = run.first - req.arrival
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(out > 1, (run.finish - run.first) / (out - 1), np.nan)
    e2e = run.finish - req.arrival
    duration = float(np.nanmax(run.finish) - req.arrival[0])
    lat = Latency.of(ttft), Latency.of(tpot), Latency.of(e2e)
    ok = met_mask(slo, ttft, tpot, e2e)
    dev_p, dev_d = prefill.replicas * prefill.surface.devices, decode.replicas * decode.surface.devices
    steps = sum((r.steps_by_batch for _, r in run.decode_runs), np.zeros(decode.policy.max_batch + 1))
    sizes = np.flatnonzero(steps)
    share = steps[sizes] / steps.sum() if steps.sum() else steps[sizes]
    busy_p = sum(r.busy_s for _, r in run.prefill_runs) / (duration * prefill.replicas)
    busy_d = sum(r.busy_s for _, r in run.decode_runs) / (duration * decode.replicas)
    tokens_per_s = float(out.sum()) / duration
    # per replica at its share of the tokens: J (USD) per token of one replica = the pool's per fleet token
    e_p, c_p = prefill.energy_and_cost(busy_p, tokens_per_s / prefill.replicas)
    e_d, c_d = decode.energy_and_cost(busy_d, tokens_per_s / decode.replicas)
    q = len(req) // 4
    stable = q < 25 or not np.nanmedian(e2e[-q:]) > 2 * np.nanmedian(e2e[:q]) + 0.05
    kv = sum(r.kv_block_seconds / max(r.blocks, 1) for _, r in run.decode_runs) / (duration * decode.replicas)
    return ServingResult(
        method="simulation (disaggregated)", rate=rate, replicas=prefill.replicas + decode.replicas,
        devices=(dev_p + dev_d) / (prefill.replicas + decode.replicas), ttft=lat[0], tpot=lat[1], e2e=lat[2],
        request_throughput=len(req) / duration, throughput=tokens_per_s, goodput=float(ok.sum()) / duration,
        slo=slo_checks(slo, *lat), kv_utilization=kv, mean_batch=float(sizes @ share) if len(sizes) else 0.0,
        stable=bool(stable), preemptions=sum(r.preemptions for _, r in run.decode_runs), batch_sizes=sizes,
        batch_share=share, requests=len(req), duration_s=duration, busy_share=(busy_p * dev_p + busy_d * dev_d) / (
            dev_p + dev_d), energy_per_token=e_p + e_d, cost_per_million=c_p + c_d)


@dataclass(frozen=True)
class PoolChoice:
    prefill_replicas: int
    decode_replicas: int
    cost: float  # USD per hour of the pools, or devices where a price is unknown
    cost_unit: str
    result: ServingResult  # the simulation where ``simulated``, else the estimate
    simulated: bool = True
    estimate: ServingResult | None = None  # the analytic estimate of the same pools (None: not estimated)


def search_pools(workload: Workload, prefill: Setup, decode: Setup, link: KvLink, slo: SLO, n: int = 1000,
                 max_replicas: int = 4, seed: int = 0, router: str = "round-robin",
                 first_token: str = "prefill") -> tuple[PoolChoice | None, list[PoolChoice]]:
    """Every (prefill, decode) pool size up to ``max_replicas`` each, simulated (the brute force; the estimate-first
    search is :mod:`.disagg_search`'s); the cheapest that meets every service level and keeps up (None: none does),
    and all of them."""
    priced = prefill.usd_per_s is not None and decode.usd_per_s is not None
    tried = []
    for p in range(1, max_replicas + 1):
        for d in range(1, max_replicas + 1):
            sp, sd = replace(prefill, replicas=p), replace(decode, replicas=d)
            res = summarize_disaggregated(simulate_disaggregated(workload, sp, sd, link, n, seed, router,
                                                                 first_token), sp, sd, slo, workload.mean_rate())
            devices = p * prefill.surface.devices, d * decode.surface.devices
            cost = (devices[0] * prefill.usd_per_s + devices[1] * decode.usd_per_s) * 3600 if priced else float(
                sum(devices))
            tried.append(PoolChoice(p, d, cost, "USD/h" if priced else "devices", res))
    ok = [c for c in tried if c.result.slo_met and c.result.stable]
    best = min(ok, key=lambda c: (c.cost, c.prefill_replicas + c.decode_replicas)) if ok else None
    return best, tried

