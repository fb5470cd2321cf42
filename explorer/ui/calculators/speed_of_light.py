"""Speed-of-light calculator: signal time across a die against the clock period."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from explorer.core.calculators.speed_of_light import SpeedOfLightResult, speed_of_light
from explorer.core.units import format_si

from ._widgets import PLOT_COLORS, CalculatorWidget, Section, UnitSpinBox, make_plot


class SpeedOfLightSection(Section):
    def __init__(self):
        super().__init__([speed_of_light])
        self.distance = self.field(
            "distance",
            "Distance on the die",
            UnitSpinBox("mm", si_unit="m", maximum=1e6, decimals=3, value_si=20e-3),
        )
        self.fraction = self.field(
            "velocity_fraction",
            "Signal speed (fraction of c)",
            UnitSpinBox("c", minimum=0.001, maximum=1.0, decimals=3, step=0.05, value_si=0.5),
        )
        self.clock = self.field(
            "clock",
            "Clock",
            UnitSpinBox("GHz", si_unit="Hz", minimum=1e-6, maximum=1e4, decimals=3, value_si=2e9),
        )
        self.memory = self.field(
            "memory_latency",
            "Off-chip memory latency",
            UnitSpinBox("ns", si_unit="s", maximum=1e9, decimals=1, value_si=100e-9),
        )
        self.plot = make_plot("Signal time against distance", "distance", "time", x_units="m", y_units="s")
        self.plot.addLegend(offset=(10, 10), labelTextColor="k")
        self.curve = self.plot.plot(pen=pg.mkPen(PLOT_COLORS[0], width=2), name="signal time d / (f_c c)")
        self.cycle = pg.InfiniteLine(
            angle=0,
            pen=pg.mkPen(PLOT_COLORS[1], width=1.5, style=Qt.DashLine),
            label="one clock cycle",
            labelOpts={"position": 0.15, "color": PLOT_COLORS[1]},
        )
        self.plot.addItem(self.cycle)
        self.marker = self.plot.plot(pen=None, symbol="o", symbolBrush=PLOT_COLORS[3], symbolSize=10)
        self.plots.addWidget(self.plot)

    def compute(self) -> SpeedOfLightResult:
        return speed_of_light(
            self.distance.si_value(), self.fraction.si_value(), self.clock.si_value(), self.memory.si_value()
        )

    def render(self, r: SpeedOfLightResult) -> None:
        self.results.set_rows(
            [
                ("Signal time", format_si(r.signal_time, "s")),
                ("Clock period", format_si(r.cycle_time, "s")),
                ("Signal time in cycles", f"{r.cycles:.3g} cycles"),
                ("Fits in one cycle", "yes" if r.fits_in_one_cycle else "no"),
                ("Distance covered in one cycle", format_si(r.reach_per_cycle, "m")),
                ("Memory latency in cycles", f"{r.memory_latency_cycles:,.0f} cycles"),
            ]
        )
        reach = float(r.reach_per_cycle)
        top = max(2.0 * self.distance.si_value(), 1.5 * reach)
        d = np.linspace(0.0, top, 100)
        t = speed_of_light(d, self.fraction.si_value(), self.clock.si_value()).signal_time
        self.curve.setData(d, t)
        self.cycle.setValue(r.cycle_time)
        self.marker.setData([self.distance.si_value()], [r.signal_time])
        self.plot.setYRange(0.0, max(float(t[-1]), r.cycle_time) * 1.05)


class SpeedOfLightCalculator(CalculatorWidget):
    calculator_id = "speed-of-light"

    def __init__(self):
        self.section = SpeedOfLightSection()
        super().__init__([self.section])
