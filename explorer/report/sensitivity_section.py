"""The sensitivity of the plan's ranking as tables (shared by the report's PDF, HTML and XLSX and by
``hwexplorer plan --sensitivity``): one row per scenario, and the buy vs rent break-even per device."""

from __future__ import annotations

import math

from ..core.analysis.procurement import format_usd
from ..core.analysis.sensitivity import Sensitivity

DASH = "\u2014"


def sensitivity_table(s: Sensitivity, numbers: bool = False) -> tuple[list[str], list[list]]:
    """Header and rows; ``numbers``: costs as floats in USD (a spreadsheet), else as text."""
    years = s.baseline.cost.years
    headers = ["Scenario", "#1", f"#1 cost (USD, fleet, over the scenario's horizon; baseline {years:g} y)",
               "Ranking (feasible and costed, cheapest first)", "Order changed"]
    rows = []
    for x in s.scenarios:
        cost = x.cost.get(x.best, math.nan) if x.best else math.nan
        rows.append([x.label, x.best or DASH,
                     (cost if math.isfinite(cost) else None) if numbers else (format_usd(cost) if x.best else DASH),
                     " > ".join(x.order) or DASH, "yes" if x.changed else ("no" if numbers else "")])
    return headers, rows


def break_even_table(s: Sensitivity, numbers: bool = False) -> tuple[list[str], list[list]]:
    headers = ["Device", "Price (USD per unit)", "Rent (USD per unit-hour)", "Electricity (USD per unit-hour)",
               "Break-even (months of 730.5 h)", "Verdict over the horizon"]
    rows = []
    for b in s.break_even:
        if numbers:
            def num(x):
                return x if math.isfinite(x) else None
            months = "never" if math.isinf(b.hours) else num(b.months)
            rows.append([b.id, num(b.price), num(b.rent_per_hour), num(b.electricity_per_hour), months,
                         b.verdict or _lacking(b)])
            continue
        months = DASH if math.isnan(b.hours) else "never" if math.isinf(b.hours) else f"{b.months:.1f}"
        rows.append([b.id, format_usd(b.price),
                     f"{b.rent_per_hour:.2f}" if math.isfinite(b.rent_per_hour) else DASH,
                     f"{b.electricity_per_hour:.3f}" if math.isfinite(b.electricity_per_hour) else DASH,
                     months, b.verdict or _lacking(b)])
    return headers, rows


def _lacking(b) -> str:
    missing = [name for name, x in (("purchase price", b.price), ("rent price", b.rent_per_hour))
               if not (math.isfinite(x) and x > 0)]
    return "no " + " and no ".join(missing) if missing else "no TDP"
