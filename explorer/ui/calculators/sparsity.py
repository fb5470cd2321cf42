"""N:M sparsity calculator: bits per group of M weights, dense against sparse with its metadata."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtWidgets import QCheckBox

from explorer.core.calculators.sparsity import SparsityResult, nm_sparsity
from explorer.core.units import format_bytes

from ._widgets import (
    PLOT_COLORS,
    CalculatorWidget,
    Section,
    UnitSpinBox,
    bar_labels,
    int_spin,
    make_plot,
    percent,
    ratio,
    value_combo,
)

_VALUE_BITS = (
    ("FP32 (32 bit)", 32.0),
    ("FP16 / BF16 (16 bit)", 16.0),
    ("FP8 / INT8 (8 bit)", 8.0),
    ("INT4 (4 bit)", 4.0),
)


class SparsitySection(Section):
    def __init__(self):
        super().__init__([nm_sparsity])
        self.n_box = self.field("n", "N (non-zeros kept per group)", int_spin(1, 64, 2))
        self.m_box = self.field("m", "M (group size)", int_spin(1, 64, 4))
        self.bits = self.field("bits_per_value", "Value precision", value_combo(_VALUE_BITS, 16.0))
        self.weights = self.field(
            "weights",
            "Dense weights (count)",
            UnitSpinBox("\u00d7 10\u2079 weights", scale=1e9, maximum=1e6, decimals=3, value_si=1e9),
        )
        self.override = QCheckBox("Override metadata bits per group")
        self.meta_box = UnitSpinBox("bit", maximum=1024, decimals=1, value_si=4.0)
        self.meta_box.setEnabled(False)
        self.form.addRow(self.override)  # across both columns: its text is longer than a field
        self.form.addRow("Metadata per group", self.meta_box)
        self.override.toggled.connect(self.meta_box.setEnabled)
        self.override.toggled.connect(self.recompute)
        self.meta_box.valueChanged.connect(self.recompute)
        self.bind("metadata_bits_per_group", self._set_metadata)
        self.plot = make_plot("Bits per group of M weights", "", "bits")
        self.plot.addLegend(offset=(-10, 10), labelTextColor="k")
        self.value_bars = pg.BarGraphItem(
            x=[0, 1], y0=[0, 0], height=[0, 0], width=0.6, brush=PLOT_COLORS[0], name="values"
        )
        self.meta_bars = pg.BarGraphItem(
            x=[0, 1], y0=[0, 0], height=[0, 0], width=0.6, brush=PLOT_COLORS[3], name="metadata (indices)"
        )
        self.plot.addItem(self.value_bars)
        self.plot.addItem(self.meta_bars)
        bar_labels(self.plot, ["dense", "N:M sparse"])
        self.plots.addWidget(self.plot)

    def _set_metadata(self, bits: float | None) -> None:
        self.override.setChecked(bits is not None)
        if bits is not None:
            self.meta_box.set_si_value(bits)

    def before_preset(self, preset) -> None:
        if "metadata_bits_per_group" not in preset.inputs:
            self.override.setChecked(False)

    def compute(self) -> SparsityResult:
        meta = self.meta_box.si_value() if self.override.isChecked() else None
        return nm_sparsity(
            self.n_box.value(), self.m_box.value(), self.bits.currentData(), self.weights.si_value(), meta
        )

    def render(self, r: SparsityResult) -> None:
        self.results.set_rows(
            [
                ("Density N/M", percent(r.density)),
                ("Metadata per group", f"{r.metadata_bits_per_group:g} bit"),
                (
                    "Bits per group, dense vs sparse",
                    f"{r.dense_bits_per_group:g} vs "
                    f"{r.value_bits_per_group + r.metadata_bits_per_group:g} bit",
                ),
                ("Effective bytes (of dense)", percent(r.effective_fraction, 4)),
                ("Metadata share of sparse storage", percent(r.metadata_share)),
                ("Compression", ratio(r.compression)),
                ("Theoretical speed-up M/N", ratio(r.theoretical_speedup)),
                ("Dense-equivalent FLOP/byte gain", ratio(r.intensity_gain)),
                ("Dense weight bytes", format_bytes(r.dense_bytes)),
                ("Sparse weight bytes", format_bytes(r.sparse_bytes)),
            ]
        )
        self.value_bars.setOpts(height=[r.dense_bits_per_group, r.value_bits_per_group])
        self.meta_bars.setOpts(
            y0=[r.dense_bits_per_group, r.value_bits_per_group], height=[0.0, r.metadata_bits_per_group]
        )
        self.plot.setYRange(0, r.dense_bits_per_group * 1.25)


class SparsityCalculator(CalculatorWidget):
    calculator_id = "sparsity"

    def __init__(self):
        self.section = SparsitySection()
        super().__init__([self.section])
