"""Iron-law calculator: the three time terms as a stacked bar, with the dominant term named."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyqtgraph as pg

from explorer.core.calculators.batch_sweep import CHAPTER_DEVICES
from explorer.core.calculators.iron_law import TERM_NAMES, IronLawResult, iron_law
from explorer.core.units import format_bytes, format_si

from ._widgets import (
    PLOT_COLORS,
    CalculatorWidget,
    DevicePicker,
    Section,
    UnitSpinBox,
    duration,
    make_plot,
    percent,
)


class IronLawSection(Section):
    def __init__(self, devices: Sequence[Any] = CHAPTER_DEVICES):
        super().__init__([iron_law])
        self.data_box = UnitSpinBox("MB", si_unit="byte", maximum=1e12, decimals=4, value_si=8_650_752.0)
        self.bw_box = UnitSpinBox(
            "GB/s", si_unit="byte/s", minimum=1e-6, maximum=1e7, decimals=2, value_si=2039e9
        )
        self.ops_box = UnitSpinBox("GFLOP", si_unit="FLOP", maximum=1e15, decimals=4, value_si=268_435_456.0)
        self.peak_box = UnitSpinBox(
            "TFLOP/s", si_unit="FLOP/s", minimum=1e-6, maximum=1e7, decimals=2, value_si=312e12
        )
        self.eta_box = UnitSpinBox("%", scale=0.01, minimum=0.1, maximum=100.0, decimals=1, value_si=1.0)
        self.lat_box = UnitSpinBox("\u00b5s", si_unit="s", maximum=1e12, decimals=3, value_si=0.0)
        self.device = DevicePicker(self.bw_box, self.peak_box, devices)
        self.form.addRow("Fill from device", self.device)
        self.field("data_bytes", "Data volume D_vol (decimal MB)", self.data_box)
        self.field("bandwidth", "Bandwidth BW", self.bw_box)
        self.field("operations", "Operations O (1 MAC = 2 FLOP)", self.ops_box)
        self.field("peak_flops", "Peak R_peak (at the kernel's precision)", self.peak_box)
        self.field("efficiency", "Utilisation \u03b7_hw", self.eta_box)
        self.field("fixed_latency", "Fixed latency L_lat", self.lat_box)

        self.plot = make_plot("Time per term (additive iron law)", "time", "", x_units="s")
        self.plot.getPlotItem().getAxis("left").setTicks([[]])
        self.plot.addLegend(offset=(-10, 10), labelTextColor="k")
        self.bars = []
        for name, color in zip(TERM_NAMES, PLOT_COLORS):
            bar = pg.BarGraphItem(x0=[0.0], y=[0.0], height=[0.6], width=[0.0], brush=color, name=name)
            self.plot.addItem(bar)
            self.bars.append(bar)
        self.dominant_text = pg.TextItem(color="k", anchor=(0.0, 1.0))
        self.plot.addItem(self.dominant_text)
        self.plot.setYRange(-0.8, 1.1)
        self.plots.addWidget(self.plot)

    def set_devices(self, devices: Sequence[Any]) -> None:
        self.device.set_devices(devices)

    def compute(self) -> IronLawResult:
        return iron_law(
            self.data_box.si_value(),
            self.bw_box.si_value(),
            self.ops_box.si_value(),
            self.peak_box.si_value(),
            self.eta_box.si_value(),
            self.lat_box.si_value(),
        )

    def render(self, r: IronLawResult) -> None:
        shares = r.shares
        self.results.set_rows(
            [
                ("Data term D_vol / BW", format_si(r.memory_time, "s")),
                ("Compute term O / (R_peak \u03b7)", duration(r.compute_time)),
                ("Fixed latency", format_si(r.latency_time, "s")),
                ("Total (terms added)", duration(r.total_time)),
                ("If data and compute overlapped", format_si(r.overlapped_time, "s")),
                ("Dominant term", f"{r.dominant_term} ({percent(max(shares))})"),
                ("Memory wall reached", "yes" if r.memory_wall else "no"),
                ("Arithmetic intensity O / D_vol", format_si(r.arithmetic_intensity, "FLOP/B")),
                ("Ridge R_peak \u03b7 / BW", format_si(r.effective_ridge, "FLOP/B")),
                ("Data volume", format_bytes(self.data_box.si_value())),
            ]
        )
        start = 0.0
        for bar, width in zip(self.bars, (r.memory_time, r.compute_time, r.latency_time)):
            bar.setOpts(x0=[start], width=[width])
            start += width
        self.dominant_text.setText(f"dominant: {r.dominant_term}")
        self.dominant_text.setPos(0.0, 0.9)
        self.plot.setXRange(0.0, max(r.total_time, 1e-12) * 1.05)


class IronLawCalculator(CalculatorWidget):
    calculator_id = "iron-law"

    def __init__(self, devices: Sequence[Any] = CHAPTER_DEVICES):
        self.section = IronLawSection(devices)
        super().__init__([self.section])
