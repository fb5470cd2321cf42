"""Dataflow calculator: stationary-dataflow traffic (derived model), the loop-order example and the
systolic-vs-vector energy model."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QCheckBox, QFormLayout, QWidget

from explorer.core.calculators.dataflow import (
    STRATEGIES,
    DataflowResult,
    LoopOrderResult,
    conv_dataflow,
    gemm_dataflow,
    loop_order_weight_loads,
)
from explorer.core.calculators.systolic import SystolicEnergyResult, systolic_energy
from explorer.core.units import format_bytes, format_si

from ._widgets import (
    PLOT_COLORS,
    PRECISIONS,
    CalculatorWidget,
    Section,
    UnitSpinBox,
    bar_labels,
    int_spin,
    log_ticks,
    make_plot,
    ratio,
    value_combo,
)

_SHORT = {"weight-stationary": "WS", "output-stationary": "OS", "input-stationary": "IS"}


class TrafficSection(Section):
    title = "Stationary traffic"

    def __init__(self):
        super().__init__([gemm_dataflow, conv_dataflow])
        self.mode = value_combo(
            [("GEMM  Y = X \u00b7 W", "gemm"), ("Convolution (stride 1, im2col view)", "conv")]
        )
        self.form.addRow("Operation", self.mode)
        self.mode.currentIndexChanged.connect(self._mode_changed)
        self.gemm_box, gemm_form = _sub_form()
        self.conv_box, conv_form = _sub_form()
        self.form.addRow(self.gemm_box)
        self.form.addRow(self.conv_box)
        self.m_box = self.field(
            "m", "M (rows of X: batch x positions)", int_spin(1, 10**8, 32), form=gemm_form
        )
        self.k_box = self.field("k", "K (reduction)", int_spin(1, 10**8, 256), form=gemm_form)
        self.n_box = self.field("n", "N (columns of W: outputs)", int_spin(1, 10**8, 512), form=gemm_form)
        self.batch = self.field("batch", "Batch", int_spin(1, 10**6, 32), form=conv_form)
        self.c_in = self.field("in_channels", "Input channels", int_spin(1, 10**6, 128), form=conv_form)
        self.height = self.field("height", "Height (px)", int_spin(1, 10**6, 56), form=conv_form)
        self.width = self.field("width", "Width (px)", int_spin(1, 10**6, 56), form=conv_form)
        self.c_out = self.field("out_channels", "Output channels", int_spin(1, 10**6, 256), form=conv_form)
        self.kernel = self.field("kernel", "Kernel k (k x k)", int_spin(1, 99, 3), form=conv_form)
        self.same = self.field("same_padding", "", QCheckBox("'same' padding (output H x W)"), form=conv_form)
        self.same.setChecked(True)
        self.buffer = self.field(
            "buffer_bytes",
            "Local buffer (binary KiB)",
            UnitSpinBox("KiB", si_unit="byte", minimum=0.001, maximum=1e7, decimals=3, value_si=64 * 1024.0),
        )
        self.precision = self.field("bytes_per_element", "Precision", value_combo(PRECISIONS, 2.0))
        self._mode_changed()
        self.plot = make_plot("Off-chip traffic per strategy (derived model)", "", "bytes", y_units="B")
        self.plot.addLegend(offset=(-10, 10), labelTextColor="k")
        self.bars = [
            pg.BarGraphItem(x=np.arange(3), y0=np.zeros(3), height=np.zeros(3), width=0.6, brush=c, name=n)
            for n, c in zip(("weights W", "inputs X", "outputs Y (incl. partial sums)"), PLOT_COLORS)
        ]
        for bar in self.bars:
            self.plot.addItem(bar)
        self.floor = pg.InfiniteLine(
            angle=0,
            pen=pg.mkPen("k", style=pg.QtCore.Qt.DashLine),
            label="compulsory (each tensor once)",
            labelOpts={"position": 0.8, "color": "k"},
        )
        self.plot.addItem(self.floor)
        bar_labels(self.plot, list(STRATEGIES))
        self.plots.addWidget(self.plot)

    def _mode_changed(self, *_: object) -> None:
        conv = self.mode.currentData() == "conv"
        self.conv_box.setVisible(conv)
        self.gemm_box.setVisible(not conv)
        self.recompute()

    def before_preset(self, preset) -> None:
        self.mode.setCurrentIndex(1 if preset.function is conv_dataflow else 0)

    def compute(self) -> DataflowResult:
        common = {"buffer_bytes": self.buffer.si_value(), "bytes_per_element": self.precision.currentData()}
        if self.mode.currentData() == "conv":
            return conv_dataflow(
                self.batch.value(),
                self.c_in.value(),
                self.height.value(),
                self.width.value(),
                self.c_out.value(),
                self.kernel.value(),
                same_padding=self.same.isChecked(),
                **common,
            )
        return gemm_dataflow(self.m_box.value(), self.k_box.value(), self.n_box.value(), **common)

    def render(self, r: DataflowResult) -> None:
        rows = [("GEMM shape M x K x N", f"{r.m:,} x {r.k:,} x {r.n:,}"), ("Best strategy", r.best)]
        for s in r.strategies:
            rows.append(
                (
                    f"{_SHORT[s.strategy]} total (W / X / Y)",
                    f"{format_bytes(s.total_bytes)} ({format_bytes(s.weight_bytes)} / "
                    f"{format_bytes(s.input_bytes)} / {format_bytes(s.output_bytes)})",
                )
            )
            rows.append((f"{_SHORT[s.strategy]} block held", f"{s.tile[0]:,} x {s.tile[1]:,}"))
        rows += [
            ("Compulsory traffic (touch once)", format_bytes(r.compulsory_bytes)),
            ("Without any reuse", format_bytes(r.no_reuse_bytes)),
            ("Operand reads without reuse", f"{r.no_reuse_operand_reads:,} elements"),
            ("Multiply-accumulates", f"{r.macs:,} MAC ({format_si(2 * r.macs, 'FLOP')})"),
        ]
        self.results.set_rows(rows)
        parts = np.array([[s.weight_bytes, s.input_bytes, s.output_bytes] for s in r.strategies])
        bottom = np.zeros(3)
        for i, bar in enumerate(self.bars):
            bar.setOpts(y0=bottom.copy(), height=parts[:, i])
            bottom += parts[:, i]
        self.floor.setValue(r.compulsory_bytes)
        self.plot.setYRange(0, max(bottom.max(), r.compulsory_bytes) * 1.15)


class LoopOrderSection(Section):
    title = "Loop order"

    def __init__(self):
        super().__init__([loop_order_weight_loads])
        self.filters = self.field("filters", "Filters (output channels)", int_spin(1, 10**5, 16))
        self.kernel = self.field("kernel", "Kernel k (k x k)", int_spin(1, 99, 3))
        self.size = self.field("input_size", "Input size (square, 1 channel, px)", int_spin(1, 10**5, 8))
        self.resident = self.field("resident_filters", "Filters kept in registers", int_spin(0, 10**5, 0))
        self.plot = make_plot("Weight loads by loop order", "", "weight loads", log_y=True)
        self.bars = pg.BarGraphItem(
            x=[0, 1], height=[0, 0], width=0.6, brushes=[PLOT_COLORS[0], PLOT_COLORS[1]]
        )
        self.plot.addItem(self.bars)
        bar_labels(
            self.plot, ["filter loops outer (weight-stationary)", "spatial loops outer (output-stationary)"]
        )
        self.plots.addWidget(self.plot)

    def compute(self) -> LoopOrderResult:
        return loop_order_weight_loads(
            self.filters.value(), self.kernel.value(), self.size.value(), self.resident.value()
        )

    def render(self, r: LoopOrderResult) -> None:
        self.results.set_rows(
            [
                ("Output positions", f"{r.output_positions:,}"),
                ("Weights", f"{r.weights:,}"),
                ("Loop orderings (5 loops)", f"{r.loop_orderings:,}"),
                ("Weight-stationary loads", f"{r.weight_stationary_loads:,}"),
                ("Output-stationary loads", f"{r.output_stationary_loads:,}"),
                ("Ratio", ratio(r.ratio, 4)),
            ]
        )
        # log-y plot: bar heights are log10 values
        self.bars.setOpts(height=np.log10([r.weight_stationary_loads, r.output_stationary_loads]))
        log_ticks(self.plot, "left", 1.0, float(r.output_stationary_loads))


class SystolicSection(Section):
    title = "Systolic energy"

    def __init__(self):
        super().__init__([systolic_energy])
        self.side = self.field("array_side", "Array side N (N x N PEs)", int_spin(1, 4096, 128))
        self.e_dram = self.field(
            "dram_energy_per_access",
            "DRAM energy per access",
            UnitSpinBox("pJ", si_unit="J", maximum=1e6, decimals=2, value_si=640e-12),
        )
        self.e_mac = self.field(
            "mac_energy",
            "Energy per MAC",
            UnitSpinBox("pJ", si_unit="J", minimum=1e-4, maximum=1e6, decimals=3, value_si=1e-12),
        )
        self.vec = self.field(
            "vector_accesses_per_mac",
            "Vector unit: DRAM accesses per MAC",
            UnitSpinBox("", minimum=0.01, maximum=100, decimals=2, value_si=4.0),
        )
        self.clock = self.field(
            "clock",
            "Clock (0 = no peak)",
            UnitSpinBox("GHz", si_unit="Hz", maximum=100, decimals=3, value_si=0.0),
        )
        self.plot = make_plot(
            "Energy per MAC against array size",
            "array side N",
            "energy per MAC",
            y_units="J",
            log_x=True,
            log_y=True,
        )
        self.plot.addLegend(offset=(-10, 10), labelTextColor="k")
        self.curve = self.plot.plot(
            pen=pg.mkPen(PLOT_COLORS[0], width=2), name="systolic (2/N) E_DRAM + E_MAC"
        )
        self.vector_curve = self.plot.plot(
            pen=pg.mkPen(PLOT_COLORS[1], width=2, style=pg.QtCore.Qt.DashLine), name="vector unit"
        )
        self.marker = self.plot.plot(pen=None, symbol="o", symbolBrush=PLOT_COLORS[3], symbolSize=10)
        self.plots.addWidget(self.plot)

    def compute(self) -> SystolicEnergyResult:
        return systolic_energy(
            self.side.value(),
            self.e_dram.si_value(),
            self.e_mac.si_value(),
            self.vec.si_value(),
            clock=self.clock.si_value(),
        )

    def render(self, r: SystolicEnergyResult) -> None:
        rows = [
            ("Vector unit energy per MAC", format_si(r.vector_energy_per_mac, "J")),
            ("Systolic energy per MAC", format_si(r.systolic_energy_per_mac, "J")),
            ("Efficiency ratio", ratio(r.efficiency_ratio, 4)),
            ("Systolic DRAM accesses per MAC", f"{r.systolic_dram_accesses_per_mac:.4g}"),
            ("MACs per cycle (N\u00b2)", f"{r.macs_per_cycle:,}"),
        ]
        if r.peak_flops > 0:
            rows.append(("Peak at this clock (2 N\u00b2 f)", format_si(r.peak_flops, "FLOP/s")))
        self.results.set_rows(rows)
        sides = np.unique(np.geomspace(1, 1024, 60).astype(int))
        energies = [
            systolic_energy(
                int(n), self.e_dram.si_value(), self.e_mac.si_value(), self.vec.si_value()
            ).systolic_energy_per_mac
            for n in sides
        ]
        self.curve.setData(sides.astype(float), np.asarray(energies))
        self.vector_curve.setData([1.0, 1024.0], [r.vector_energy_per_mac] * 2)
        self.marker.setData([float(self.side.value())], [r.systolic_energy_per_mac])
        log_ticks(self.plot, "bottom", 1.0, 1024.0)


def _sub_form() -> tuple[QWidget, QFormLayout]:
    box = QWidget()
    form = QFormLayout(box)
    form.setContentsMargins(0, 0, 0, 0)
    return box, form


class DataflowCalculator(CalculatorWidget):
    calculator_id = "dataflow"

    def __init__(self):
        self.traffic = TrafficSection()
        self.loop_order = LoopOrderSection()
        self.systolic = SystolicSection()
        super().__init__([self.traffic, self.loop_order, self.systolic])
