"""Amdahl calculator: speed-up curve against G with the ceiling, and the chapter's heat map (Fig. 1)."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QCheckBox, QDoubleSpinBox

from explorer.core.calculators.amdahl import AmdahlResult, amdahl, amdahl_grid

from ._widgets import CalculatorWidget, Section, UnitSpinBox, log_ticks, make_plot, percent, ratio

_CURVE_G = np.logspace(0.0, 4.0, 300)


class AmdahlSection(Section):
    def __init__(self):
        super().__init__([amdahl])
        self.p_box = QDoubleSpinBox()
        self.p_box.setRange(0.0, 1.0)
        self.p_box.setDecimals(4)
        self.p_box.setSingleStep(0.01)
        self.p_box.setValue(0.95)
        self.p_box.setKeyboardTracking(False)
        self.field("parallel_fraction", "Accelerated fraction p (0-1)", self.p_box)
        self.g_box = UnitSpinBox(
            "\u00d7", minimum=1.0, maximum=1e6, decimals=1, step=10.0, value_si=247.0, suffix=" \u00d7"
        )
        self.field("hardware_gain", "Hardware gain G on that fraction", self.g_box, setter=self._set_gain)
        self.infinite = QCheckBox("G \u2192 \u221e (infinitely fast accelerator)")
        self.form.addRow(self.infinite)  # across both columns: its text is longer than a field
        self.infinite.toggled.connect(self._infinite_toggled)

        self.curve_plot = make_plot(
            "Speed-up against hardware gain", "hardware gain G (\u00d7)", "speed-up (\u00d7)", log_x=True
        )
        self.curve = self.curve_plot.plot(pen=pg.mkPen("#1f77b4", width=2), name="speed-up")
        self.ceiling_line = pg.InfiniteLine(
            angle=0,
            pen=pg.mkPen("#d62728", width=1.5, style=pg.QtCore.Qt.DashLine),
            label="ceiling 1/(1-p) = {value:.3g}\u00d7",
            labelOpts={"position": 0.15, "color": "#d62728"},
        )
        self.curve_plot.addItem(self.ceiling_line)
        self.marker = self.curve_plot.plot(pen=None, symbol="o", symbolBrush="#ff7f0e", symbolSize=10)
        log_ticks(self.curve_plot, "bottom", 1.0, float(_CURVE_G[-1]))
        self.plots.addWidget(self.curve_plot, 1)
        self._build_heat_map()
        self.plots.addWidget(self.heat_plot, 1)

    def _build_heat_map(self) -> None:
        grid = amdahl_grid()
        self.heat_plot = make_plot(
            "Speed-up heat map (chapter Fig. 1)",
            "hardware gain G (\u00d7)",
            "accelerated fraction p",
        )
        log_speedup = np.log10(grid.speedup)
        self.heat_image = pg.ImageItem(log_speedup.T)  # image x = G (columns), y = p (rows)
        self.heat_image.setColorMap(pg.colormap.get("viridis"))
        self.heat_image.setLevels((0.0, math.log10(500.0)))
        x0, x1 = math.log10(grid.hardware_gains[0]), math.log10(grid.hardware_gains[-1])
        y0, y1 = grid.parallel_fractions[0], grid.parallel_fractions[-1]
        self.heat_image.setRect(pg.QtCore.QRectF(x0, y0, x1 - x0, y1 - y0))
        self.heat_plot.addItem(self.heat_image)
        for level in grid.levels[1:]:
            iso = pg.IsocurveItem(data=log_speedup.T, level=math.log10(level), pen=pg.mkPen("w", width=1))
            iso.setParentItem(self.heat_image)  # drawn in the image's pixel coordinates
            # label each contour where it crosses p = 1 - 1/(2 level), i.e. G ~ 2 level (p = 0.8 for 2x)
            p_label = max(0.8, 1.0 - 1.0 / (2.0 * level))
            g_label = p_label / (1.0 / level - (1.0 - p_label))
            if 1.0 < g_label <= 1000.0 and p_label <= 0.985:  # the rest crowd the top edge
                text = pg.TextItem(f"{level:g}\u00d7", color="w", anchor=(0.0, 1.0))
                text.setPos(math.log10(g_label), p_label)
                self.heat_plot.addItem(text)
        self.heat_plot.getPlotItem().getAxis("bottom").setTicks(
            [[(float(e), f"{10**e:g}") for e in range(4)]]
        )
        self.heat_plot.setXRange(x0, x1, padding=0)
        self.heat_plot.setYRange(y0, y1 + 0.01, padding=0)
        self.heat_marker = pg.ScatterPlotItem(size=12, brush=pg.mkBrush("#ff7f0e"), pen=pg.mkPen("k"))
        self.heat_plot.addItem(self.heat_marker)

    def _set_gain(self, value: float) -> None:
        if math.isinf(value):
            self.infinite.setChecked(True)
        else:
            self.infinite.setChecked(False)
            self.g_box.set_si_value(value)

    def _infinite_toggled(self, checked: bool) -> None:
        self.g_box.setEnabled(not checked)
        self.recompute()

    def compute(self) -> AmdahlResult:
        gain = math.inf if self.infinite.isChecked() else self.g_box.si_value()
        return amdahl(self.p_box.value(), gain)

    def render(self, r: AmdahlResult) -> None:
        self.results.set_rows(
            [
                ("Speed-up", ratio(r.speedup)),
                ("Ceiling 1/(1 - p)", ratio(r.ceiling)),
                ("Share of the ceiling reached", percent(r.fraction_of_ceiling)),
                ("New run time (of the original)", percent(r.new_time_fraction)),
                ("Serial part of the new run time", percent(r.serial_share)),
                ("Accelerated part of the new run time", percent(r.accelerated_share)),
                ("Extra speed-up if G doubles", ratio(r.gain_if_g_doubled, 4)),
                ("Extra speed-up if 1 - p halves", ratio(r.gain_if_serial_halved, 4)),
            ]
        )
        p = r.parallel_fraction
        self.curve.setData(_CURVE_G, amdahl(p, _CURVE_G).speedup)
        top = r.ceiling if math.isfinite(r.ceiling) else float(amdahl(p, _CURVE_G[-1]).speedup)
        self.ceiling_line.setValue(top)
        self.ceiling_line.setVisible(math.isfinite(r.ceiling))
        self.curve_plot.setYRange(0, top * 1.1 + 0.5)
        g_shown = min(r.hardware_gain, _CURVE_G[-1])
        self.marker.setData([g_shown], [r.speedup])
        if 0.8 <= p <= 0.999 and math.isfinite(r.hardware_gain):
            self.heat_marker.setData([math.log10(min(max(r.hardware_gain, 1.0), 1000.0))], [p])
        else:
            self.heat_marker.setData([], [])


class AmdahlCalculator(CalculatorWidget):
    calculator_id = "amdahl"

    def __init__(self):
        self.section = AmdahlSection()
        super().__init__([self.section])
