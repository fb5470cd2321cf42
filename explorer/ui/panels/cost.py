"""Cost per TFLOP/s: price per peak and per sustained FLOP/s, per GB/s, TCO and cost per million, per device.

Draws the session's cost result (``workspace.results.cost``, :func:`explorer.core.analysis.cost.compute_cost`) as
charts plus a sortable table. A device without a price (or TDP, or cloud rate) stays in every chart and row with
"—" and the reason. The list price can be entered in the table as a what-if (marked as user-entered, on this
session's copy of the device).
"""

from __future__ import annotations

import datetime
import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDoubleSpinBox, QLabel

from explorer.core.analysis.quotes import set_quote
from explorer.core.session.commands import SetRequirements
from explorer.core.units import UnitError

from ..plot_items.bars import Bars
from ..plot_items.note_label import NoteLabel
from ..plot_items.pinned_text import PinnedText
from .base import AnalysisPanel
from .cost_table import CostTable, columns, money, parse_price
from .plotting import (
    DASH,
    NO_PEN,
    BarPicker,
    changed,
    elide,
    empty_state,
    name_axis,
    new_plot,
    nice_ceil,
    set_range,
    set_ticks,
    set_title,
    si,
)

PEAK, SUSTAINED, PURCHASE, ENERGY, CLOUD = "#1f77b4", "#aec7e8", "#2ca02c", "#ff7f0e", "#9467bd"


class CostPanel(AnalysisPanel):
    title = "Cost per TFLOP/s"

    def build_header(self, header) -> None:
        self.inputs = {}
        for key, label, lo, hi, step, decimals, suffix, scale in (
            ("years", "Years", 0.25, 15, 0.5, 2, " y", 1.0),
            ("electricity_usd_per_kwh", "Electricity", 0.0, 2.0, 0.01, 3, " USD/kWh", 1.0),
            ("pue", "PUE", 1.0, 3.0, 0.05, 2, "", 1.0),
            ("utilization", "Utilization", 1, 100, 5, 0, " %", 100.0),
        ):
            header.addWidget(QLabel(f"{label}:"))
            box = QDoubleSpinBox()
            box.setRange(lo, hi)
            box.setSingleStep(step)
            box.setDecimals(decimals)
            box.setSuffix(suffix)
            box.setKeyboardTracking(False)
            box.setProperty("scale", scale)
            box.valueChanged.connect(lambda value, k=key, s=scale: self._assumption_changed(k, value / s))
            header.addWidget(box)
            self.inputs[key] = box

    def build(self, layout) -> None:
        self.result = None
        self.apply_device_edit = None  # optional hook (e.g. the catalog); default: workspace.put_devices
        g = self.graphics
        self.per_tflops = new_plot("USD per TFLOP/s")
        self.tco_plot = new_plot("TCO")
        self.million = new_plot("USD per million")
        for col, plot in enumerate((self.per_tflops, self.tco_plot, self.million)):
            plot.vb.invertY(True)
            g.addItem(plot, row=0, col=col)
            if col:  # the three charts share their rows: the device names are written once, on the left
                plot.hideAxis("left")
            else:
                name_axis(plot, 165)
        for key, plot in (("per_tflops", self.per_tflops), ("tco", self.tco_plot), ("million", self.million)):
            plot.setLabel("bottom", AXIS_LABELS[key])
        for plot in (self.tco_plot, self.million, self.per_tflops):
            plot.getAxis("bottom").enableAutoSIPrefix(False)
        self.bars = {}
        self._keys: dict[int, str] = {}
        for plot, specs in (
            (
                self.per_tflops,
                (("peak", PEAK, "at peak"), ("sustained", SUSTAINED, "sustained on this model")),
            ),
            (self.tco_plot, (("purchase", PURCHASE, "purchase"), ("energy", ENERGY, "electricity"))),
            (self.million, (("tco", PEAK, "owned (TCO)"), ("cloud", CLOUD, "cloud hourly price"))),
        ):
            for key, color, name in specs:
                item = Bars(x0=[], y=[], width=[], height=0.34, brush=color, pen=NO_PEN)
                plot.addItem(item)
                self.bars[key] = item
            self._keys[id(plot)] = [(c, n) for _, c, n in specs]
        self.notes: dict[str, list[PinnedText]] = {"per_tflops": [], "tco": [], "million": []}
        self._note_texts: dict[int, str] = {}  # id of a note -> its whole text (the chart shows it elided)
        for key, plot in (("per_tflops", self.per_tflops), ("tco", self.tco_plot), ("million", self.million)):
            plot.vb.sigResized.connect(lambda _vb, k=key, p=plot: self._fit_notes(k, p))
        BarPicker(self.per_tflops, self._locate, lambda i: self._describe(i, "per_tflops"))
        BarPicker(self.tco_plot, self._locate, lambda i: self._describe(i, "tco"))
        BarPicker(self.million, self._locate, lambda i: self._describe(i, "million"))
        self.table = CostTable()
        self.table.setFixedHeight(170)
        # always there: a scroll bar that comes and goes with the eighth device would re-lay out the table
        self.table.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOn)
        self.table.price_entered.connect(self._price_entered)
        layout.addWidget(self.table)
        self.power_note = NoteLabel(2)
        layout.addWidget(self.power_note)

    # -- assumptions
    def _assumption_changed(self, key: str, value: float) -> None:
        if getattr(self.workspace.assumptions, key) != value:
            try:
                self.workspace.set_assumptions(**{key: value})
            except ValueError as exc:
                self.set_message(f"Not applied: {exc}")

    def _sync_inputs(self) -> None:
        a = self.workspace.assumptions
        if not changed(self, "inputs", (a.years, a.electricity_usd_per_kwh, a.pue, a.utilization)):
            return
        for key, box in self.inputs.items():
            box.blockSignals(True)
            box.setValue(getattr(a, key) * box.property("scale"))
            box.blockSignals(False)

    # -- drawing
    def redraw(self, analysis) -> None:
        self._sync_inputs()
        if analysis is None or not len(analysis.devices):
            self.result = None
            for item in self.bars.values():
                item.setOpts(x0=[], y=[], width=[])
            for notes in self.notes.values():
                for t in notes:
                    t.setVisible(False)
            self.table.setRowCount(0)
            for key, plot in (("per_tflops", self.per_tflops), ("tco", self.tco_plot), ("million", self.million)):
                self._empty_state(key, plot, True)
            self.set_message("Select one or more devices to compare their cost.")
            return
        c = self.result = self.workspace.results.cost
        n = len(c.ids)
        y = np.arange(n, dtype=float)
        self._pair("peak", "sustained", c.price_per_peak * 1e12, c.price_per_sustained * 1e12, y)
        self._stack(np.nan_to_num(c.price, nan=0.0), np.nan_to_num(c.energy_cost, nan=0.0), y)
        self._pair("tco", "cloud", c.cost_per_million, c.cloud_cost_per_million, y)
        for plot, title in (
            (self.per_tflops, f"USD per TFLOP/s at {c.precision}"),
            (self.tco_plot, f"TCO over {c.years:g} years (USD)"),
            (self.million, f"USD per million {c.unit}s"),
        ):
            set_title(plot, title, self._keys[id(plot)])
        ticks = [[(i, elide(name, 24)) for i, name in enumerate(c.names)]]
        for key, plot, values, metrics in (
            (
                "per_tflops",
                self.per_tflops,
                [c.price_per_peak * 1e12, c.price_per_sustained * 1e12],
                ("price_per_peak", "price_per_sustained"),
            ),
            ("tco", self.tco_plot, [np.nan_to_num(c.price) + np.nan_to_num(c.energy_cost)], ("tco",)),
            (
                "million",
                self.million,
                [c.cost_per_million, c.cloud_cost_per_million],
                ("cost_per_million", "cloud_cost_per_million"),
            ),
        ):
            if plot is self.per_tflops:
                set_ticks(plot.getAxis("left"), ticks)
            finite = np.concatenate([np.asarray(v, float) for v in values])
            finite = finite[np.isfinite(finite) & (finite > 0)]
            top = float(finite.max()) if finite.size else 1.0
            set_range(plot, (0, nice_ceil(top)), (-0.6, n - 0.4))
            self._empty_state(key, plot, not finite.size)
            known = np.column_stack(
                [np.isfinite(np.asarray(v, float)) & (np.asarray(v, float) > 0) for v in values]
            )
            reasons = [
                "; ".join(dict.fromkeys(r for m in metrics for r in c.reason(m, i).split("; ") if r))
                for i in range(n)
            ]
            self._notes(key, plot, reasons, known)
        self._fill_table(c)
        note = (
            f"Power assumption: {c.power_assumption}; PUE {c.pue:g}, utilization "
            f"{c.utilization:.0%}, {c.electricity_usd_per_kwh:g} USD/kWh, {c.years:g} years "
            f"(Julian, 8766 h each). Prices as in the catalog; double-click a price to try another "
            f"(* = entered by hand, no cited source)."
        )
        self.power_note.setText(note)
        missing = [f"{name}: {why}" for name, why in zip(c.names, c.missing) if why]
        self.set_message(("\u2014 means unknown. " + "; ".join(missing) + ".") if missing else "")

    def _empty_state(self, key: str, plot: pg.PlotItem, empty: bool) -> None:
        """A chart with no bar to draw says so on its axis instead of numbering an empty 0-1 range."""
        empty_state(plot, empty, label=AXIS_LABELS[key])

    def _pair(self, a: str, b: str, va, vb, y) -> None:
        if not changed(self.bars[a], "data", (va, vb)):
            return
        self.bars[a].setOpts(x0=np.zeros(len(y)), y=y - 0.18, width=np.nan_to_num(va, nan=0.0), height=0.34)
        self.bars[b].setOpts(x0=np.zeros(len(y)), y=y + 0.18, width=np.nan_to_num(vb, nan=0.0), height=0.34)

    def _stack(self, purchase, energy, y) -> None:
        if not changed(self.bars["purchase"], "data", (purchase, energy)):
            return
        self.bars["purchase"].setOpts(x0=np.zeros(len(y)), y=y, width=purchase, height=0.6)
        self.bars["energy"].setOpts(x0=purchase, y=y, width=energy, height=0.6)

    def _notes(self, key: str, plot: pg.PlotItem, reasons: list[str], known: np.ndarray) -> None:
        """Mark a missing bar with "— reason": in the empty slot of a pair, under a partial stack, else in
        its place."""
        if not changed(plot, "notes", (reasons, known)):
            return
        pool = self.notes[key]
        while len(pool) < len(reasons):
            t = PinnedText(color=(120, 120, 120), anchor=(0, 0.5))
            plot.addItem(t, ignoreBounds=True)
            pool.append(t)
        for i, t in enumerate(pool):
            show = i < len(reasons) and bool(reasons[i])
            t.setVisible(show)
            if show:
                self._note_texts[id(t)] = f"{DASH} {_short_reason(reasons[i])}"
                if known.shape[1] == 2 and known[i].any():
                    y = i + 0.18 if known[i, 0] else i - 0.18
                elif key == "tco" and (self.result.energy_cost[i] > 0 or self.result.price[i] > 0):
                    y = i + 0.45
                else:
                    y = i
                t.setPos(0.0, y)
        self._fit_notes(key, plot)

    def _fit_notes(self, key: str, plot: pg.PlotItem) -> None:
        """Each row note elided to its chart's width, whole in its tooltip: a long one ran past the chart's edge."""
        width = plot.vb.width()
        for t in self.notes[key]:
            if t.isVisible():
                t.set_elided(self._note_texts.get(id(t), ""), width)

    def _fill_table(self, c) -> None:
        unsourced = {d.id for d in self.workspace.devices if d.price is not None and d.price.source is None}
        self.table.fill(c, unsourced | set(self.workspace.requirements.price))  # quotes are marked * too

    # -- interaction
    def _price_entered(self, device_id: str, text: str) -> None:
        """A price typed in the table is a purchase quote in the one store (the requirements, saved with the
        project and read by the planner and the report); an empty cell removes the quote."""
        try:
            device = next(d for d in self.workspace.devices if d.id == device_id)
            usd = parse_price(text)
        except (UnitError, ValueError, StopIteration) as exc:
            self.set_message(f"Not applied: {exc}")
            self._fill_table(self.result)  # put the shown price back
            return
        req = set_quote(self.workspace.requirements, device.id, price=usd,
                        source=f"entered in the cost panel on {datetime.date.today().isoformat()}")
        self.workspace.execute(SetRequirements(req, text=f"quote for {device.name}"))

    def _locate(self, x, y):
        if self.result is None:
            return None
        i = round(y)
        return i if 0 <= i < len(self.result.ids) and abs(y - i) <= 0.45 else None

    def _describe(self, i: int, chart: str) -> str:
        c = self.result
        name = c.names[i]
        if chart == "per_tflops":
            return (
                f"{name}: {money(c.price_per_peak[i] * 1e12)} per peak TFLOP/s ({c.precision}, "
                f"peak {si(c.peak[i], 'FLOP/s')}); {money(c.price_per_sustained[i] * 1e12)} per sustained "
                f"TFLOP/s ({si(c.achieved[i], 'FLOP/s')} on this model)"
                + (
                    f"\n{DASH} {c.reason('price_per_sustained', i)}"
                    if c.reason("price_per_sustained", i)
                    else ""
                )
            )
        if chart == "tco":
            return (
                f"{name}: TCO {money(c.tco[i])} over {c.years:g} y = price {money(c.price[i])} + electricity "
                f"{money(c.energy_cost[i])} ({si(c.average_power[i], 'W')} average at the wall, "
                f"{_kwh(c.energy[i])})" + (f"\n{DASH} {c.reason('tco', i)}" if c.reason("tco", i) else "")
            )
        return (
            f"{name}: {money(c.cost_per_million[i])} per million {c.unit}s owned (TCO), "
            f"{money(c.cloud_cost_per_million[i])} rented; "
            f"throughput {c.throughput[i]:.4g} {c.unit}s/s at full use"
            + "".join(
                f"\n{DASH} {r}"
                for r in {c.reason("cost_per_million", i), c.reason("cloud_cost_per_million", i)}
                if r
            )
        )

    def csv_table(self):
        c = self.result
        if c is None:
            return ["device"], []
        cols = columns(c.unit, c.years)
        header = [h.replace("\n", " ") for h, _, _ in cols] + ["missing"]
        rows = [
            [c.names[i], *[float(getattr(c, f)[i]) * s for _, f, s in cols[1:]], c.missing[i] or ""]
            for i in range(len(c.ids))
        ]
        rows.append([])
        rows.append(["power assumption", c.power_assumption])
        return header, rows


AXIS_LABELS = {"per_tflops": "USD per TFLOP/s", "tco": "USD", "million": "USD"}
SHORT_REASONS = {"no list price in the catalog": "no price", "no cloud hourly price": "no cloud price"}


def _short_reason(reason: str) -> str:
    """A compact form for the charts (the full reason is in the tooltip and the table)."""
    return ", ".join(SHORT_REASONS.get(r, r) for r in reason.split("; "))


def _kwh(joules: float) -> str:
    return f"{joules / 3.6e6:,.0f} kWh" if math.isfinite(joules) else f"{DASH} kWh"
