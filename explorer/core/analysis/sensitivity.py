"""How the planner's ranking moves with its uncertain inputs (issue 23): prices +/-20 %, utilization 30-90 %,
the electricity price and the ownership horizon, and where buying and renting break even.

Each scenario changes one input from the baseline and plans again (:func:`plan`, the same checks, sizing and
ranking); the table gives, per scenario, the first-ranked device, its cost on the ranking's basis (buy TCO or rent,
USD over that scenario's horizon, the fleet), the order of the devices that are feasible and costed, and whether
that order differs from the baseline's. Prices scale every purchase price and every rent price of the plan
(catalog or quote) by the same factor. The units are sized at peak demand, so utilization moves the electricity
and the cost per million, not the units.

Break-even (buy vs rent), per device with both prices: renting costs ``r`` USD per unit-hour; owning costs the
price ``P`` once plus electricity ``e`` USD per unit-hour (TDP x utilization x PUE x the electricity price), so
buying is cheaper after ``P / (r - e)`` hours; never when ``r <= e``. Months are 1/12 of a Julian year (730.5 h).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .cost import CostAssumptions, CostAssumptionsLike
from .evaluate import ModelAnalysis
from .procurement import HOURS_PER_MONTH, PlanResult, Requirements, plan

PRICE_FACTORS = (0.8, 1.2)
UTILIZATIONS = (0.3, 0.6, 0.9)
ELECTRICITY_FACTORS = (0.5, 2.0)
HORIZONS = (1.0, 3.0, 5.0)


@dataclass(frozen=True)
class Scenario:
    """One changed input. ``cost``: USD over the scenario's horizon on the ranking's basis, by device id (NaN:
    not feasible or not costed); ``order``: ids of the feasible, costed devices, cheapest first."""

    group: str  # "baseline" | "price" | "utilization" | "electricity" | "horizon"
    label: str
    order: tuple[str, ...]
    cost: dict
    changed: bool  # the order differs from the baseline's

    @property
    def best(self) -> str:
        return self.order[0] if self.order else ""


@dataclass(frozen=True)
class BreakEven:
    """Buy vs rent for one device at the baseline: hours and months after which owning is cheaper (inf: never;
    NaN: a price is missing), with the per unit-hour figures it comes from (USD/h)."""

    id: str
    name: str
    price: float  # USD per unit
    rent_per_hour: float  # USD per unit-hour
    electricity_per_hour: float  # USD per unit-hour at the baseline's utilization, PUE and electricity price
    hours: float
    months: float
    horizon_months: float

    @property
    def verdict(self) -> str:
        if math.isnan(self.hours):
            return ""
        return "buy" if self.hours <= self.horizon_months * HOURS_PER_MONTH else "rent"


@dataclass(frozen=True, eq=False)
class Sensitivity:
    baseline: PlanResult
    scenarios: tuple[Scenario, ...]  # the baseline first
    break_even: tuple[BreakEven, ...]

    @property
    def stable(self) -> bool:
        """The first-ranked device is the same in every scenario."""
        return len({s.best for s in self.scenarios}) == 1


def _scenario(group: str, label: str, result: PlanResult, base_order: tuple[str, ...] | None) -> Scenario:
    ranked = [d for d in result.ranked if d.feasible is True and math.isfinite(d.rank_cost)]
    order = tuple(d.id for d in ranked)
    cost = {d.id: d.rank_cost for d in result.devices}
    return Scenario(group, label, order, cost, base_order is not None and order != base_order)


def sensitivity(analysis: ModelAnalysis, requirements: Requirements,
                assumptions: CostAssumptionsLike) -> Sensitivity:
    """The baseline plan and one plan per changed input; see the module's docstring."""
    base = plan(analysis, requirements, assumptions)
    c = base.cost
    costs = CostAssumptions(years=c.years, electricity_usd_per_kwh=c.electricity_usd_per_kwh, pue=c.pue,
                            utilization=c.utilization)
    req = replace(requirements, years=c.years, electricity_usd_per_kwh=c.electricity_usd_per_kwh, pue=c.pue)
    baseline = _scenario("baseline", "baseline", base, None)
    out = [baseline]
    dev = base.analysis.devices  # prices with the quotes applied

    def add(group, label, r, a=costs):
        out.append(_scenario(group, label, plan(analysis, r, a), baseline.order))

    for f in PRICE_FACTORS:
        price = {i: float(p) * f for i, p in zip(dev.ids, dev.price) if math.isfinite(p) and p > 0}
        cloud = {i: float(p) * f for i, p in zip(dev.ids, dev.cloud_price) if math.isfinite(p) and p > 0}
        add("price", f"prices {f - 1:+.0%}", replace(req, price=price, cloud_price=cloud))
    for u in UTILIZATIONS:
        if u != c.utilization:
            add("utilization", f"utilization {u:.0%}", req, replace(costs, utilization=u))
    for f in ELECTRICITY_FACTORS:
        e = c.electricity_usd_per_kwh * f
        add("electricity", f"electricity {e:.3g} USD/kWh (x{f:g})", replace(req, electricity_usd_per_kwh=e))
    for y in HORIZONS:
        if y != c.years:
            add("horizon", f"horizon {y:g} year{'' if y == 1 else 's'}", replace(req, years=y))
    hours = c.years * 365.25 * 24
    breaks = []
    for d in base.devices:
        i = dev.ids.index(d.id)
        rent = float(dev.cloud_price[i]) * 3600.0
        electricity = float(c.energy_cost[i]) / hours
        price = float(dev.price[i])
        known = all(math.isfinite(x) and x > 0 for x in (price, rent)) and math.isfinite(electricity)
        h = (price / (rent - electricity) if rent > electricity else math.inf) if known else math.nan
        breaks.append(BreakEven(d.id, d.name, price, rent, electricity, h, h / HOURS_PER_MONTH, c.years * 12))
    return Sensitivity(base, tuple(out), tuple(breaks))
