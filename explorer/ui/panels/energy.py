"""Memory-hierarchy energy: where the joules go, per operator (or layer), per device, against the energy ladder.

Draws the session's energy view (``workspace.results.energy``,
:func:`explorer.core.analysis.energy_view.compute_energy_view`): stacked bars per operator of the energy at each
memory level and in arithmetic on the device in focus; the totals per inference (or per token) for every selected
device side by side; the Horowitz ladder (pJ per operation and per 32-bit access, log scale) with the device's own
figures. The device's energy table below is editable (the edit is a what-if on this session's copy of the device)
and shows where each figure comes from.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QFontMetricsF
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
)

from explorer.core.analysis.energy_defaults import DEFAULT_ENERGY_LABEL, default_energy_marks
from explorer.core.analysis.energy_view import with_energy
from explorer.core.units import UnitError, parse_si

from ..plot_items.bars import Bars
from ..plot_items.hatch import HatchOverlay
from ..plot_items.stacked_bars import StackedBars
from .base import AnalysisPanel
from .plotting import (
    BAR_OUTLINE,
    NO_PEN,
    BarPicker,
    changed,
    elide,
    forget,
    name_axis,
    new_plot,
    nice_ceil,
    set_range,
    set_ticks,
    set_title,
    si,
)

LEVEL_COLORS = ("#d62728", "#ff7f0e", "#e7ba52", "#9edae5", "#c5b0d5")  # outermost (off-chip) first
COMPUTE_COLOR = "#1f77b4"
LADDER_BASE = -2.0  # log10 pJ where ladder bars start (0.01 pJ)
DEFAULT_KEY = ("#444444", f"hatched: {DEFAULT_ENERGY_LABEL}")  # the key entry of the hatched (default) segments


@functools.cache
def _brush(color: str) -> QBrush:
    return pg.mkBrush(color)


def level_color(j: int) -> str:
    return LEVEL_COLORS[min(j, len(LEVEL_COLORS) - 1)]


def _ticks(names, limit: int = 40):
    """Every ``step``-th name, so that at most ``limit`` labels are written (the others are in the tooltips)."""
    step = max(1, math.ceil(len(names) / max(1, limit)))
    return [[(i, elide(names[i], 20)) for i in range(0, len(names), step)]]


def label_rows(plot) -> int:
    """How many category labels fit, one above the other, in the plot's height without overlapping (at most
    40): the operators of a transformer block overlapped in a panel of ordinary height."""
    line = QFontMetricsF(plot.getAxis("left").font()).height() * 1.15
    return max(1, min(40, int(plot.vb.height() // line)))


class _Stack(StackedBars):
    """The stacked bars of a plot, drawn again only when their segments or colours change."""

    def __init__(self, plot: pg.PlotItem):
        super().__init__()
        plot.addItem(self, ignoreBounds=True)

    def set(self, segments: np.ndarray, colors: list[str], height: float = 0.7) -> None:
        """``segments`` is (bars, parts) in J; NaN parts draw nothing."""
        if changed(self, "segments", (segments, tuple(colors), height)):
            super().set(segments, colors, height)


class EnergyPanel(AnalysisPanel):
    title = "Memory-hierarchy energy"
    time_model = "none"
    has_device_combo = True
    chart_min_height = 400  # px: two rows of charts

    def build_header(self, header) -> None:
        header.addWidget(QLabel("Bars:"))
        self.grouping = QComboBox()
        self.grouping.addItems(["per operator", "per layer"])
        self.grouping.setToolTip("One bar per executed operator, or per top-level layer of the builder")
        self.grouping.currentIndexChanged.connect(lambda _i: self.schedule(full=True))
        header.addWidget(self.grouping)

    def build(self, layout) -> None:
        self.view = None
        self.apply_device_edit = None  # optional hook (e.g. the catalog); default: workspace.put_devices
        g = self.graphics
        self.per_layer = new_plot("Energy per operator (J per pass, repeats included)")
        self.per_layer.setLabel("bottom", "energy", units="J")
        self.per_layer.vb.invertY(True)
        g.addItem(self.per_layer, row=0, col=0, colspan=2)
        self.totals = new_plot("Energy per inference, by device")
        self.totals.setLabel("bottom", "energy", units="J")
        self.totals.vb.invertY(True)
        g.addItem(self.totals, row=1, col=0)
        self.ladder = new_plot("Energy ladder: Horowitz (grey), \u25b8 this device")
        self.ladder.getAxis("bottom").setLogMode(True)
        self.ladder.getAxis("bottom").enableAutoSIPrefix(False)
        self.ladder.setLabel("bottom", "pJ per operation or per 32-bit access")
        self.ladder.vb.invertY(True)
        g.addItem(self.ladder, row=1, col=1)
        name_axis(self.per_layer, 130)
        name_axis(self.totals, 165)
        name_axis(self.ladder, 175)
        # even, not 3:2: the ladder's eight names overlapped in the lower row of a panel of the default height (the
        # operators' names above are thinned to those that fit, the rest in the tooltips)
        g.ci.layout.setRowStretchFactor(0, 1)
        g.ci.layout.setRowStretchFactor(1, 1)
        self.layer_stack = _Stack(self.per_layer)
        self.total_stack = _Stack(self.totals)
        self.layer_hatch = HatchOverlay(self.layer_stack)  # the segments whose energies are defaults (issue 23)
        self.per_layer.addItem(self.layer_hatch, ignoreBounds=True)
        self.total_hatch = HatchOverlay(self.total_stack)
        self.totals.addItem(self.total_hatch, ignoreBounds=True)
        self.marks = np.zeros((0, 0), dtype=bool)
        self.ladder_bars = Bars(x0=[], y=[], width=[], height=0.7)
        self.ladder.addItem(self.ladder_bars)
        self.focus_bars = Bars(x0=[], y=[], width=[], height=0.9, brush=None, pen=BAR_OUTLINE)
        self.focus_bars.setZValue(10)
        self.per_layer.addItem(self.focus_bars)
        BarPicker(self.per_layer, self._locate_bar, self._describe_bar, self._pick_bar)
        self.per_layer.vb.sigResized.connect(self._relabel)  # a taller or shorter plot fits more or fewer names
        BarPicker(
            self.totals,
            lambda x, y: self._index_at(y, len(self.view.device_ids) if self.view else 0),
            self._describe_device,
        )
        BarPicker(
            self.ladder, lambda x, y: self._index_at(y, len(self._ladder_entries)), self._describe_ladder
        )
        self._ladder_entries = ()
        self.table = QTableWidget(0, 4)
        self.table.setHorizontalHeaderLabels(["Figure", "Energy (double-click to edit)", "Unit", "Source"])
        self.table.horizontalHeader().setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(
            QAbstractItemView.EditTrigger.DoubleClicked | QAbstractItemView.EditTrigger.EditKeyPressed
        )
        self.table.setMaximumHeight(150)
        self.table.itemChanged.connect(self._table_edited)
        layout.addWidget(self.table)

    # -- drawing
    def _relabel(self, *_args) -> None:
        if self.view is not None:
            set_ticks(self.per_layer.getAxis("left"), _ticks(self._bars()[0], label_rows(self.per_layer)))

    def _bars(self):
        v = self.view
        if self.grouping.currentText() == "per layer":
            return v.layer_names, np.column_stack([v.layer_levels, v.layer_compute])
        return v.row_names, np.column_stack([v.row_levels, v.row_compute])

    def redraw(self, analysis) -> None:
        d = self.device_index(analysis)
        if d < 0:
            self.view = None
            self.layer_stack.set(np.zeros((0, 0)), [])
            self.total_stack.set(np.zeros((0, 0)), [])
            self.layer_hatch.set(np.zeros((0, 0)))
            self.total_hatch.set(np.zeros((0, 0)))
            self.ladder_bars.setOpts(x0=[], y=[], width=[])
            self.focus_bars.setOpts(x0=[], y=[], width=[])
            forget(self.focus_bars)
            self.table.setRowCount(0)
            self.set_message("Select one or more devices to see where the energy goes.")
            return
        v = self.view = self.workspace.results.energy(d, self.workspace.focused_layer)
        names, segments = self._bars()
        colors = [level_color(j) for j in range(len(v.level_names))] + [COMPUTE_COLOR]
        self.layer_stack.set(segments, colors)
        marks = self.marks = default_energy_marks(analysis.devices)
        mine = np.r_[marks[d, : len(v.level_names)], marks[d, -1:]]
        self.layer_hatch.set(np.broadcast_to(mine, segments.shape))
        set_ticks(self.per_layer.getAxis("left"), _ticks(names, label_rows(self.per_layer)))
        # no precision in the key (the ladder and the table name it): a precision change keeps the title as set
        key = [(level_color(j), n) for j, n in enumerate(v.level_names)] + [(COMPUTE_COLOR, "arithmetic (MACs)")]
        key += [DEFAULT_KEY] if mine.any() else []
        set_title(
            self.per_layer,
            f"Energy {self.grouping.currentText()} on {v.device_name} "
            f"(J per pass of batch {analysis.ctx.batch}, repeats included)",
            key,
        )
        set_range(
            self.per_layer,
            (0, nice_ceil(float(np.nansum(segments, axis=1).max(initial=0.0)))),
            (-0.6, max(len(names), 1) - 0.4),
        )
        depth = v.device_levels.shape[1]
        totals = np.column_stack([v.device_levels, v.device_compute])
        self.total_stack.set(totals, [level_color(j) for j in range(depth)] + [COMPUTE_COLOR], height=0.6)
        self.total_hatch.set(marks)
        set_ticks(self.totals.getAxis("left"), [[(i, elide(n, 24)) for i, n in enumerate(v.device_names)]])
        set_title(self.totals, f"Energy per {v.unit}, by device", [DEFAULT_KEY] if marks.any() else [])
        set_range(
            self.totals,
            (0, nice_ceil(float(np.nanmax(v.device_total, initial=0.0)))),
            (-0.6, max(len(v.device_names), 1) - 0.4),
        )
        self._draw_ladder(v)
        self._fill_table(v)
        self.redraw_focus(analysis)
        defaults = [r.label for r in v.table if r.is_default]
        self.set_message(
            (f"Defaults applied on {v.device_name}: " + ", ".join(defaults) + " (see Source). ")
            if defaults
            else ""
        )

    def _draw_ladder(self, v) -> None:
        if not changed(self.ladder, "entries", (v.device_ladder, v.device_name)):
            return
        entries = self._ladder_entries = tuple(v.ladder) + tuple(v.device_ladder)
        logs = np.log10([e.energy * 1e12 for e in entries])
        own_levels = [e for e in v.device_ladder if e.per != "MAC"]
        brushes = [_brush("#9e9e9e")] * len(v.ladder) + [
            _brush(COMPUTE_COLOR if e.per == "MAC" else level_color(own_levels.index(e))) for e in v.device_ladder
        ]
        self.ladder_bars.setOpts(
            x0=np.full(len(entries), LADDER_BASE),
            y=np.arange(len(entries)),
            width=logs - LADDER_BASE,
            height=0.7,
            brushes=brushes,
            pen=NO_PEN,
        )
        labels = [
            e.label if i < len(v.ladder) else f"\u25b8 {elide(e.label, 17)}" for i, e in enumerate(entries)
        ]
        set_ticks(self.ladder.getAxis("left"), [[(i, t) for i, t in enumerate(labels)]])
        set_range(
            self.ladder,
            (LADDER_BASE, max(3.0, float(np.nanmax(logs, initial=0.0)) + 0.2)),
            (-0.7, len(entries) - 0.2),
        )

    def _fill_table(self, v, force: bool = False) -> None:
        if not changed(self.table, "rows", v.table) and not force:
            return
        self.table.blockSignals(True)
        resized, widen = self.table.rowCount() != len(v.table), False
        self.table.setRowCount(len(v.table))
        for i, row in enumerate(v.table):
            shown = f"{row.value * 1e12:.4g} " + ("pJ/B" if row.unit == "J/B" else "pJ")
            cells = [row.label, shown, "pJ per byte" if row.unit == "J/B" else "pJ per MAC", row.source]
            for c, text in enumerate(cells):
                item = self.table.item(i, c)
                if item is None:  # cells are created once and updated in place (setItem re-lays out the view)
                    item = QTableWidgetItem(text)
                    if c != 1:
                        item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
                    self.table.setItem(i, c, item)
                    resized = True
                elif item.text() != text:
                    item.setText(text)
                    widen = widen or c == 0  # a new figure name may need a wider column; values do not
                if item.data(Qt.ItemDataRole.UserRole) != row.key:
                    item.setData(Qt.ItemDataRole.UserRole, row.key)
                if item.toolTip() != row.source:
                    item.setToolTip(row.source)
        if resized:
            self.table.resizeColumnsToContents()
        elif widen:
            self.table.resizeColumnToContents(0)
        self.table.blockSignals(False)

    def redraw_focus(self, analysis) -> None:
        v = self.view
        if v is None:
            return
        names, segments = self._bars()
        if self.grouping.currentText() == "per layer":
            focused = np.arange(len(names)) == self.workspace.focused_layer
        else:
            focused = v.row_layer == self.workspace.focused_layer
        idx = np.flatnonzero(focused)
        if not changed(self.focus_bars, "focus", (idx, segments[idx])):
            return
        self.focus_bars.setOpts(
            x0=np.zeros(len(idx)),
            y=idx.astype(float),
            width=np.nansum(segments[idx], axis=1),
            height=0.9,
            brush=None,
            pen=BAR_OUTLINE,
        )

    # -- interaction
    @staticmethod
    def _index_at(y: float, n: int):
        i = round(y)
        return i if 0 <= i < n and abs(y - i) <= 0.4 else None

    def _locate_bar(self, x, y):
        if self.view is None:
            return None
        return self._index_at(y, len(self._bars()[0]))

    def _describe_bar(self, i) -> str:
        v = self.view
        names, segments = self._bars()
        parts = [f"{n}: {si(e, 'J')}" for n, e in zip(v.level_names, segments[i, :-1])]
        parts.append(f"arithmetic: {si(segments[i, -1], 'J')}")
        return (
            f"{names[i]} on {v.device_name}\n"
            + "\n".join(parts)
            + f"\ntotal {si(np.nansum(segments[i]), 'J')}"
        )

    def _pick_bar(self, i) -> None:
        v = self.view
        layer = i if self.grouping.currentText() == "per layer" else int(v.row_layer[i])
        self.workspace.focus_layer(layer)

    def _describe_device(self, i) -> str:
        v = self.view
        marks = self.marks[i] if i < len(self.marks) else np.zeros(len(v.device_level_names[i]) + 1, bool)
        tag = " (default)"
        parts = [f"{n}: {si(e, 'J')}{tag if m else ''}"
                 for n, e, m in zip(v.device_level_names[i], v.device_levels[i], marks)]
        parts.append(f"arithmetic: {si(v.device_compute[i], 'J')}{tag if marks[-1] else ''}")
        note = f"\nhatched parts: {DEFAULT_ENERGY_LABEL}, not this device's own figures" if marks.any() else ""
        return (
            f"{v.device_names[i]}, per {v.unit}\n"
            + "\n".join(parts)
            + f"\ntotal {si(v.device_total[i], 'J')}"
            + note
        )

    def _describe_ladder(self, i) -> str:
        e = self._ladder_entries[i]
        if i < len(self.view.ladder):
            return f"{e.label}: {e.energy * 1e12:.3g} pJ per {e.per}\n({self.view.ladder_source})"
        return (
            f"{self.view.device_name}, {e.label}: {e.energy * 1e12:.3g} pJ per {e.per}\n"
            "(this device's energy table, below)"
        )

    def _table_edited(self, item: QTableWidgetItem) -> None:
        v = self.view
        if v is None or item.column() != 1:
            return
        key = item.data(Qt.ItemDataRole.UserRole)
        kind = "energy" if key == "mac" else "energy_per_byte"
        text = item.text()
        try:
            value = parse_si(text, kind, "energy")
            device = next(d for d in self.workspace.devices if d.id == v.device_id)
            edited = with_energy(device, key, value, v.precision)
        except (UnitError, ValueError) as exc:
            self.set_message(f"Not applied: {exc}")
            self._fill_table(v, force=True)
            return
        (self.apply_device_edit or (lambda dev: self.workspace.put_devices([dev])))(edited)

    def csv_table(self):
        v = self.view
        if v is None:
            return ["operator"], []
        names, segments = self._bars()
        header = ["name"] + [f"{n} (J)" for n in v.level_names] + ["arithmetic (J)", "total (J)", "device"]
        rows = [
            [names[i], *map(float, segments[i]), float(np.nansum(segments[i])), v.device_name]
            for i in range(len(names))
        ]
        rows.append([])
        rows.append(["device", f"total per {v.unit} (J)", f"arithmetic per {v.unit} (J)"])
        rows.extend(
            [[n, float(t), float(c)] for n, t, c in zip(v.device_names, v.device_total, v.device_compute)]
        )
        rows.append([])
        rows.append(["figure", "value", "unit", "source"])
        rows.extend([[r.label, r.value, r.unit, r.source] for r in v.table])
        return header, rows
