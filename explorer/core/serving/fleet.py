"""The planner's serving question: for each device, how many replicas serve a workload at its service levels, and
at what cost. Reuses the analytic estimate (:mod:`.analytic`): a replica's *service-level rate* is the highest
arrival rate at which every target is met (found on a grid of the estimate up to the replica's capacity, then by
bisection); the fleet is the fewest replicas whose share of the rate stays at or under it.

    replicas          = ceil(rate / service-level rate)
    capital           = replicas x devices per replica x price per device (the planner's quote, else the
                        catalog's list price)
    TCO               = capital + replicas x devices per replica x TDP x busy share x PUE x seconds owned
                        x USD per kWh / 3.6e6
    USD / M tokens    = TCO / (rate x output tokens x seconds owned) x 1e6         (owned, over the horizon)
    rented USD / M    = replicas x devices per replica x cloud USD per second / (rate x output tokens) x 1e6

The busy share is the estimate's at rate / replicas (idle power neglected, as the cost model does). Qt-free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from explorer.core.parallel.layout_cost import JOULES_PER_KWH, device_price

from .analytic import Setup, bisect, capacity, estimate
from .stack import slo_rates
from .surfaces import KeyedCache
from .workload import SLO, Workload

SECONDS_PER_YEAR = 365.25 * 24 * 3600


def slo_rate(workload: Workload, setup: Setup, slo: SLO, points: int = 48) -> float:
    """The highest arrival rate [requests/s] at which one replica meets every service level (0: none)."""
    cap = capacity(workload, setup)
    if not cap > 0:
        return 0.0
    rates = np.linspace(cap / points, cap, points)
    ok = np.array([r.stable and r.slo_met for r in estimate(workload, setup, slo, rates)])
    if not ok.any():
        lo, hi = 0.0, float(rates[0])
    else:
        j = int(np.flatnonzero(ok)[-1])
        if j == points - 1:
            return float(rates[-1])
        lo, hi = float(rates[j]), float(rates[j + 1])
    def meets(mids: list[float]) -> dict[float, bool]:  # the estimate is per rate: one call answers for all
        return {m: r.stable and r.slo_met for m, r in zip(mids, estimate(workload, setup, slo, mids))}

    return bisect(lo, hi, 24, meets)


def cached_slo_rate(workload: Workload, setup: Setup, slo: SLO, points: int = 48) -> float:
    """:func:`slo_rate`, kept by its inputs (the same setup object, an equal workload and service levels)."""
    key = ("slo_rate", workload, setup, slo, points)
    try:
        hash(key)
    except TypeError:  # a workload with a trace: not kept
        return slo_rate(workload, setup, slo, points)
    return SLO_RATES.get(key, lambda: slo_rate(workload, setup, slo, points))


SLO_RATES = KeyedCache(64)


@dataclass(frozen=True)
class FleetRow:
    """One device's fleet for the workload. Rates in requests/s, money in USD, tokens are output tokens."""

    device_id: str
    name: str
    slo_rate: float  # per replica
    replicas: int  # 0: no load meets the service levels
    price_per_device: float  # NaN: unknown
    price_source: str
    capital: float
    tco: float
    cost_per_million: float  # owned, over the horizon
    rented_per_million: float  # at the catalog's cloud price
    busy_share: float

    @property
    def feasible(self) -> bool:
        return self.replicas > 0

    @property
    def reason(self) -> str:
        if not self.feasible:
            return "no load meets the service levels on this device"
        if not math.isfinite(self.price_per_device):
            return "no price (no quote, no list price in the catalog)"
        return ""


def fleet_row(workload: Workload, setup: Setup, device, slo: SLO, quotes=None, years: float = 3.0,
              usd_per_kwh: float = 0.12, pue: float = 1.3, row_id: str | None = None,
              name: str | None = None) -> FleetRow:
    """One replica kind's fleet: ``setup`` is one replica (its ``replicas`` is ignored: the fleet finds them) of
    ``setup.surface.devices`` devices of ``device``; the row is named ``row_id``/``name`` (default: the device's)."""
    rate = workload.mean_rate()
    _, o = workload.mean_lengths()
    seconds = years * SECONDS_PER_YEAR
    setup = replace(setup, replicas=1) if setup.replicas != 1 else setup
    row_id, name = row_id or device.id, name or device.name
    per = cached_slo_rate(workload, setup, slo)
    price, source = device_price(device, quotes)
    if not per > 0:
        return FleetRow(row_id, name, 0.0, 0, price, source, math.nan, math.nan, math.nan, math.nan, math.nan)
    n = max(1, math.ceil(rate / per - 1e-9))
    at = estimate(workload, setup, slo, [rate / n])[0]
    per_replica = setup.surface.devices  # devices of one replica: tp x pp for a system layout, 1 for a device
    tdp = setup.busy_w if setup.busy_w is not None else math.nan
    capital = n * per_replica * price
    tco = capital + n * per_replica * tdp * at.busy_share * pue * seconds / JOULES_PER_KWH * usd_per_kwh
    tokens = rate * o * seconds
    usd_s = setup.usd_per_s if setup.usd_per_s is not None else math.nan
    return FleetRow(row_id, name, per, n, price, source, capital, tco, tco / tokens * 1e6,
                    n * per_replica * usd_s / (rate * o) * 1e6, at.busy_share)


def rank_key(r: FleetRow):
    """Cheapest first: feasible, then priced (owned cost), then rented; unknown last."""
    return (not r.feasible, not math.isfinite(r.cost_per_million), r.cost_per_million if
            math.isfinite(r.cost_per_million) else 0.0, r.rented_per_million if
            math.isfinite(r.rented_per_million) else math.inf)


def size_fleet(workload: Workload, setups, devices, slo: SLO, quotes=None, years: float = 3.0,
               usd_per_kwh: float = 0.12, pue: float = 1.3) -> tuple[FleetRow, ...]:
    """Per device (one :class:`Setup` each, one device per replica): the fewest replicas meeting the service levels
    at ``workload``'s rate and their cost; ranked cheapest first (owned cost, then rented; unknown last)."""
    setups = [replace(s, replicas=1) if s.replicas != 1 else s for s in setups]  # as fleet_row takes them
    try:
        todo = [s for s in setups if SLO_RATES.peek(("slo_rate", workload, s, slo, 48)) is None]
    except TypeError:  # unhashable: nothing kept, each searched alone (cached_slo_rate)
        todo = []
    if len(todo) > 1:  # their rates searched together first (the same floats: :func:`~.stack.slo_rates`)
        for s, found in zip(todo, slo_rates(workload, todo, slo)):
            SLO_RATES.put(("slo_rate", workload, s, slo, 48), found)
    rows = [fleet_row(workload, setup, device, slo, quotes, years, usd_per_kwh, pue)
            for setup, device in zip(setups, devices)]
    return tuple(sorted(rows, key=rank_key))


def slo_rates_ready(workload: Workload, setups, slo: SLO, points: int = 48) -> bool:
    """Whether :func:`cached_slo_rate` would search nothing for any of ``setups``."""
    try:
        return all(SLO_RATES.peek(("slo_rate", workload, s, slo, points)) is not None for s in setups)
    except TypeError:
        return False
