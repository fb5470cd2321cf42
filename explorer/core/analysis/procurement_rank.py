"""The procurement planner's ranking: one :class:`DevicePlan` per device, ordered feasible and priced first, then
feasible but not priced, then not judged (a figure missing), then infeasible; each with the reason in words.

Split out of :mod:`.procurement` (which re-exports every name here); the requirements (``req``) and the cost
(``cost``) are the planner's :class:`~.procurement.Requirements` and :class:`~.cost.CostResult`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..units import format_si
from .procurement_checks import Check, check_verdict


@dataclass(frozen=True)
class DevicePlan:
    """One device under the requirements. Money in USD, power in W, time in s (break-even also in h and months)."""

    id: str
    name: str
    checks: tuple[Check, ...]
    latency: float  # modelled time per pass (roofline with efficiencies), shards applied
    throughput_per_unit: float  # inferences/s or tokens/s, one unit at full use
    shards: int  # units one replica needs to hold the model (1 when it fits)
    units: int  # 0 when unknown
    price: float  # per unit (quote or catalog)
    capital: float
    energy_cost: float  # fleet, over the horizon
    tco: float
    unit_power: float  # W, one unit's TDP
    fleet_power: float  # W at the wall with every unit busy at TDP (x PUE)
    cost_per_million: float  # fleet TCO per 10^6 units served at target x utilization
    cloud_cost: float  # renting the same units around the clock for the horizon
    break_even_hours: float  # inf when renting never costs more than electricity
    break_even_months: float
    buy_or_rent: str  # "buy" | "rent" | "" (no cloud price)
    within_budget: bool | None
    within_power: bool | None
    feasible: bool | None  # None when a needed figure is missing
    missing: tuple[str, ...]  # figures the plan needed and the device lacks
    rank: int
    reason: str
    rank_cost: float = math.nan  # USD over the horizon on the ranking's basis: buy TCO or rent cost (fleet)
    rank_basis: str = ""  # "buy" | "rent" | "" (unpriced on the ranking's basis)
    rank_cost_per_million: float = math.nan  # rank_cost / (target x utilization x horizon) x 10^6, USD
    lacks: tuple[str, ...] = ()  # "purchase price", "rent price": which prices the device has none of
    batch: int = 0  # the batch the plan was made at (0: the analysis's batch, not searched)


    @property
    def verdicts(self) -> tuple[tuple[str, str], ...]:
        """Each check's ``(status, label)`` as the plan reads it (:func:`~.procurement_checks.check_verdict`)."""
        return tuple(check_verdict(c, self.shards) for c in self.checks)


def format_usd(x: float) -> str:
    """Money for people: $950, $13.4k, $1.25M; an em dash when unknown."""
    if not math.isfinite(x):
        return "\u2014"
    return f"${x / 1e6:.3g}M" if abs(x) >= 1e6 else f"${x / 1e3:.3g}k" if abs(x) >= 1e3 else f"${x:.0f}"


def _failure(p: dict, req) -> str:
    parts = []
    for c in p["checks"]:
        if c.status == "fail":
            if c.name == "memory":
                continue  # sharded: not a failure of the plan, only a larger replica
            parts.append(f"{c.title.lower()} {format_si(c.value, 's')} exceeds the {format_si(c.limit, 's')} "
                         f"{'limit' if c.name == 'bandwidth' else 'budget'}")
    if p["within_budget"] is False:
        if p["rank_basis"] == "rent":
            label, basis = "rent", p["rank_cost"]
        else:
            label, basis = ("TCO", p["tco"]) if req.budget_covers == "tco" else ("capital", p["capital"])
        parts.append(f"{label} {format_usd(basis)} is over the {format_usd(req.budget)} budget")
    if p["within_power"] is False:
        value = p["fleet_power"] if req.power_scope == "site" else p["unit_power"]
        parts.append(f"{format_si(value, 'W')} is over the {format_si(req.power_cap, 'W')} power cap")
    return "; ".join(parts)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


_COST_WORD = {"buy": "TCO ", "rent": "rent ", "cheaper": ""}
_UNPRICED = {"buy": "", "rent": " for renting", "cheaper": " (neither bought nor rented)"}


def _rank(plans: list[dict], req, cost) -> list[DevicePlan]:
    def group(p):
        if p["feasible"] is True:
            return 0 if math.isfinite(p["rank_cost"]) else 1
        if p["feasible"] is None:
            return 2
        return 3

    def key(p):
        cost = p["rank_cost"] if math.isfinite(p["rank_cost"]) else math.inf
        return group(p), cost, p["units"] or math.inf, p["id"]

    order = sorted(range(len(plans)), key=lambda i: key(plans[i]))
    best = next((plans[i] for i in order if group(plans[i]) == 0), None)
    out = [None] * len(plans)
    for rank, i in enumerate(order, start=1):
        p = plans[i]
        g = group(p)
        size = (_plural(p['units'], 'unit')
                + (f" ({_plural(p['units'] // p['shards'], 'replica')} of {p['shards']})" if p["shards"] > 1 else "")
                if p["units"] else "")
        if g == 0:
            head = "cheapest feasible option" if p is best else \
                (f"feasible, {_COST_WORD[req.rank_by]}{format_usd(p['rank_cost'] - best['rank_cost'])} more than #1 "
                 f"({(p['rank_cost'] / best['rank_cost'] - 1):+.0%})")
            what = f"TCO {format_usd(p['tco'])}" if p["rank_basis"] == "buy" else \
                f"rent {format_usd(p['rank_cost'])}"
            reason = f"{head}: {size}, {what} over {cost.years:g} years"
            if p["rank_basis"] == "rent" and "purchase price" in p["lacks"]:
                reason += " (rent only: no purchase price)"
            if p["rank_basis"] == "rent" and req.rank_by == "cheaper" and math.isfinite(p["tco"]):
                reason += f" (buying: TCO {format_usd(p['tco'])})"
            elif p["buy_or_rent"]:
                reason += (f"; {p['buy_or_rent']} (break-even after {p['break_even_months']:.1f} months)"
                           if math.isfinite(p["break_even_months"]) else "; rent (buying never breaks even)")
        elif g == 1:
            reason = (f"feasible with {size} but not costed{_UNPRICED[req.rank_by]}: no "
                      f"{', '.join(m for m in p['missing'])}")
        elif g == 2:
            reason = f"cannot be judged: missing {', '.join(p['missing']) or 'a requirement figure'}"
        else:
            reason = "infeasible: " + _failure(p, req)
        out[i] = DevicePlan(rank=rank, reason=reason, **p)
    return out
