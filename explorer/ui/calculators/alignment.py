"""Tensor-core alignment calculator: padding waste and the fallback penalty for misaligned dimensions."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from explorer.core.calculators import CalculatorInputError
from explorer.core.calculators.alignment import AlignmentResult, tensor_core_alignment
from explorer.core.units import format_si

from ._widgets import CalculatorWidget, Section, UnitSpinBox, int_spin, make_plot, percent, ratio, value_combo

_MULTIPLES = (
    ("8 (FP16)", 8),
    ("16 (BF16 / INT8)", 16),
    ("64 (padding policy)", 64),
    ("128 (systolic tile)", 128),
)


class AlignmentSection(Section):
    def __init__(self):
        super().__init__([tensor_core_alignment])
        self.dim_boxes = [int_spin(0, 10**9, v) for v in (500, 0, 0)]
        for label, box in zip(
            ("Dimension 1 (e.g. features)", "Dimension 2 (0 = unused)", "Dimension 3 (0 = unused)"),
            self.dim_boxes,
        ):
            self.form.addRow(label, box)
            box.valueChanged.connect(self.recompute)
        self.bind("dims", self._set_dims)
        self.multiple = self.field("multiple", "Required multiple", value_combo(_MULTIPLES, 8))
        self.peak = self.field(
            "tensor_peak",
            "Tensor-core peak",
            UnitSpinBox("TFLOP/s", si_unit="FLOP/s", minimum=1e-3, maximum=1e7, decimals=2, value_si=312e12),
        )
        self.penalty = self.field(
            "fallback_penalty",
            "Fallback slowdown if unaligned",
            UnitSpinBox("\u00d7", minimum=1.0, maximum=1000.0, decimals=2, value_si=16.0, suffix=" \u00d7"),
        )
        self.plot = make_plot("Padding waste around this dimension", "dimension", "padding waste (%)")
        self.bars = pg.BarGraphItem(x=[0.0], height=[0.0], width=0.8, brush="#1f77b4")
        self.plot.addItem(self.bars)
        self.marker = self.plot.plot(pen=None, symbol="o", symbolBrush="#d62728", symbolSize=10)
        self.plots.addWidget(self.plot)

    def _set_dims(self, dims) -> None:
        values = list(dims) + [0] * (3 - len(dims))
        for box, value in zip(self.dim_boxes, values):
            box.setValue(int(value))

    def compute(self) -> AlignmentResult:
        dims = [b.value() for b in self.dim_boxes if b.value() > 0]
        if not dims:
            raise CalculatorInputError("dims", "enter at least one dimension")
        return tensor_core_alignment(
            dims, self.multiple.currentData(), self.peak.si_value(), self.penalty.si_value()
        )

    def render(self, r: AlignmentResult) -> None:
        rows = []
        for i, (d, p, w) in enumerate(zip(r.dims, r.padded_dims, r.waste_per_dim), start=1):
            rows.append((f"Dimension {i}: {d:,} pads to", f"{p:,} (waste {percent(w)})"))
        rows += [
            ("All aligned", "yes" if r.aligned else "no"),
            ("Useful FLOP (2 x product)", format_si(r.useful_flops, "FLOP")),
            ("Padded FLOP", format_si(r.padded_flops, "FLOP")),
            ("FLOP spent on padding", percent(r.flop_waste)),
            ("Useful rate, padded", format_si(r.padded_throughput, "FLOP/s")),
            (
                "Useful rate, not padded",
                format_si(r.unpadded_throughput, "FLOP/s") + ("" if r.aligned else " (fallback)"),
            ),
            ("Padding pays off by", ratio(r.padding_speedup)),
        ]
        self.results.set_rows(rows)
        d0, m = r.dims[0] if len(r.dims) == 1 else r.dims[int(np.argmax(r.waste_per_dim))], r.multiple
        span = np.arange(max(1, d0 - 3 * m), d0 + 3 * m + 1)
        padded = np.ceil(span / m) * m
        self.bars.setOpts(x=span.astype(float), height=100.0 * (padded - span) / padded)
        waste = 100.0 * (np.ceil(d0 / m) * m - d0) / (np.ceil(d0 / m) * m)
        self.marker.setData([float(d0)], [waste])
        self.plot.setXRange(float(span[0]) - 1, float(span[-1]) + 1)


class AlignmentCalculator(CalculatorWidget):
    calculator_id = "alignment"

    def __init__(self):
        self.section = AlignmentSection()
        super().__init__([self.section])
