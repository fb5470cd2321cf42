"""Transfer and scaling calculator: gradient sync over a link (per direction vs bidirectional made
explicit), overlap and scaling efficiency with the Amdahl bound; host-device copies."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox

from explorer.core.calculators.transfer_scaling import (
    LINKS,
    HostTransferResult,
    ScalingResult,
    communication_cap,
    gradient_sync_scaling,
    host_transfer,
)
from explorer.core.units import format_bytes, format_si

from ._widgets import (
    PLOT_COLORS,
    CalculatorWidget,
    Section,
    UnitSpinBox,
    int_spin,
    log_ticks,
    make_plot,
    percent,
    ratio,
    value_combo,
)

_RATINGS = (("per direction", False), ("bidirectional total (half each way)", True))


def _link_widgets(section: Section, default_link: str) -> tuple[QComboBox, UnitSpinBox, QComboBox]:
    bw, bidir = LINKS[default_link]
    picker = QComboBox()
    picker.addItem("(enter values below)", None)
    for name in LINKS:
        picker.addItem(name, name)
    box = UnitSpinBox("GB/s", si_unit="byte/s", minimum=1e-3, maximum=1e6, decimals=2, value_si=bw)
    rating = value_combo(_RATINGS, bidir)

    def picked(index: int) -> None:
        name = picker.itemData(index)
        if name is not None:
            link_bw, link_bidir = LINKS[name]
            box.set_si_value(link_bw)
            rating.setCurrentIndex(1 if link_bidir else 0)

    picker.currentIndexChanged.connect(picked)
    picker.setCurrentIndex(picker.findData(default_link))
    section.form.addRow("Link", picker)
    section.field("link_bandwidth", "Quoted link bandwidth", box)
    section.field("bidirectional_rating", "The quoted figure is", rating)
    return picker, box, rating


class ScalingSection(Section):
    title = "Multi-chip scaling"

    def __init__(self):
        super().__init__([gradient_sync_scaling, communication_cap])
        self.payload = self.field(
            "payload_bytes",
            "Gradient payload (decimal GB)",
            UnitSpinBox("GB", si_unit="byte", maximum=1e6, decimals=3, value_si=1e9),
        )
        self.link, self.bandwidth, self.rating = _link_widgets(self, "NVLink 3.0 (A100)")
        self.step = self.field(
            "step_time",
            "Compute time per step",
            UnitSpinBox("ms", si_unit="s", minimum=1e-6, maximum=1e9, decimals=3, value_si=50e-3),
        )
        self.devices = self.field("devices", "Devices N", int_spin(1, 10**6, 8))
        self.overlap = self.field(
            "overlap",
            "Sync hidden behind compute",
            UnitSpinBox("%", scale=0.01, maximum=100.0, decimals=1, value_si=0.0),
        )
        self.latency = self.field(
            "latency",
            "Link latency per sync",
            UnitSpinBox("\u00b5s", si_unit="s", maximum=1e9, decimals=3, value_si=0.0),
        )
        self.serial = self.field(
            "serial_fraction",
            "Amdahl view: serial fraction s",
            UnitSpinBox("%", scale=0.01, minimum=0.01, maximum=100.0, decimals=2, value_si=0.05),
        )
        self.cap_result = None
        self.plot = make_plot(
            "Speed-up against device count", "devices N", "speed-up (\u00d7)", log_x=True, log_y=True
        )
        self.plot.addLegend(offset=(10, 10), labelTextColor="k")
        self.ideal = self.plot.plot(pen=pg.mkPen("#999999", width=1, style=Qt.DashLine), name="linear")
        self.model = self.plot.plot(
            pen=pg.mkPen(PLOT_COLORS[0], width=2), name="per-step sync N T/(T + T_exp)"
        )
        self.amdahl_curve = self.plot.plot(
            pen=pg.mkPen(PLOT_COLORS[1], width=2), name="Amdahl 1/(s + (1-s)/N)"
        )
        self.marker = self.plot.plot(pen=None, symbol="o", symbolBrush=PLOT_COLORS[3], symbolSize=10)
        self.plots.addWidget(self.plot)

    def before_preset(self, preset) -> None:
        self.link.setCurrentIndex(0)

    def compute(self) -> ScalingResult:
        result = gradient_sync_scaling(
            self.payload.si_value(),
            self.bandwidth.si_value(),
            self.rating.currentData(),
            self.step.si_value(),
            float(self.devices.value()),
            self.overlap.si_value(),
            self.latency.si_value(),
        )
        self.cap_result = communication_cap(self.serial.si_value(), float(self.devices.value()))
        return result

    def render(self, r: ScalingResult) -> None:
        cap = self.cap_result
        self.results.set_rows(
            [
                ("Per-direction bandwidth", format_si(r.per_direction_bandwidth, "B/s")),
                ("Gradient sync time", format_si(r.sync_time, "s")),
                ("Sync / step time", percent(r.overhead_fraction)),
                ("Exposed sync per step", format_si(r.exposed_sync_time, "s")),
                ("Speed-up on N devices", ratio(r.speedup)),
                ("Scaling efficiency", percent(r.efficiency)),
                ("Amdahl cap 1/s", ratio(cap.cap)),
                ("Amdahl speed-up on N devices", ratio(cap.speedup)),
            ]
        )
        n_max = max(64.0, 4.0 * float(r.devices))
        ns = np.geomspace(1.0, n_max, 120)
        sweep = gradient_sync_scaling(
            self.payload.si_value(),
            self.bandwidth.si_value(),
            self.rating.currentData(),
            self.step.si_value(),
            ns,
            self.overlap.si_value(),
            self.latency.si_value(),
        )
        self.ideal.setData(ns, ns)
        self.model.setData(ns, sweep.speedup)
        self.amdahl_curve.setData(ns, communication_cap(self.serial.si_value(), ns).speedup)
        self.marker.setData([float(r.devices)], [float(r.speedup)])
        log_ticks(self.plot, "bottom", 1.0, n_max)
        log_ticks(self.plot, "left", 1.0, n_max)


class HostTransferSection(Section):
    title = "Host-device transfer"

    def __init__(self):
        super().__init__([host_transfer])
        self.input = self.field(
            "input_bytes",
            "Host \u2192 device (decimal MB)",
            UnitSpinBox("MB", si_unit="byte", maximum=1e9, decimals=4, value_si=32e3),
        )
        self.output = self.field(
            "output_bytes",
            "Device \u2192 host (decimal MB)",
            UnitSpinBox("MB", si_unit="byte", maximum=1e9, decimals=4, value_si=0.0),
        )
        self.link, self.bandwidth, self.rating = _link_widgets(self, "PCIe Gen5 x16")
        self.compute_box = self.field(
            "compute_time",
            "Compute time per batch",
            UnitSpinBox("ms", si_unit="s", maximum=1e9, decimals=4, value_si=0.0),
        )
        self.latency = self.field(
            "latency",
            "Latency per copy",
            UnitSpinBox("\u00b5s", si_unit="s", maximum=1e9, decimals=3, value_si=0.0),
        )
        self.plot = make_plot("Per-batch timeline", "time", "", x_units="s")
        self.plot.addLegend(offset=(-10, 10), labelTextColor="k")
        self.plot.getPlotItem().getAxis("left").setTicks([[(1, "sequential"), (0, "overlapped")]])
        self.bars = [
            pg.BarGraphItem(x0=[0.0], y=[1.0], height=[0.5], width=[0.0], brush=c, name=n)
            for n, c in zip(("copy in", "compute", "copy out"), PLOT_COLORS)
        ]
        for bar in self.bars:
            self.plot.addItem(bar)
        self.overlapped = pg.BarGraphItem(
            x0=[0.0],
            y=[0.0],
            height=[0.5],
            width=[0.0],
            brush="#7f7f7f",
            name="steady state, copies overlapped",
        )
        self.plot.addItem(self.overlapped)
        self.plot.setYRange(-0.6, 1.6)
        self.plots.addWidget(self.plot)

    def before_preset(self, preset) -> None:
        self.link.setCurrentIndex(0)

    def compute(self) -> HostTransferResult:
        return host_transfer(
            self.input.si_value(),
            self.bandwidth.si_value(),
            self.rating.currentData(),
            self.output.si_value(),
            self.compute_box.si_value(),
            self.latency.si_value(),
        )

    def render(self, r: HostTransferResult) -> None:
        self.results.set_rows(
            [
                ("Per-direction bandwidth", format_si(r.per_direction_bandwidth, "B/s")),
                ("Copy in", format_si(r.input_time, "s")),
                ("Copy out", format_si(r.output_time, "s")),
                ("Sequential per batch", format_si(r.sequential_time, "s")),
                ("Overlapped per batch (double buffering)", format_si(r.overlapped_time, "s")),
                ("Share of sequential time copying", percent(r.transfer_share)),
                ("Data in", format_bytes(self.input.si_value())),
            ]
        )
        start = 0.0
        for bar, width in zip(self.bars, (r.input_time, self.compute_box.si_value(), r.output_time)):
            bar.setOpts(x0=[start], width=[width])
            start += width
        self.overlapped.setOpts(width=[r.overlapped_time])
        self.plot.setXRange(0.0, max(r.sequential_time, 1e-12) * 1.05)


class TransferScalingCalculator(CalculatorWidget):
    calculator_id = "transfer-scaling"

    def __init__(self):
        self.scaling = ScalingSection()
        self.host = HostTransferSection()
        super().__init__([self.scaling, self.host])
