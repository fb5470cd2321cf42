"""The search for the cheapest disaggregated pools, estimate first (issue 19): rank every (prefill, decode) pool size
up to ``max_replicas`` each with the analytic estimate (:func:`~.disagg_estimate.estimate_disaggregated`, vectorised
over three rates: cheap), then simulate only what the estimate cannot settle.

    cost        USD per hour of the pools' devices (their cloud prices), or the devices where a price is unknown
    order       every size by (cost, P + D), P-major among equals: the order the brute force's min() sees them
    clear fail  the estimate misses a service level or the queue grows, and its verdict is far from the boundary
    near        within 15 % of the boundary: a service level's value / target in [0.85, 1.15], or the verdict
                changes between rate / 1.15 and rate x 1.15 (stability, capacity)
    walk        through the order: a clear fail is skipped (not simulated); any other size is simulated, and the
                first whose simulation meets every service level and keeps up is the answer

The answer equals the brute force's (:func:`~.disagg.search_pools`: every size simulated, the cheapest passing)
whenever the estimate's clear fails also fail in the simulation: every cheaper size was either simulated and failed,
or was far from the boundary on the failing side (the estimate is within 15 % of the simulation on the stated cases,
``tests/core/serving/test_disagg_estimate.py``). Sizes after the answer in the order are never simulated. Qt-free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .analytic import Setup
from .disagg import KvLink, PoolChoice, search_pools, simulate_disaggregated, summarize_disaggregated
from .disagg_estimate import estimate_disaggregated
from .result import ServingResult
from .workload import SLO, Workload

MARGIN = 0.15  # the estimate's stated agreement with the simulation: within it, a verdict is simulated
METHODS = ("estimate", "simulate")


@dataclass(frozen=True)
class PoolSearch:
    """The search's answer: the cheapest passing size (None: none up to the largest), every size in the order
    searched (``tried``: simulated ones carry their simulation, the rest their estimate), and how many were
    simulated."""

    best: PoolChoice | None
    tried: tuple[PoolChoice, ...]
    simulated: int
    method: str


def _ok(r: ServingResult) -> bool:
    return bool(r.stable and r.slo_met)


def _ratio(r: ServingResult) -> float:
    """The largest value / target over the service levels (inf where the queue grows; 0 with none)."""
    if not r.stable:
        return math.inf
    return max((c.value_s / c.target_s for c in r.slo), default=0.0)


def near_boundary(estimates: list[ServingResult]) -> bool:
    """Whether the estimates at (rate / 1.15, rate, rate x 1.15) put a size within :data:`MARGIN` of the service
    levels' boundary."""
    verdicts = {_ok(e) for e in estimates}
    ratio = _ratio(estimates[1])
    return len(verdicts) > 1 or (1 - MARGIN) <= ratio <= (1 + MARGIN)


def _cost(prefill: Setup, decode: Setup, p: int, d: int) -> tuple[float, str]:
    devices = p * prefill.surface.devices, d * decode.surface.devices
    if prefill.usd_per_s is not None and decode.usd_per_s is not None:
        return (devices[0] * prefill.usd_per_s + devices[1] * decode.usd_per_s) * 3600, "USD/h"
    return float(sum(devices)), "devices"


def search_pools_estimated(workload: Workload, prefill: Setup, decode: Setup, link: KvLink, slo: SLO,
                           n: int = 1000, max_replicas: int = 4, seed: int = 0, router: str = "round-robin",
                           first_token: str = "prefill") -> PoolSearch:
    """The cheapest (P, D) meeting the service levels, the estimate ranking and the simulation deciding (module
    docstring)."""
    rate = workload.mean_rate()
    rates = [rate / (1 + MARGIN), rate, rate * (1 + MARGIN)]
    sizes = []
    for p in range(1, max_replicas + 1):
        for d in range(1, max_replicas + 1):
            sp, sd = replace(prefill, replicas=p), replace(decode, replicas=d)
            cost, unit = _cost(prefill, decode, p, d)
            sizes.append((cost, p + d, p, d, unit, sp, sd))
    sizes.sort(key=lambda s: (s[0], s[1]))  # stable: P-major among equals, as the brute force's min()
    tried, best, simulated = [], None, 0
    for cost, _, p, d, unit, sp, sd in sizes:
        ests = estimate_disaggregated(workload, sp, sd, link, slo, rates, first_token)
        if best is None and (_ok(ests[1]) or near_boundary(ests)):
            res = summarize_disaggregated(simulate_disaggregated(workload, sp, sd, link, n, seed, router,
                                                                 first_token), sp, sd, slo, rate)
            simulated += 1
            choice = PoolChoice(p, d, cost, unit, res, simulated=True, estimate=ests[1])
            if _ok(res):
                best = choice
        else:
            choice = PoolChoice(p, d, cost, unit, ests[1], simulated=False, estimate=ests[1])
        tried.append(choice)
    return PoolSearch(best, tuple(tried), simulated, "estimate")


def search(workload: Workload, prefill: Setup, decode: Setup, link: KvLink, slo: SLO, n: int = 1000,
           max_replicas: int = 4, seed: int = 0, method: str = "estimate", router: str = "round-robin",
           first_token: str = "prefill") -> PoolSearch:
    """The pool search by ``method``: ``estimate`` (:func:`search_pools_estimated`) or ``simulate`` (every size
    simulated, :func:`~.disagg.search_pools`)."""
    if method == "estimate":
        return search_pools_estimated(workload, prefill, decode, link, slo, n, max_replicas, seed, router,
                                      first_token)
    if method != "simulate":
        raise ValueError(f"--pool-search: expected one of {', '.join(METHODS)}, got {method!r}")
    best, tried = search_pools(workload, prefill, decode, link, slo, n, max_replicas, seed, router, first_token)
    return PoolSearch(best, tuple(tried), len(tried), "simulate")
