"""The analytic estimate of disaggregated prefill and decode (the fast path beside
:func:`explorer.core.serving.disagg.simulate_disaggregated`, checked against it in the tests), vectorized over rates.

At an arrival rate lambda over P prefill and D decode replicas, mean input I, mean output O, E tokens per decode
step (speculative decoding: Leviathan's E), KV bytes per token k_B, the link's latency L and bandwidth B:

prefill pool: each replica a queue of prompts only (the colocated estimate of :mod:`.analytic` with one-token
    answers, at lambda / P): rho_p = lambda / P x prefill(1, P_prompt); TTFT_q = prefill(1, P_q) + W_q (M/D/1),
    the wait W_q times c_a^2 = 1 / P with P > 1 replicas behind the round-robin router (each sees every P-th
    Poisson arrival: Erlang-P gaps; Kingman's G/D/1 wait scales with (c_a^2 + 0) / 2)
transfer:     t_x = L + k_B x I / B                       (the prompt's KV cache, once per request)
decode pool:  b = lambda / D x (O - 1) / E x t_d(b) at context c = I + O / 2 (Little's law, a fixed point; no
    prefill steps interrupt it), t_d the replica's decode (or speculative) step
    decode time = t_x + t_d (1 - e^-b) / 2 + ceil((O - 1) / E) x t_d     (the transfer, half of the step running
                  when the request joins, then its steps)
    TPOT = decode time / (O - 1);  E2E_q = TTFT_q + decode time
With the first token from the decode pool (``first_token="decode"``, vLLM's proxy) the decode pool takes
ceil(O / E) steps a request, the first yielding the user's first token:
    b = lambda / D x O / E x t_d(b);  to the first token t_f = t_x + t_d (1 - e^-b) / 2 + t_d
    TTFT_q = the prefill pool's TTFT_q + t_f;  TPOT = (ceil(O / E) - 1) x t_d / (O - 1);  E2E_q = TTFT_q + TPOT (O - 1)
Stable while rho_p < 1 and b stays within the decode replica's batch cap (max batch, KV blocks); above it the
queue grows without bound (latencies infinite). Energy and cost per output token add the two pools'.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from .analytic import Setup, _prompt, estimate
from .disagg import KvLink, kv_bytes_per_token
from .result import Latency, ServingResult, slo_checks
from .workload import SLO, Requests, Workload


def prefill_only(workload: Workload) -> Workload:
    """The same arrivals and prompts with one-token answers: what the prefill pool serves."""
    if workload.trace is not None:
        t = workload.trace
        return replace(workload, trace=Requests(t.arrival, t.input, np.ones_like(t.output)))
    lengths = workload.lengths
    if lengths.kind == "histogram":
        return replace(workload, lengths=replace(lengths, pairs=tuple((i, 1) for i, _ in lengths.pairs)))
    return replace(workload, lengths=replace(lengths, output=(1, 1)))


def _smoother(f: ServingResult, workload: Workload, prefill: Setup) -> ServingResult:
    """The prefill pool's TTFT with its queueing wait scaled by c_a^2 = 1 / P (Kingman: W ~ (c_a^2 + c_s^2) / 2 x
    the M/D/1 wait / 1, c_s = 0), the wait recovered as TTFT less the lone prompt's prefill at each quantile."""
    if not f.stable:
        return f
    i_mean, p, _ = _prompt(workload, prefill)
    lengths = workload.lengths

    def alone(q: float | None) -> float:
        if q is None:
            return float(prefill.surface.prefill(1, max(p, 1)))
        pq = (lengths.input_quantile(q) if workload.trace is None else float(np.quantile(workload.trace.input, q)))
        return float(prefill.surface.prefill(1, max(pq - (i_mean - p), 1)))

    ca2 = 1.0 / prefill.replicas
    t = f.ttft
    vals = [alone(q) + ca2 * (x - alone(q)) for q, x in ((None, t.mean), (0.5, t.p50), (0.9, t.p90), (0.99, t.p99))]
    return replace(f, ttft=Latency(*vals))


def estimate_disaggregated(workload: Workload, prefill: Setup, decode: Setup, link: KvLink, slo: SLO,
                           rates=None, first_token: str = "prefill") -> list[ServingResult]:
    """The estimate at each rate (default: the workload's) for ``prefill.replicas`` prefill and
    ``decode.replicas`` decode replicas; the user's first token from the pool ``first_token`` names."""
    from_decode = first_token == "decode"
    rates = np.atleast_1d(np.asarray([workload.mean_rate()] if rates is None else rates, dtype=float))
    i_mean, o = workload.mean_lengths()
    first = estimate(prefill_only(workload), prefill, SLO(), rates)
    if prefill.replicas > 1:  # round robin: each replica sees every P-th arrival (Erlang-P gaps, c_a^2 = 1 / P)
        first = [_smoother(f, workload, prefill) for f in first]
    t_x = float(link.seconds(kv_bytes_per_token(prefill) * i_mean))
    lam = rates / decode.replicas
    c = i_mean + o / 2
    e = decode.tokens_per_step
    cap = decode.batch_cap(c)
    b = np.ones_like(lam)
    generated = o if from_decode else max(o - 1, 0)  # tokens the decode pool generates a request
    for _ in range(60):
        b = np.minimum(lam * generated / e * decode.step(b, c), cap + 1)
    stable_d = b <= cap
    b = np.minimum(b, cap)
    t = decode.step(b, c)
    steps = math.ceil(generated / e)
    out = []
    for j, r in enumerate(rates):
        f = first[j]
        stable = bool(f.stable and stable_d[j])
        t_j = float(t[j])
        if from_decode:  # the transfer, the step running on arrival and the first step come before the first token
            lead = t_x + t_j * (1 - math.exp(-b[j])) / 2 + t_j
            dec = (steps - 1) * t_j
            f = replace(f, ttft=Latency(*(x + lead for x in (f.ttft.mean, f.ttft.p50, f.ttft.p90, f.ttft.p99))))
        else:
            dec = t_x + t_j * (1 - math.exp(-b[j])) / 2 + steps * t_j if o > 1 else t_x
        tpot = dec / (o - 1) if o > 1 else math.nan
        ttft = f.ttft if stable else Latency(math.inf, math.inf, math.inf, math.inf)
        tp = Latency(tpot, tpot, tpot, tpot) if stable else Latency(math.inf, math.inf, math.inf, math.inf)
        e2e = Latency(ttft.mean + dec, ttft.p50 + dec, ttft.p90 + dec, ttft.p99 + dec)
        checks = slo_checks(slo, ttft, tp, e2e)
        served = float(r) if stable else min(
            f.request_throughput, decode.replicas * b[j] * e / (max(generated, 1) * t_j))
        tokens = served * o
        busy_p, busy_d = f.busy_share, float(min(1.0, 1 - math.exp(-b[j]))) if stable_d[j] else 1.0
        e_p, c_p = prefill.energy_and_cost(busy_p, tokens / prefill.replicas)
        e_d, c_d = decode.energy_and_cost(busy_d, tokens / decode.replicas)
        dev_p, dev_d = prefill.replicas * prefill.surface.devices, decode.replicas * decode.surface.devices
        out.append(ServingResult(
            method="analytic (disaggregated)", rate=float(r), replicas=prefill.replicas + decode.replicas,
            devices=(dev_p + dev_d) / (prefill.replicas + decode.replicas), ttft=ttft, tpot=tp, e2e=e2e,
            request_throughput=served, throughput=tokens, goodput=served if all(ch.met for ch in checks) else 0.0,
            slo=checks, kv_utilization=float(min(b[j] * decode.memory.blocks_for(c) / max(decode.memory.blocks, 1),
                                                 1.0)),
            mean_batch=float(b[j]), stable=stable, busy_share=(busy_p * dev_p + busy_d * dev_d) / (dev_p + dev_d),
            energy_per_token=e_p + e_d, cost_per_million=c_p + c_d))
    return out
