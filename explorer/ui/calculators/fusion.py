"""Kernel-fusion calculator: footprint and traffic of an element-wise chain, fused and unfused."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtWidgets import QCheckBox

from explorer.core.calculators.fusion import FusionResult, kernel_fusion
from explorer.core.units import format_bytes, format_si

from ._widgets import (
    PLOT_COLORS,
    PRECISIONS,
    CalculatorWidget,
    Section,
    UnitSpinBox,
    int_spin,
    make_plot,
    ratio,
    value_combo,
)


class FusionSection(Section):
    def __init__(self):
        super().__init__([kernel_fusion])
        self.elements = self.field(
            "elements",
            "Tensor elements",
            UnitSpinBox("elements", minimum=1, maximum=1e13, decimals=0, value_si=1024 * 1024.0),
        )
        self.precision = self.field("bytes_per_element", "Precision", value_combo(PRECISIONS, 4.0))
        self.ops = self.field("ops", "Element-wise ops in the chain (k)", int_spin(1, 1000, 3))
        self.count_input = self.field(
            "fused_counts_input", "", QCheckBox("Fused footprint also counts the input X (D-7)")
        )
        self.bandwidth = self.field(
            "bandwidth",
            "Memory bandwidth (0 = no times)",
            UnitSpinBox("GB/s", si_unit="byte/s", maximum=1e7, decimals=1, value_si=0.0),
        )
        self.plot = make_plot("Unfused vs fused", "", "bytes", y_units="B")
        self.bars = pg.BarGraphItem(
            x=[0, 1, 3, 4], height=[0, 0, 0, 0], width=0.8, brushes=[PLOT_COLORS[1], PLOT_COLORS[2]] * 2
        )
        self.plot.addItem(self.bars)
        self.plot.getPlotItem().getAxis("bottom").setTicks(
            [[(0, "footprint unfused"), (1, "fused"), (3, "traffic unfused"), (4, "fused")]]
        )
        self.plots.addWidget(self.plot)

    def compute(self) -> FusionResult:
        return kernel_fusion(
            self.elements.si_value(),
            self.precision.currentData(),
            self.ops.value(),
            self.count_input.isChecked(),
            self.bandwidth.si_value(),
        )

    def render(self, r: FusionResult) -> None:
        rows = [
            ("Tensor size", f"{format_bytes(r.tensor_bytes)} ({format_bytes(r.tensor_bytes, binary=True)})"),
            ("Unfused footprint (every intermediate stored)", format_bytes(r.unfused_footprint)),
            ("Fused footprint", format_bytes(r.fused_footprint)),
            ("Footprint reduction", ratio(r.footprint_reduction)),
            ("Unfused traffic (2k traversals)", format_bytes(r.unfused_traffic)),
            ("Fused traffic (1 read + 1 write)", format_bytes(r.fused_traffic)),
            ("Traffic reduction (bandwidth-bound speed-up)", ratio(r.traffic_reduction)),
        ]
        if r.unfused_time > 0:
            rows += [
                ("Unfused time at this bandwidth", format_si(r.unfused_time, "s")),
                ("Fused time at this bandwidth", format_si(r.fused_time, "s")),
            ]
        self.results.set_rows(rows)
        heights = [r.unfused_footprint, r.fused_footprint, r.unfused_traffic, r.fused_traffic]
        self.bars.setOpts(height=heights)
        self.plot.setYRange(0, max(heights) * 1.1)


class FusionCalculator(CalculatorWidget):
    calculator_id = "fusion"

    def __init__(self):
        self.section = FusionSection()
        super().__init__([self.section])
