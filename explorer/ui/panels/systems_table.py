"""The Systems panel's table (the ranked layouts of one system, units in the headers) and its CSV rows.

One row per valid layout of the system in focus, in the order of the search (layouts that fit first, then by the
objective); the chosen layout's row is bold and marked. A double-click on a row chooses that layout.
"""

from __future__ import annotations

import numpy as np

from explorer.core.parallel.layout import Layout
from explorer.core.parallel.system_pass import STEP_PARTS

from .plotting import DASH
from .ranked import RankedTable, fits_text, number


def columns(unit: str) -> list[tuple[str, str, float]]:
    """(header, field of the analysis, scale to the header's unit); fields of :class:`SystemAnalysis`."""
    return [
        ("step\n(ms)", "step_time", 1e3),
        ("latency\n(ms)", "latency", 1e3),
        (f"per device\n({unit})", "throughput_per_device", 1.0),
        (f"total\n({unit})", "throughput", 1.0),
        ("compute\n(ms)", "compute_time", 1e3),
        ("comm.\n(ms)", "comm_time", 1e3),
        ("bubble\n(ms)", "bubble_time", 1e3),
        ("comm. share\n(%)", "comm_share", 100.0),
        ("memory/device\n(GB)", "memory_bytes", 1e-9),
        ("expert imb.\n(\u00d7)", "imbalance", 1.0),
    ]


class LayoutTable(RankedTable):
    """The ranked layouts of one :class:`~explorer.core.parallel.compare.SystemResult`."""

    def __init__(self, parent=None):
        super().__init__("The valid layouts of the system in focus, best first; double-click one to choose it",
                         parent)
        self.horizontalHeader().setStretchLastSection(False)

    def fill(self, result, chosen: Layout | None, cost=None) -> None:
        """The rows of ``result`` (every layout, ranked); ``chosen``'s row bold. None: no rows. ``cost``: the
        result's :class:`~explorer.core.parallel.layout_cost.LayoutCost` (its column; unknown without a price)."""
        r = None if result is None else result.analysis
        unit = r.throughput_unit if r is not None else "tokens/s"
        cols = columns(unit)
        per = "tokens" if unit == "tokens/s" else "sequences"
        headers = ["rank", "layout", "fits", *[h for h, _, _ in cols], f"cost\n(USD/M {per})"]
        if self.columnCount() != len(headers) or self.horizontalHeaderItem(3) is None \
                or self.horizontalHeaderItem(5).text() != headers[5]:
            self.setColumnCount(len(headers))
            self.setHorizontalHeaderLabels(headers)
            self.horizontalHeader().setMinimumHeight(36)
        if r is None:
            self.put_rows([], [])
            return
        order = [int(k) for k in result.order] if len(result.order) else list(range(len(r)))
        values = {f: np.asarray(getattr(r, f), float) * s for _, f, s in cols}
        rows = [(r.layouts[k] == chosen,
                 [r.layouts[k].label(), fits_text(r, k), *[number(float(values[f][k])) for _, f, _ in cols],
                  number(float(cost.cost_per_million[k])) if cost is not None else DASH]) for k in order]
        self.put_rows([r.layouts[k] for k in order], rows, {len(headers) - 1: cost_tip(cost)})


def cost_tip(cost) -> str:
    """What the cost column is made of, or why it is unknown."""
    if cost is None:
        return "cost per million tokens: no valid layout"
    if not cost.priced:
        return f"cost unknown: {cost.reason}; enter a quote in the planner"
    return (f"{cost.price_source} {cost.price_per_device:,.0f} USD per device + electricity (TDP {cost.tdp:g} W) over "
            f"{cost.years:g} years at {cost.utilization:.0%} utilization; devices only, chassis and network not priced")


def csv_rows(every, chosen) -> tuple[list[str], list[list]]:
    """Header and rows for CSV: every layout of every system (SI units in the headers), the chosen marked.
    ``every``: the results with all layouts; ``chosen``: the chosen layout per system (None where none)."""
    unit = next((r.analysis.throughput_unit for r in every if r.analysis is not None), "tokens/s")
    header = ["system_id", "system", "device", "devices", "layout", "tp", "pp", "ep", "dp", "microbatches",
              "chosen", "fits", "step [s]", *[f"{p} [s]" for p in STEP_PARTS], "latency [s]",
              f"throughput [{unit}]", f"throughput per device [{unit}]", "memory per device [B]",
              "device memory [B]", "communication share [fraction]", "expert imbalance [x]", "error"]
    rows = []
    for res, pick in zip(every, chosen):
        base = [res.system.id, res.system.name, res.device.name, res.system.devices]
        r = res.analysis
        if r is None:
            rows.append(base + [""] * (len(header) - len(base) - 1) + [res.error or ""])
            continue
        parts = r.step_parts
        for k in (int(k) for k in res.order):
            lay = r.layouts[k]
            rows.append(base + [lay.label(), lay.tp, lay.pp, lay.ep, lay.dp, lay.microbatches,
                                "yes" if lay == pick else "", "yes" if r.fits[k] else "no", float(r.step_time[k]),
                                *[float(x) for x in parts[k]], float(r.latency[k]), float(r.throughput[k]),
                                float(r.throughput_per_device[k]), float(r.memory_bytes[k]), float(r.capacity),
                                float(r.comm_share[k]), float(r.imbalance[k]), ""])
    return header, rows
