"""Fidelity: predicted against measured time per kernel of the imported trace, ideal and calibrated side by side.

Draws ``workspace.results.fidelity`` (:func:`explorer.core.analysis.fidelity.trace_fidelity`): a log-log scatter of
each kernel's measured time (x) against the time the model predicts for the operator it matches (y), the ideal
model as hollow grey circles and the calibrated one as filled dots, with the diagonal (a perfect prediction) and
+-20 % lines; below, the MAPE of each model and the kernels with the largest calibrated error, with their
operators' shapes. Hover a point for its numbers with units. The view only maps the core's numbers.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QLabel, QTableWidget, QTableWidgetItem

from explorer.core.session.named_calibrations import catalog_calibration_text

from .base import AnalysisPanel
from .calibration_chooser import CalibrationChooser
from .plotting import BarPicker, changed, new_plot, set_range, set_title, si

IDEAL_COLOR = "#7f7f7f"
CALIBRATED_COLOR = "#1f77b4"
WORST = 10
COLUMNS = ("kernel", "operator", "shape", "measured (\u00b5s)", "ideal (\u00b5s)", "ideal error (%)",
           "calibrated (\u00b5s)", "calibrated error (%)")


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.2f}" if math.isfinite(seconds) else "\u2014"


def _pct(x: float) -> str:
    return f"{x * 100:+.1f}" if math.isfinite(x) else "\u2014"


class FidelityPanel(AnalysisPanel):
    title = "Fidelity"
    time_model = "both"
    has_device_combo = True
    chart_min_height = 320

    def build_header(self, header) -> None:
        self.chooser = CalibrationChooser(self.workspace)
        header.addWidget(self.chooser)

    def build(self, layout) -> None:
        self.result = None
        plot = self.plot = new_plot("Predicted against measured time per kernel", log_x=True, log_y=True)
        plot.setLabel("bottom", "measured time per kernel", units="s")
        plot.setLabel("left", "predicted time per kernel", units="s")
        self.graphics.addItem(plot, row=0, col=0)
        dash = pg.mkPen("#444444", width=1, style=Qt.PenStyle.DashLine)
        self.diagonal = pg.PlotDataItem(pen=dash)
        self.band = [pg.PlotDataItem(pen=pg.mkPen("#bbbbbb", width=1, style=Qt.PenStyle.DotLine)) for _ in range(2)]
        self.ideal = pg.PlotDataItem(pen=None, symbol="o", symbolSize=8, symbolBrush=None,
                                     symbolPen=pg.mkPen(IDEAL_COLOR, width=1.3))
        self.calibrated = pg.PlotDataItem(pen=None, symbol="o", symbolSize=7, symbolPen=None,
                                          symbolBrush=pg.mkBrush(CALIBRATED_COLOR))
        for item in (self.diagonal, *self.band, self.ideal, self.calibrated):
            plot.addItem(item)
        BarPicker(plot, self._hover_key, self.describe_hover)
        self.in_use = QLabel()  # which calibration the calibrated model uses on the device shown
        self.in_use.setObjectName("calibration_in_use")
        self.in_use.setWordWrap(True)
        layout.insertWidget(0, self.in_use)  # above the chart: seen without scrolling
        self.summary = QLabel()
        self.summary.setObjectName("fidelity_summary")
        self.summary.setWordWrap(True)
        layout.addWidget(self.summary)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.setToolTip("The kernels with the largest calibrated error (error = predicted / measured - 1)")
        self.table.setMinimumHeight(180)
        layout.addWidget(self.table)

    # -- drawing
    def calibration_text(self, analysis, d: int) -> str:
        """``Calibrated model on H100 SXM5: 'cluster A' (fit-cluster-a): 24 kernels of ...``: the one in use."""
        if d < 0:
            return ""
        device = analysis.devices.devices[d]
        used = self.workspace.used_calibration(device.id)
        if used is not None:
            return f"Calibration in use on {device.name}: {used.describe()}."
        base = self.workspace.catalog_device(device.id) or device
        missing = self.workspace.missing_calibration(device.id)
        lost = f" (the project names '{missing}', which this catalog does not hold)" if missing else ""
        return f"Calibration in use on {device.name}: {catalog_calibration_text(base)}{lost}."

    def redraw(self, analysis) -> None:
        d = self.device_index(analysis)
        text = self.calibration_text(analysis, d)
        if changed(self.in_use, "text", text):
            self.in_use.setText(text)
        f = self.result = self.workspace.results.fidelity(max(d, 0)) if d >= 0 else None
        if f is None or not len(f):
            for item in (self.diagonal, *self.band, self.ideal, self.calibrated):
                item.setData([], [])
            self.table.setRowCount(0)
            self.summary.setText("")
            if d < 0:
                self.set_message("Select one or more devices to compare their predictions with measured kernels.")
            elif f is None:
                self.set_message("Import a trace (File \u2192 Import Trace) to compare each measured kernel with "
                                 "the time the model predicts for it.")
            else:
                self.set_message(f"No kernel to compare: {f.note or 'none matches a model operator'}.")
            return
        if changed(self, "points", (f.measured, f.ideal, f.calibrated)):
            lo, hi = f.range
            lo, hi = 10 ** math.floor(math.log10(lo / 1.5)), 10 ** math.ceil(math.log10(hi * 1.5))
            line = np.array([lo, hi])
            self.diagonal.setData(line, line)
            self.band[0].setData(line, line * 1.2)
            self.band[1].setData(line, line / 1.2)
            self.ideal.setData(f.measured, f.ideal)
            self.calibrated.setData(f.measured, f.calibrated)
            set_range(self.plot, (math.log10(lo), math.log10(hi)), (math.log10(lo), math.log10(hi)))
        set_title(self.plot, f"Predicted against measured time per kernel on {f.device_name} (dashed: equal; "
                             "dotted: \u00b120 %)",
                  [(IDEAL_COLOR, "ideal model"), (CALIBRATED_COLOR, "calibrated model")])
        uncal = int((~f.is_calibrated).sum())
        self.summary.setText(
            f"{len(f)} kernels. MAPE: ideal {f.mape('ideal') * 100:.1f} %, calibrated "
            f"{f.mape('calibrated') * 100:.1f} %."
            + (f" {uncal} kernels' kind of work has no curve on {f.device_name}: their calibrated time is the "
               "ideal one." if uncal else ""))
        self._fill_table(f)
        self.set_message(f.note + "." if f.note else "")

    def _fill_table(self, f) -> None:
        worst = f.worst("calibrated", WORST)
        e_i, e_c = f.error("ideal"), f.error("calibrated")
        self.table.setRowCount(len(worst))
        for r, i in enumerate(worst):
            cells = (f.names[i], f.layers[i], f.shapes[i], _us(f.measured[i]), _us(f.ideal[i]), _pct(e_i[i]),
                     _us(f.calibrated[i]), _pct(e_c[i]))
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if c >= 3:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(r, c, item)

    # -- hover
    def _hover_key(self, x: float, y: float):
        """The kernel nearest the cursor (view coordinates: log10 s) within 2 % of the axes' span, as
        (model, index)."""
        f = self.result
        if f is None or not len(f):
            return None
        (x0, x1), (y0, y1) = self.plot.vb.viewRange()
        tol = 0.02 * max(x1 - x0, y1 - y0)
        best, key = tol, None
        lx = np.log10(f.measured)
        for model in ("calibrated", "ideal"):  # the calibrated dots are drawn on top
            dist = np.hypot(lx - x, np.log10(f.predicted(model)) - y)
            i = int(np.argmin(dist))
            if dist[i] < best:
                best, key = float(dist[i]), (model, i)
        return key

    def describe_hover(self, key) -> str:
        f = self.result
        if f is None or key is None:
            return ""
        model, i = key
        e = f.error(model)[i]
        return (f"{f.names[i]} \u2192 {f.layers[i]} ({f.shapes[i]})\n"
                f"measured {si(f.measured[i], 's')}, {model} model {si(f.predicted(model)[i], 's')} "
                f"({e * 100:+.1f} %)\n"
                f"ideal {si(f.ideal[i], 's')}, calibrated {si(f.calibrated[i], 's')}"
                + ("" if f.is_calibrated[i] else " (no curve for this kind of work: the ideal time)"))

    def csv_table(self):
        f = self.result
        header = ["kernel", "operator", "shape", "measured (s)", "ideal (s)", "ideal error", "calibrated (s)",
                  "calibrated error", "calibrated curve"]
        if f is None:
            return header, []
        e_i, e_c = f.error("ideal"), f.error("calibrated")
        return header, [[f.names[i], f.layers[i], f.shapes[i], float(f.measured[i]), float(f.ideal[i]),
                         float(e_i[i]), float(f.calibrated[i]), float(e_c[i]), bool(f.is_calibrated[i])]
                        for i in range(len(f))]
