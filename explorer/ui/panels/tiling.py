"""Tiling fringe tax: how much of the matrix engine a GEMM keeps busy, and what padding or reshaping would
buy.

Draws :func:`explorer.core.analysis.tiling_view.compute_tiling_view` for the selected layer's GEMM on the
device in focus: the mapping efficiency as one dimension sweeps four multiples of the array (or tile), with
the cliff just past each multiple, the current value marked and the loss shaded; the array with the last
(fringe) fold's idle PEs; the efficiency of every GEMM in the model; and the padding / reshaping suggestion
with the time each choice costs.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QLabel

from explorer.core.analysis.tiling_view import default_row

from ..plot_items.bars import Bars
from .base import AnalysisPanel
from .plotting import (
    BAR_OUTLINE,
    NO_PEN,
    BarPicker,
    cached,
    changed,
    elide,
    empty_state,
    forget,
    name_axis,
    new_plot,
    opaque,
    set_range,
    set_ticks,
    set_title,
    si,
)

ACTIVE = (44, 160, 44)
IDLE = (244, 180, 180)
BAR = "#9e9e9e"
CURRENT = "#ff7f0e"
BOTH = ("bottom", "left")


class TilingPanel(AnalysisPanel):
    title = "Tiling fringe tax"
    time_model = "ideal"
    has_device_combo = True
    chart_min_height = 400  # px: two rows of charts

    def build_header(self, header) -> None:
        header.addWidget(QLabel("GEMM:"))
        self.operator = QComboBox()
        self.operator.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.operator.setToolTip("Which matrix multiplication of the selected layer to study")
        self.operator.activated.connect(self._operator_chosen)
        header.addWidget(self.operator)
        header.addWidget(QLabel("Sweep:"))
        self.sweep = QComboBox()
        self.sweep.addItems(["auto", "M", "N", "K"])
        self.sweep.setToolTip("GEMM dimension to sweep (auto: the one the array maps worse)")
        self.sweep.currentIndexChanged.connect(lambda _i: self.schedule(full=True))
        header.addWidget(self.sweep)

    def build(self, layout) -> None:
        self.view = None
        self._view_inputs = None  # what self.view was computed from (see _tiling_view)
        self._row_choice = -1  # an explicit GEMM row, or -1 for the default of the focused layer
        g = self.graphics
        p = self.sweep_plot = new_plot("Mapping efficiency")
        p.setLabel("left", "mapping efficiency (%)")
        p.vb.disableAutoRange()
        g.addItem(p, row=0, col=0, colspan=2)
        self.curve = pg.PlotDataItem(
            pen=pg.mkPen("#1f77b4", width=1.5),
            fillLevel=100.0,
            fillBrush=pg.mkBrush(*opaque((214, 39, 40), 0.24)),
        )
        p.addItem(self.curve)
        self.cliffs: list[pg.InfiniteLine] = []
        self.current_line = pg.InfiniteLine(angle=90, pen=pg.mkPen(CURRENT, width=2))
        p.addItem(self.current_line)
        self.current_point = pg.PlotDataItem(pen=None, symbol="o", symbolSize=9, symbolBrush=CURRENT)
        p.addItem(self.current_point)
        self.current_label = pg.TextItem(color=CURRENT, anchor=(0, 1))
        p.addItem(self.current_label)
        self.loss_label = pg.TextItem("shaded: fringe loss", color=(214, 39, 40), anchor=(1, 1))
        p.addItem(self.loss_label)
        f = self.fold_plot = new_plot("Last (fringe) fold")
        f.vb.setAspectLocked(True)
        f.vb.invertY(True)
        f.setMouseEnabled(False, False)
        g.addItem(f, row=1, col=0)
        self.fold_image = pg.ImageItem(axisOrder="row-major")
        f.addItem(self.fold_image)
        b = self.bars_plot = new_plot("Mapping efficiency of every GEMM (%)")
        b.vb.invertY(True)
        b.setLabel("bottom", "mapping efficiency (%)")
        g.addItem(b, row=1, col=1)
        name_axis(b, 130)
        g.ci.layout.setRowStretchFactor(0, 1)
        g.ci.layout.setRowStretchFactor(1, 1)
        g.ci.layout.setColumnStretchFactor(0, 2)
        g.ci.layout.setColumnStretchFactor(1, 3)
        self.bars = Bars(x0=[], y=[], width=[], height=0.7)
        b.addItem(self.bars)
        self.focus_bars = Bars(
            x0=[], y=[], width=[], height=0.9, brush=None, pen=BAR_OUTLINE
        )
        self.focus_bars.setZValue(10)
        b.addItem(self.focus_bars)
        # redrawn only when the studied GEMM or the device changes: painted from pixmaps in between (the filled
        # curve, the scaled image and the many bars are slow to paint in software)
        for item in (self.curve.curve, self.fold_image, self.bars):
            cached(item)
        BarPicker(p, self._locate_sweep, self._describe_sweep)
        BarPicker(b, self._locate_bar, self._describe_bar, self._pick_bar)
        BarPicker(f, self._locate_pe, self._describe_pe)

    # -- choosing the row
    def current_row(self, analysis, d: int) -> int:
        table = analysis.table
        layer = self.workspace.focused_layer
        choice = self._row_choice
        if (
            0 <= choice < len(table)
            and table.gemm_count[choice] > 0
            and (layer < 0 or table.layer_index[choice] == layer)
        ):
            return choice
        self._row_choice = -1
        return default_row(analysis, layer, d)

    def _fill_operators(self, analysis, row: int) -> None:
        table = analysis.table
        layer = self.workspace.focused_layer
        rows = np.flatnonzero((table.gemm_count > 0) & ((table.layer_index == layer) if layer >= 0 else True))
        gemms = table.gemm[rows].astype(int).tolist()
        items = [(f"{table.names[r]}  (M {m}, N {n}, K {k})", int(r)) for r, (m, n, k) in zip(rows, gemms)]
        self.operator.blockSignals(True)
        if changed(self.operator, "items", items):  # refilling re-lays out the header: only when they change
            self.operator.clear()
            for text, r in items:
                self.operator.addItem(text, r)
        index = int(np.flatnonzero(rows == row)[0]) if row in rows else -1
        if self.operator.currentIndex() != index:
            self.operator.setCurrentIndex(index)
        self.operator.blockSignals(False)

    def _operator_chosen(self, index: int) -> None:
        row = self.operator.itemData(index)
        if row is not None:
            self._row_choice = int(row)
            self.schedule(full=True)

    # -- drawing
    def redraw(self, analysis) -> None:
        d = self.device_index(analysis)
        if d < 0:
            self.view = None
            self._clear("nothing to plot: no device selected")
            self.set_message(
                "Select one or more devices to see how the layers map onto their matrix engines."
            )
            return
        row = self.current_row(analysis, d)
        self._fill_operators(analysis, row)
        sweep = self.sweep.currentText()
        v = self.view = self._tiling_view(analysis, row, d, None if sweep == "auto" else sweep)
        self._draw_bars(v)
        if v.missing:
            self._clear(f"nothing to plot: {v.missing}", keep_bars=True)
            self.set_message(f"{v.device_name}: {v.missing}.")
            return
        self._draw_sweep(v)
        self._draw_fold(v)
        # plain text: a rich-text label lays its text out twice per change (its document asks for a second
        # paint), and names need no escaping
        self.set_message(
            f"{v.row_name} on {v.device_name}: {v.suggestion}\n{v.note}. Times re-evaluate this GEMM with its "
            f"operands scaled to the new size (an estimate)."
        )

    def _tiling_view(self, analysis, row: int, d: int, sweep: str | None):
        """``compute_tiling_view``, or the last view when none of its inputs changed (checking another device
        leaves the device in focus, and so this view, as it was)."""
        inputs = (analysis.table, analysis.devices.devices[d], analysis.devices.precision, analysis.ctx, row, d,
                  sweep)
        last = self._view_inputs
        if self.view is None or last is None or any(a is not b and a != b for a, b in zip(inputs, last)):
            self.view = self.workspace.results.tiling(row, d, sweep)
            self._view_inputs = inputs
        return self.view

    def _clear(self, why: str, keep_bars: bool = False) -> None:
        """Empty charts that say ``why`` on their axes instead of numbering an empty 0-1 range."""
        for plot in (self.sweep_plot, self.fold_plot, *(() if keep_bars else (self.bars_plot,))):
            plot.__dict__.get("_last_keys", {}).pop("label", None)  # labelled again when it has something to draw
            empty_state(plot, True, why, sides=BOTH)
        self.curve.setData([], [])
        self.current_point.setData([], [])
        self.current_label.setText("")
        self.current_line.setVisible(False)
        for line in self.cliffs:
            line.setVisible(False)
        self.fold_image.clear()
        for item in (self.curve, self.fold_image, self.bars):
            forget(item)
        set_title(self.fold_plot, "Last (fringe) fold")
        if not keep_bars:
            self.bars.setOpts(x0=[], y=[], width=[])
            self.focus_bars.setOpts(x0=[], y=[], width=[])
            forget(self.focus_bars)  # drawn again when bars come back

    def _draw_sweep(self, v) -> None:
        x, y = v.sweep_values, v.sweep_efficiency * 100
        if not changed(self.curve, "data", (x, y, v.current_value, v.row_name, v.gemm, v.gemm_count)):
            return
        self.curve.setData(x, y)
        empty_state(self.sweep_plot, False, sides=BOTH)
        set_range(self.sweep_plot, (x[0], x[-1]), (0, 112))
        if changed(self.sweep_plot, "label", (v.sweep_dim, v.multiple)):
            self.sweep_plot.setLabel(
                "bottom", f"{v.sweep_dim} (the GEMM dimension swept; multiples of {v.multiple})"
            )
        set_title(
            self.sweep_plot,
            f"Mapping efficiency of {v.row_name} as {v.sweep_dim} varies "
            f"(M {v.gemm[0]}, N {v.gemm[1]}, K {v.gemm[2]}, x{v.gemm_count})",
        )
        while len(self.cliffs) < len(v.cliffs):
            line = pg.InfiniteLine(
                angle=90, pen=pg.mkPen((120, 120, 120), width=1, style=Qt.PenStyle.DashLine)
            )
            self.sweep_plot.addItem(line)
            self.cliffs.append(line)
        for i, line in enumerate(self.cliffs):
            line.setVisible(i < len(v.cliffs))
            if i < len(v.cliffs):
                line.setValue(float(v.cliffs[i]))
        self.current_line.setValue(v.current_value)
        self.current_line.setVisible(True)
        self.current_point.setData([v.current_value], [v.current_efficiency * 100])
        self.current_label.setText(f" {v.sweep_dim} = {v.current_value}: {v.current_efficiency:.1%}")
        self.current_label.setPos(v.current_value, min(v.current_efficiency * 100 + 3, 100))
        self.loss_label.setPos(x[-1], 100)

    def _draw_fold(self, v) -> None:
        rows, cols = v.array
        if not changed(self.fold_image, "fold", (v.array, v.fringe_active, v.folds, v.rows_dim, v.cols_dim)):
            return
        image = np.empty((rows, cols, 3), dtype=np.uint8)
        image[:] = IDLE
        image[: v.fringe_active[0], : v.fringe_active[1]] = ACTIVE
        self.fold_image.setImage(image, autoLevels=False, levels=(0, 255))
        empty_state(self.fold_plot, False, sides=BOTH)
        set_range(self.fold_plot, (0, cols), (0, rows), padding=0.02)
        what = "array" if v.engine == "systolic" else "thread-block tile"
        set_title(
            self.fold_plot,
            f"Last fold of {v.folds[0]}x{v.folds[1]}: {v.fringe_active[0]}x{v.fringe_active[1]} "
            f"of {rows}x{cols} active, {v.idle_pes} idle",
        )
        self.fold_plot.setLabel("left", f"{what} rows \u2190 {v.rows_dim}")
        self.fold_plot.setLabel("bottom", f"{what} columns \u2190 {v.cols_dim}")

    def _draw_bars(self, v) -> None:
        n = len(v.gemm_rows)
        if not changed(self.bars, "data", (v.gemm_rows, v.gemm_efficiency, v.row, v.device_id)):
            self.redraw_focus(None)
            return
        # without the device's matrix engine the analysis counts every GEMM as fully mapped: not a figure to draw
        eff = np.zeros(n) if v.missing else np.nan_to_num(v.gemm_efficiency, nan=0.0) * 100
        brushes = [CURRENT if r == v.row else BAR for r in v.gemm_rows]
        self.bars.setOpts(
            x0=np.zeros(n),
            y=np.arange(n, dtype=float),
            width=eff,
            height=0.7,
            brushes=brushes,
            pen=NO_PEN,
        )
        step = max(1, int(np.ceil(n / 30)))
        set_ticks(
            self.bars_plot.getAxis("left"), [[(i, elide(v.gemm_names[i], 20)) for i in range(0, n, step)]]
        )
        set_range(self.bars_plot, (0, 100), (-0.6, max(n, 1) - 0.4))
        empty = bool(v.missing) or not np.isfinite(v.gemm_efficiency).any()
        empty_state(self.bars_plot, empty, f"nothing to plot: {v.missing}" if v.missing else "nothing to plot",
                    "mapping efficiency (%)", sides=("bottom",))
        set_title(self.bars_plot, f"Mapping efficiency of every GEMM on {v.device_name} (%)")
        self.redraw_focus(None)

    def redraw_focus(self, analysis) -> None:
        v = self.view
        if v is None:
            return
        if analysis is not None:  # the layer in focus changed: its GEMM is studied now
            self.redraw(analysis)
            return
        idx = np.flatnonzero(v.gemm_layer == self.workspace.focused_layer)
        eff = np.zeros(len(idx)) if v.missing else np.nan_to_num(v.gemm_efficiency[idx], nan=0.0) * 100
        if not changed(self.focus_bars, "focus", (idx, eff)):
            return  # the same outline: nothing to repaint
        self.focus_bars.setOpts(
            x0=np.zeros(len(idx)),
            y=idx.astype(float),
            width=eff,
            height=0.9,
            brush=None,
            pen=BAR_OUTLINE,
        )

    # -- hover and click
    def _locate_sweep(self, x, y):
        v = self.view
        if v is None or not len(v.sweep_values):
            return None
        i = round(x - v.sweep_values[0])
        return i if 0 <= i < len(v.sweep_values) else None

    def _describe_sweep(self, i) -> str:
        v = self.view
        value, eff = int(v.sweep_values[i]), v.sweep_efficiency[i]
        return f"{v.sweep_dim} = {value}: mapping efficiency {eff:.1%} (fringe tax {1 - eff:.1%})"

    def _locate_bar(self, x, y):
        v = self.view
        if v is None:
            return None
        i = round(y)
        return i if 0 <= i < len(v.gemm_rows) and abs(y - i) <= 0.4 else None

    def _describe_bar(self, i) -> str:
        v = self.view
        return (
            f"{v.gemm_names[i]} (layer {int(v.gemm_layer[i]) + 1}): "
            f"mapping efficiency {v.gemm_efficiency[i]:.1%}, "
            f"time {si(v.gemm_time[i], 's')} on {v.device_name}"
        )

    def _pick_bar(self, i) -> None:
        v = self.view
        self._row_choice = int(v.gemm_rows[i])
        if self.workspace.focused_layer == int(v.gemm_layer[i]):
            self.schedule(full=True)
        self.workspace.focus_layer(int(v.gemm_layer[i]))

    def _locate_pe(self, x, y):
        v = self.view
        if v is None or v.missing:
            return None
        r, c = int(y), int(x)
        return (r, c) if 0 <= r < v.array[0] and 0 <= c < v.array[1] else None

    def _describe_pe(self, rc) -> str:
        v = self.view
        r, c = rc
        active = r < v.fringe_active[0] and c < v.fringe_active[1]
        return (
            f"PE row {r}, column {c}: {'active' if active else 'idle'} in the last fold\n"
            f"{v.idle_pes} of {v.array[0] * v.array[1]} PEs idle there"
        )

    def csv_table(self):
        v = self.view
        header = ["GEMM", "layer", "mapping efficiency", "time (s)", "device"]
        if v is None:
            return header, []
        rows = [
            [
                v.gemm_names[i],
                int(v.gemm_layer[i]) + 1,
                float(v.gemm_efficiency[i]),
                float(v.gemm_time[i]),
                v.device_name,
            ]
            for i in range(len(v.gemm_rows))
        ]
        if not v.missing:
            rows.append([])
            rows.append([f"{v.sweep_dim} (swept)", "mapping efficiency"])
            rows.extend([[int(x), float(e)] for x, e in zip(v.sweep_values, v.sweep_efficiency)])
            rows.append([])
            rows.append(["option", "value", "mapping efficiency", "time (s)", "change (s)", "work ratio"])
            rows.extend(
                [[o.action, o.value, o.efficiency, o.time, o.delta_time, o.work_ratio] for o in v.options]
            )
        return header, rows
