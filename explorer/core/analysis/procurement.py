"""The procurement planner: which device, how many units, what it costs, and the chapter's "can you run it" checks.

The three checks (the chapter's feasibility test, Checkpoint 1.4), per selected device, each pass/fail with numbers:

* memory capacity: ``M_req = weights + KV cache + activations`` (the analysis's footprint, with the largest
  operator's activations) against the device's main memory; headroom = capacity - M_req.
* bandwidth (latency floor): ``T_mem = bytes moved per pass / BW`` (each tensor once) against the latency limit;
  a device that fails it cannot meet the limit whatever its compute.
* compute: ``T_compute = FLOPs / (R_peak x eta)`` with ``eta = eta_compute x mapping efficiency`` (the model's
  MAC-weighted mapping onto the matrix engine) against the frame or token budget (the latency limit; a rate such
  as 30 FPS gives the budget 1/30 s = 33.3 ms).

Sizing: a model that does not fit one unit is split evenly over ``ceil(M_req / capacity)`` units (weights, KV
cache and activations sharded; communication between them not modelled: an optimistic bound), which then act as
one replica with that many times the bandwidth and compute. Units = replica size x ceil(target / replica
throughput). Costs come from :func:`compute_cost` (the panels' cost model) times the units; quotes and cloud
prices given in the requirements override the catalog's. Buy versus rent: renting the same units around the clock
costs ``cloud price x hours``; owning costs the price plus electricity at the average power; break-even after
``price / (cloud price per hour - electricity per hour)`` hours.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Mapping

import numpy as np

from ..units import UnitError, parse_si
from .cost import SECONDS_PER_YEAR, CostAssumptions, CostAssumptionsLike, CostResult, compute_cost
from .evaluate import ModelAnalysis
from .procurement_checks import (  # noqa: F401 - re-exported: the checks lived here
    VERDICT_STATUSES,
    Check,
    bandwidth_check,
    check_verdict,
    compute_check,
    memory_check,
)
from .procurement_rank import (  # noqa: F401 - re-exported: the ranking lived here
    _COST_WORD,
    _UNPRICED,
    DevicePlan,
    _failure,
    _plural,
    _rank,
    format_usd,
)

RATE_UNITS = ("inferences/s", "tokens/s")
BUDGET_BASES = ("capital", "tco")
POWER_SCOPES = ("node", "site")
RANK_BASES = ("buy", "rent", "cheaper")  # what the ranking compares: buy TCO, rent cost, or the cheaper per device
HOURS_PER_MONTH = SECONDS_PER_YEAR / 12 / 3600.0  # 730.5 h
SHARDING_ASSUMPTION = ("a model larger than one unit's memory is split evenly over ceil(M_req / capacity) units "
                       "(weights, KV cache and activations sharded); communication between them is not modelled, "
                       "so the split group is counted as one replica with that many times the bandwidth and compute")
_RATE_WORDS = {"tokens/s": ("tokens/s", "token/s", "tok/s"),
               "inferences/s": ("inferences/s", "inference/s", "inf/s", "frames/s", "fps", "images/s", "queries/s",
                                "requests/s", "req/s", "samples/s")}
_PREFIX = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9}


def parse_rate(text: str, field: str = "target") -> tuple[float, str]:
    """``"2000 tokens/s"`` -> (2000.0, "tokens/s"); ``"30 FPS"`` -> (30.0, "inferences/s"); ``"1.5k tok/s"``."""
    m = re.fullmatch(r"\s*([0-9.eE+-]+)\s*([kMG]?)\s*([A-Za-z/ ]+?)\s*", str(text).replace(",", ""))
    if m:
        words = m.group(3).replace(" ", "").lower()
        for unit, spellings in _RATE_WORDS.items():
            if words in spellings:
                try:
                    value = float(m.group(1)) * _PREFIX[m.group(2)]
                except ValueError:
                    break
                if not (math.isfinite(value) and value > 0):
                    raise UnitError(field, f"'{text}' must be a positive rate")
                return value, unit
    raise UnitError(field, f"cannot read '{text}'; expected a rate such as '2000 tokens/s' or '500 inferences/s'")


def parse_latency(text: str, field: str = "latency") -> float:
    """A time (``"50 ms"``) or a rate whose period is the budget (``"30 FPS"`` -> 1/30 s). Seconds."""
    try:
        rate, _ = parse_rate(text, field)
        return 1.0 / rate
    except UnitError:
        pass
    try:
        return 1.0 / parse_si(text, "frequency", field)
    except UnitError:
        value = parse_si(text, "time", field)
    if value <= 0:
        raise UnitError(field, f"'{text}' must be positive")
    return value


def _positive(name: str, value, allow_none: bool = True) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name}: expected a positive number, got {value!r}")


@dataclass(frozen=True)
class Requirements:
    """What the buyer needs. Units: ``target`` in ``target_unit`` (inferences/s or tokens/s, the whole fleet at
    peak demand; ``None`` sizes one replica per device); ``latency`` s per inference (prefill) or per decode
    step; ``budget`` USD (compared with the capital cost, or the TCO when ``budget_covers == "tco"``);
    ``power_cap`` W (``"node"``: one unit's TDP; ``"site"``: every unit at TDP times PUE); ``years``;
    ``electricity_usd_per_kwh`` USD/kWh; ``pue`` ratio; ``price`` USD per unit (quotes, by device id);
    ``cloud_price`` USD/s per unit (by device id); ``rank_by``: ``"buy"`` ranks by the TCO of owning,
    ``"rent"`` by renting the same units around the clock for the horizon, ``"cheaper"`` by the cheaper of the two
    per device (a rent-only device is ranked by rent, a buy-only one by TCO); ``price_source`` and
    ``cloud_price_source``: by device id, where each quote comes from and its date (text). ``None`` takes the workspace's assumption (years,
    electricity, PUE) or leaves the constraint out."""

    target: float | None = None
    target_unit: str = "tokens/s"
    latency: float | None = None
    budget: float | None = None
    budget_covers: str = "capital"
    power_cap: float | None = None
    power_scope: str = "site"
    years: float | None = None
    electricity_usd_per_kwh: float | None = None
    pue: float | None = None
    price: Mapping[str, float] = field(default_factory=dict)
    cloud_price: Mapping[str, float] = field(default_factory=dict)
    rank_by: str = "buy"
    price_source: Mapping[str, str] = field(default_factory=dict)  # by device id: who quoted, and when
    cloud_price_source: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self):
        for name in ("price", "cloud_price", "price_source", "cloud_price_source"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))
        for name in ("price_source", "cloud_price_source"):
            for dev, v in getattr(self, name).items():
                if not isinstance(v, str):
                    raise TypeError(f"{name}[{dev}]: expected text (the quote's source and date), got {v!r}")
        _positive("target", self.target)
        if self.target_unit not in RATE_UNITS:
            raise ValueError(f"target_unit: expected one of {', '.join(RATE_UNITS)}, got {self.target_unit!r}")
        for name in ("latency", "budget", "power_cap", "years", "electricity_usd_per_kwh"):
            _positive(name, getattr(self, name))
        if self.pue is not None:
            _positive("pue", self.pue)
            if self.pue < 1:
                raise ValueError(f"pue: must be at least 1, got {self.pue!r}")
        if self.budget_covers not in BUDGET_BASES:
            raise ValueError(f"budget_covers: expected capital or tco, got {self.budget_covers!r}")
        if self.rank_by not in RANK_BASES:
            raise ValueError(f"rank_by: expected one of {', '.join(RANK_BASES)}, got {self.rank_by!r}")
        if self.power_scope not in POWER_SCOPES:
            raise ValueError(f"power_scope: expected node or site, got {self.power_scope!r}")
        for name in ("price", "cloud_price"):
            for dev, v in getattr(self, name).items():
                _positive(f"{name}[{dev}]", v, allow_none=False)

    def with_defaults(self, assumptions: CostAssumptionsLike) -> "Requirements":
        """These requirements with the horizon, electricity price and PUE they leave to the session's assumptions
        filled in from ``assumptions``."""
        a = assumptions
        return replace(self, years=a.years if self.years is None else self.years,
                       electricity_usd_per_kwh=(a.electricity_usd_per_kwh if self.electricity_usd_per_kwh is None
                                                else self.electricity_usd_per_kwh),
                       pue=a.pue if self.pue is None else self.pue)

@dataclass(frozen=True, eq=False)
class PlanResult:
    requirements: Requirements
    analysis: ModelAnalysis  # with quotes and cloud prices applied
    cost: CostResult  # per unit, under the plan's cost assumptions
    unit: str  # "inferences/s" | "tokens/s"
    devices: tuple[DevicePlan, ...]  # in the analysis's device order
    assumptions: tuple[tuple[str, str], ...]  # (topic, statement)

    @property
    def ranked(self) -> tuple[DevicePlan, ...]:
        return tuple(sorted(self.devices, key=lambda d: d.rank))

    def by_id(self, device_id: str) -> DevicePlan:
        for d in self.devices:
            if d.id == device_id:
                return d
        raise KeyError(device_id)


def _with_quotes(analysis: ModelAnalysis, req: Requirements) -> ModelAnalysis:
    dev = analysis.devices
    unknown = sorted((set(req.price) | set(req.cloud_price)) - set(dev.ids))
    if unknown:
        raise ValueError(f"price: no selected device has the id {', '.join(unknown)}")
    if not req.price and not req.cloud_price:
        return analysis
    price = np.array([req.price.get(i, p) for i, p in zip(dev.ids, dev.price)], dtype=float)
    cloud = np.array([req.cloud_price.get(i, c) for i, c in zip(dev.ids, dev.cloud_price)], dtype=float)
    return replace(analysis, devices=replace(dev, price=price, cloud_price=cloud))


def _ok(x: float) -> bool:
    return math.isfinite(x) and x > 0


def plan(analysis: ModelAnalysis, requirements: Requirements, assumptions: CostAssumptionsLike) -> PlanResult:
    """Checks, units, costs, buy-vs-rent and a ranking for every device of ``analysis`` under ``requirements``."""
    req = requirements
    unit = analysis.totals.throughput_unit
    if req.target is not None and req.target_unit != unit:
        phase = "decode" if unit == "tokens/s" else "prefill"
        raise ValueError(f"target: given in {req.target_unit} but the analysis ({phase}) counts {unit}; "
                         f"switch the phase or give the target in {unit}")
    full = req.with_defaults(assumptions)
    cost_assumptions = CostAssumptions(years=full.years, electricity_usd_per_kwh=full.electricity_usd_per_kwh,
                                       pue=full.pue, utilization=assumptions.utilization)
    analysis = _with_quotes(analysis, req)
    cost = compute_cost(analysis, cost_assumptions)
    dev, tot = analysis.devices, analysis.totals
    # compute-side efficiency per device: eta_compute x the model's MAC-weighted mapping efficiency
    eta = dev.eta_c * tot.mapping_efficiency
    seconds = cost.years * SECONDS_PER_YEAR
    plans = []
    for d in range(len(dev)):
        plans.append(_device_plan(analysis, cost, req, d, float(eta[d]), seconds))
    ranked = _rank(plans, req, cost)
    sizing = (f"target {req.target:g} {unit} for the whole fleet at peak demand" if req.target is not None
              else "no throughput target: one replica per device (one unit, or the units that hold the model)")
    notes = (
        ("Sizing", sizing + "; each unit at its modelled throughput (roofline with the device's efficiency factors "
                   "and mapping efficiency)"),
        ("Sharding", SHARDING_ASSUMPTION),
        ("Ownership", f"{cost.years:g} years, electricity {cost.electricity_usd_per_kwh:g} USD/kWh, PUE {cost.pue:g}, "
                      f"utilization {cost.utilization:.0%}"),
        ("Power", cost.power_assumption),
        ("Buy vs rent", "the same units rented around the clock for the horizon (cloud price per unit-hour) against "
                        "the purchase price plus electricity at the average power"),
        ("Constraints", f"budget compared with the {'TCO' if req.budget_covers == 'tco' else 'capital cost'}; power "
                        f"cap per {'unit (its TDP)' if req.power_scope == 'node' else 'site (every unit at TDP, times PUE)'}"),
    )
    return PlanResult(req, analysis, cost, unit, tuple(ranked), notes)


def _device_plan(analysis, cost: CostResult, req: Requirements, d: int, eta: float, seconds: float) -> dict:
    dev, tot = analysis.devices, analysis.totals
    device = dev.devices[d]
    capacity = float(dev.capacity[d])
    mem = memory_check(tot.weight_bytes, tot.kv_cache_bytes, tot.activation_peak_bytes, capacity)
    shards = 1 if mem.status != "fail" else math.ceil(mem.value / capacity)
    if shards > 1:
        mem = replace(mem, detail=mem.detail + f"; split over {shards} units")
    bw = bandwidth_check(float(tot.bytes[d]), float(dev.bandwidth[d]), req.latency, shards)
    comp = compute_check(float(tot.flops[d]), float(dev.peak[d]), eta, req.latency, shards, dev.precision)
    if comp.detail and not analysis.total_mapping_known[d]:  # 1.00 here is an assumption, not a measured mapping
        comp = replace(comp, detail=comp.detail + "; mapping efficiency unknown (no matrix-engine data: taken as 1)")
    checks = (mem, bw, comp)
    missing = [c.missing for c in checks if c.missing]
    per_unit = float(tot.throughput[d])
    units = 0
    if _ok(per_unit):
        replica = per_unit * shards
        units = shards * math.ceil(req.target / replica - 1e-9) if req.target is not None else shards
    elif "memory bandwidth" not in missing and not any("peak" in m for m in missing):
        missing.append("model throughput")
    price, tdp, cloud = float(dev.price[d]), float(dev.tdp[d]), float(dev.cloud_price[d])
    lacks = tuple(name for name, value in (("purchase price", price), ("rent price", cloud)) if not _ok(value))
    if req.rank_by == "buy" and not _ok(price):
        missing.append("list price (enter a quote)")
    elif req.rank_by == "rent" and not _ok(cloud):
        missing.append("cloud price (enter a rent price)")
    elif req.rank_by == "cheaper" and not _ok(price) and not _ok(cloud):
        missing.append("list price or cloud price (enter a quote or a rent price)")
    if not _ok(tdp):
        missing.append("TDP")
    n = units if units else math.nan
    capital = price * n
    energy_cost = float(cost.energy_cost[d]) * n
    tco = capital + energy_cost
    fleet_power = tdp * n * cost.pue
    served = (req.target if req.target is not None else per_unit * units) * cost.utilization * seconds
    cost_per_million = tco / served * 1e6
    hours = seconds / 3600.0
    energy_per_hour = float(cost.energy_cost[d]) / hours
    cloud_hour = cloud * 3600.0
    cloud_cost = cloud_hour * hours * n
    break_even, verdict = math.nan, ""
    if _ok(cloud) and _ok(price) and _ok(tdp):
        margin = cloud_hour - energy_per_hour
        break_even = price / margin if margin > 0 else math.inf
        verdict = "buy" if break_even <= hours else "rent"
    elif _ok(cloud) and req.rank_by == "buy":
        missing.append("list price or TDP for buy vs rent")
    buy_cost = tco if math.isfinite(tco) else math.nan
    rent_cost = cloud_cost if math.isfinite(cloud_cost) and cloud_cost > 0 else math.nan
    options = {"buy": (("buy", buy_cost),), "rent": (("rent", rent_cost),),
               "cheaper": (("buy", buy_cost), ("rent", rent_cost))}[req.rank_by]
    priced = [(c, b) for b, c in options if math.isfinite(c)]
    rank_cost, rank_basis = min(priced) if priced else (math.nan, "")
    if rank_basis == "rent":  # renting has no capital: the budget pays the rent over the horizon
        budget_value = rent_cost
    else:
        budget_value = tco if req.budget_covers == "tco" else capital
    within_budget = None if req.budget is None or not math.isfinite(budget_value) else budget_value <= req.budget
    power_value = tdp if req.power_scope == "node" else fleet_power
    within_power = None if req.power_cap is None or not math.isfinite(power_value) else power_value <= req.power_cap
    statuses = [c.status for c in checks if c.name != "memory"] + ["unknown"] * (mem.status == "unknown")
    if "fail" in statuses or within_budget is False or within_power is False:
        feasible = False
    elif "unknown" in statuses or not units or (req.budget is not None and within_budget is None) \
            or (req.power_cap is not None and within_power is None):
        feasible = None
    else:
        feasible = True
    return dict(id=device.id, name=device.name, checks=checks, latency=float(tot.time[d]) / shards,
                throughput_per_unit=per_unit, shards=shards, units=units, price=price, capital=capital,
                energy_cost=energy_cost, tco=tco, unit_power=tdp, fleet_power=fleet_power, cost_per_million=cost_per_million,
                cloud_cost=cloud_cost, break_even_hours=break_even, break_even_months=break_even / HOURS_PER_MONTH,
                buy_or_rent=verdict, within_budget=within_budget, within_power=within_power, feasible=feasible,
                missing=tuple(dict.fromkeys(missing)), rank_cost=rank_cost, rank_basis=rank_basis,
                rank_cost_per_million=rank_cost / served * 1e6, lacks=lacks)
