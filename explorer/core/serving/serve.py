"""One serving question answered: the simulation of N requests over the replicas (a router in front), summarised
as a :class:`~.result.ServingResult`, beside the analytic estimate and the load curve."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .analytic import LoadCurve, Setup, estimate, load_curve
from .result import Latency, ServingResult, met_mask, slo_checks
from .simulate import SimRun, cached_tokens, simulate
from .workload import SLO, Requests, Workload

ROUTERS = ("round-robin",)


def split(requests: Requests, replicas: int) -> list[np.ndarray]:
    """Round robin: request i goes to replica i mod R (indices into ``requests``)."""
    idx = np.arange(len(requests))
    return [idx[r::replicas] for r in range(replicas)]


def simulate_replicas(workload: Workload, setup: Setup, n: int, seed: int = 0,
                      record: bool = False) -> tuple[Requests, list[tuple[np.ndarray, SimRun]]]:
    """The requests and each replica's run (with the indices of the requests it served)."""
    req = workload.requests(n, seed)
    cached = cached_tokens(req, workload.prefix_tokens, workload.prefix_hit_rate, setup.memory.block_size, seed)
    runs = []
    for idx in split(req, setup.replicas):
        if not len(idx):
            continue
        sub = Requests(req.arrival[idx], req.input[idx], req.output[idx])
        runs.append((idx, simulate(sub, setup.surface, setup.memory, setup.policy, cached[idx], setup.spec,
                                   workload.prefix_tokens, record)))
    return req, runs


def summarize(req: Requests, runs: list[tuple[np.ndarray, SimRun]], setup: Setup, slo: SLO,
              rate: float) -> ServingResult:
    n = len(req)
    ttft, tpot, e2e = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    steps = np.zeros(setup.policy.max_batch + 1)
    kv = busy = 0.0
    for idx, run in runs:
        ttft[idx], tpot[idx], e2e[idx] = run.ttft, run.tpot, run.e2e
        steps += run.steps_by_batch
        kv += run.kv_block_seconds / max(run.blocks, 1)
        busy += run.busy_s
    end = max(run.end_s for _, run in runs)
    duration = end - float(req.arrival[0])
    lat = Latency.of(ttft), Latency.of(tpot), Latency.of(e2e)
    ok = met_mask(slo, ttft, tpot, e2e)
    sizes = np.flatnonzero(steps)
    share = steps[sizes] / steps.sum() if steps.sum() else steps[sizes]
    # stable unless the queue kept growing: the last quarter's requests waited far longer than the first's
    q = n // 4
    stable = q < 25 or not np.nanmedian(ttft[-q:]) > 2 * np.nanmedian(ttft[:q]) + 0.05
    return ServingResult(
        method="simulation", rate=rate, replicas=setup.replicas, devices=setup.surface.devices,
        ttft=lat[0], tpot=lat[1], e2e=lat[2], request_throughput=n / duration,
        throughput=float(req.output.sum()) / duration, goodput=float(ok.sum()) / duration,
        slo=slo_checks(slo, *lat), kv_utilization=kv / (duration * len(runs)),
        mean_batch=float(sizes @ share) if len(sizes) else 0.0, stable=bool(stable),
        preemptions=sum(run.preemptions for _, run in runs), batch_sizes=sizes, batch_share=share,
        requests=n, duration_s=duration, busy_share=busy / (duration * len(runs)))


@dataclass(frozen=True, eq=False)
class ServingAnswer:
    """What ``hwexplorer serve`` prints: the estimate at the workload's rate, the load curve, and (when asked)
    the simulation at that rate with its schedule."""

    workload: Workload
    slo: SLO
    setup: Setup
    estimate: ServingResult
    curve: LoadCurve
    simulation: ServingResult | None = None
    runs: tuple = ()


def answer(workload: Workload, setup: Setup, slo: SLO, simulate_n: int = 0, seed: int = 0,
           record: bool = False) -> ServingAnswer:
    est = estimate(workload, setup, slo)[0]
    curve = load_curve(workload, setup, slo)
    sim, runs = None, ()
    if simulate_n:
        req, run_list = simulate_replicas(workload, setup, simulate_n, seed, record)
        sim = summarize(req, run_list, setup, slo, workload.mean_rate())
        runs = tuple(run_list)
    return ServingAnswer(workload, slo, setup, est, curve, sim, runs)
