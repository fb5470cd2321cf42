"""The Serving panel's table (units in the headers) and its CSV rows: per device the analytic estimate at the
workload's rate and, after "Simulate", the simulation's row beneath it."""

from __future__ import annotations

import math

from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem

from .plotting import DASH

HEADERS = ("device or system", "method", "capacity\n(req/s)", "TTFT P50\n(ms)", "TTFT P90\n(ms)", "TTFT P99\n(ms)",
           "TPOT\n(ms)", "goodput\n(req/s)", "per device\n(tokens/s)", "cost\n(USD/M tokens)", "energy\n(J/token)",
           "service\nlevels")
TIPS = (("The device, one replica on it; or a system chosen in the Systems panel, one replica of its cheapest serving "
         "layout (tp x pp devices, as the planner's serving rows)"),
        "analytic: the estimate the charts show; simulation: 2,000 requests",
        "Highest stable arrival rate of one replica [requests/s] (analytic)",
        "Time to first token, median [ms]", "Time to first token, 90th percentile [ms]",
        "Time to first token, 99th percentile [ms]", "Time per output token, mean [ms]",
        "Requests per second meeting every service level [requests/s]",
        "Output tokens per second per device (a system's replica: over its tp x pp devices) [tokens/s]",
        "Cost per million output tokens at the catalog's cloud price per hour [USD per million tokens]",
        "Energy per output token: the device at its TDP while a step runs [J/token]",
        "Whether every service level is met at its percentile")


def _rows(names, answers, simulated):
    """(name, method, numbers..., verdict) per device and method; numbers in the headers' units (NaN: unknown)."""
    out = []
    for i, (name, a) in enumerate(zip(names, answers)):
        results = [("analytic", a.estimate)]
        if i < len(simulated):
            results.append(("simulation", simulated[i].result))
        for method, r in results:
            out.append((name, method, a.curve.capacity, r.ttft.p50 * 1e3, r.ttft.p90 * 1e3, r.ttft.p99 * 1e3,
                        r.tpot.mean * 1e3, r.goodput, r.throughput_per_device, r.cost_per_million,
                        r.energy_per_token, ("met" if r.slo_met else "missed") if r.slo else "no targets"))
    return out


def table_rows(names, answers, simulated=()):
    """The table as CSV: headers (one line each, units in brackets) and rows (empty cells: unknown)."""
    headers = [h.replace("\n", " ") for h in HEADERS]
    rows = [[_csv(v) for v in row] for row in _rows(names, answers, simulated)]
    return headers, rows


def _csv(v):
    if isinstance(v, float):
        return "" if not math.isfinite(v) else f"{v:.6g}"
    return v


def _text(v) -> str:
    if isinstance(v, str):
        return v
    if not math.isfinite(v):
        return DASH
    return f"{v:,.4g}" if abs(v) < 1e4 else f"{v:,.0f}"


class ServingTable(QTableWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setAlternatingRowColors(True)
        self.verticalHeader().setVisible(False)
        self.verticalHeader().setDefaultSectionSize(20)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.setColumnCount(len(HEADERS))
        self.setHorizontalHeaderLabels(list(HEADERS))
        for j, tip in enumerate(TIPS):
            self.horizontalHeaderItem(j).setToolTip(tip)
        self.horizontalHeader().setMinimumHeight(36)

    def fill(self, names, answers, simulated=()) -> None:
        rows = _rows(names, answers, simulated)
        header = self.horizontalHeader()
        # fit the columns once after the fill, not after every cell (ResizeToContents re-measures per setItem)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.setRowCount(len(rows))
        for i, row in enumerate(rows):
            for j, v in enumerate(row):
                text, item = _text(v), self.item(i, j)
                if item is not None:
                    if item.text() != text:  # a cell whose text is unchanged is left as it is
                        item.setText(text)
                    continue
                item = QTableWidgetItem(text)
                item.setToolTip(TIPS[j])
                self.setItem(i, j, item)
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
