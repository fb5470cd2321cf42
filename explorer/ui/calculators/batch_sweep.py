"""Batch-sweep calculator: a dense layer's intensity against batch size and each device's ridge; and the
decode tokens-per-second ceiling."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QListWidget, QListWidgetItem

from explorer.core.calculators.batch_sweep import (
    CHAPTER_DEVICES,
    BatchSweepResult,
    DecodeResult,
    batch_sweep,
    decode_ceiling,
)
from explorer.core.units import format_bytes, format_si

from ._widgets import (
    PLOT_COLORS,
    PRECISIONS,
    CalculatorWidget,
    DevicePicker,
    Section,
    UnitSpinBox,
    int_spin,
    log_ticks,
    make_plot,
    percent,
    value_combo,
)


class BatchSweepSection(Section):
    title = "Batch sweep"

    def __init__(self, devices: Sequence[Any]):
        super().__init__([batch_sweep])
        self.m_box = self.field("m", "Input features M", int_spin(1, 10**7, 2048))
        self.n_box = self.field("n", "Output features N", int_spin(1, 10**7, 2048))
        self.precision = self.field(
            "bytes_per_element", "Precision (bytes per element)", value_combo(PRECISIONS, 2.0)
        )
        self.batch_box = self.field("batch", "Batch size B", int_spin(1, 10**7, 32))
        self.max_batch = int_spin(2, 10**7, 1024)
        self.form.addRow("Sweep up to batch", self.max_batch)
        self.max_batch.valueChanged.connect(self.recompute)
        self.device_list = QListWidget()
        self.device_list.setMaximumHeight(110)
        self.device_list.itemChanged.connect(self.recompute)
        self.form.addRow("Ridges of (check to show)", self.device_list)
        self.plot = make_plot(
            "Dense-layer intensity against batch (eq. 6)",
            "batch size B",
            "arithmetic intensity (FLOP/byte)",
            log_x=True,
            log_y=True,
        )
        self.plot.addLegend(offset=(10, 10), labelTextColor="k")
        self.curve = self.plot.plot(pen=pg.mkPen("k", width=2.5), name="I(B)")
        self.marker = self.plot.plot(pen=None, symbol="o", symbolBrush="k", symbolSize=10)
        self.overlays: list[Any] = []
        self.plots.addWidget(self.plot)
        self.set_devices(devices)

    def set_devices(self, devices: Sequence[Any]) -> None:
        self.device_list.blockSignals(True)
        self.device_list.clear()
        self.devices = list(devices)
        for device in self.devices:
            item = QListWidgetItem(
                f"{device.name}  (ridge {device.peak_flops / device.bandwidth:.1f} FLOP/B)"
            )
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked)
            self.device_list.addItem(item)
        self.device_list.blockSignals(False)
        self.recompute()

    def selected_devices(self) -> list[Any]:
        return [
            d
            for i, d in enumerate(self.devices)
            if self.device_list.item(i).checkState() == Qt.CheckState.Checked
        ]

    def compute(self) -> BatchSweepResult:
        return batch_sweep(
            float(self.batch_box.value()),
            self.m_box.value(),
            self.n_box.value(),
            self.precision.currentData(),
            self.selected_devices(),
        )

    def render(self, r: BatchSweepResult) -> None:
        rows = [
            ("Intensity at this batch", f"{r.intensity:.4g} FLOP/B"),
            ("FLOP per step", format_si(r.flops, "FLOP")),
            ("Bytes moved (input + weights + output)", format_bytes(r.bytes_moved)),
            ("Asymptote B \u2192 \u221e", f"{r.asymptote:.4g} FLOP/B"),
        ]
        for c in r.crossings:
            where = "never" if not np.isfinite(c.crossing_batch) else f"B \u2248 {c.crossing_batch:.1f}"
            state = "compute-bound" if c.compute_bound else "memory-bound"
            rows.append((f"{c.device}: ridge {c.ridge:.1f}, crosses at", where))
            rows.append((f"{c.device}: at this batch", f"{state}, {format_si(c.attainable_flops, 'FLOP/s')}"))
        self.results.set_rows(rows)
        batches = np.geomspace(1.0, float(self.max_batch.value()), 240)
        sweep = batch_sweep(batches, self.m_box.value(), self.n_box.value(), self.precision.currentData(), ())
        self.curve.setData(batches, sweep.intensity)
        log_ticks(self.plot, "bottom", 1.0, batches[-1])
        ridges = [c.ridge for c in r.crossings]
        log_ticks(self.plot, "left", float(sweep.intensity[0]), max([float(sweep.intensity[-1]), *ridges]))
        self.marker.setData([r.batch], [r.intensity])
        for item in self.overlays:
            self.plot.removeItem(item)
        self.overlays = []
        for i, (c, color) in enumerate(zip(r.crossings, PLOT_COLORS)):
            line = pg.InfiniteLine(
                pos=np.log10(c.ridge),
                angle=0,
                pen=pg.mkPen(color, width=1.5, style=Qt.DashLine),
                label=f"{c.device} ridge {c.ridge:.1f}",
                labelOpts={"position": 0.05 + 0.2 * (i % 4), "color": color, "anchors": [(0, 1), (0, 1)]},
            )
            self.plot.addItem(line)
            self.overlays.append(line)
            if np.isfinite(c.crossing_batch) and c.crossing_batch <= batches[-1]:
                v = pg.InfiniteLine(
                    pos=np.log10(c.crossing_batch),
                    angle=90,
                    pen=pg.mkPen(color, width=1, style=Qt.DotLine),
                    label=f"B\u2248{c.crossing_batch:.0f}",
                    labelOpts={"position": 0.08 + 0.12 * (i % 4), "color": color, "rotateAxis": (1, 0)},
                )
                self.plot.addItem(v)
                self.overlays.append(v)


class DecodeSection(Section):
    title = "Decode ceiling"

    def __init__(self, devices: Sequence[Any]):
        super().__init__([decode_ceiling])
        self.params_box = UnitSpinBox(
            "\u00d7 10\u2079 parameters", scale=1e9, minimum=1e-6, maximum=1e6, decimals=3, value_si=1.5e9
        )
        self.precision = value_combo(PRECISIONS, 2.0)
        self.batch_box = int_spin(1, 10**6, 1)
        self.bw_box = UnitSpinBox(
            "GB/s", si_unit="byte/s", minimum=1e-3, maximum=1e7, decimals=1, value_si=2039e9
        )
        self.peak_box = UnitSpinBox(
            "TFLOP/s", si_unit="FLOP/s", minimum=1e-6, maximum=1e7, decimals=2, value_si=312e12
        )
        self.device = DevicePicker(self.bw_box, self.peak_box, devices)
        self.field("parameters", "Model size", self.params_box)
        self.field("bytes_per_parameter", "Weight precision", self.precision)
        self.field("batch", "Sequences decoded together (batch)", self.batch_box)
        self.form.addRow("Fill from device", self.device)
        self.field("bandwidth", "Memory bandwidth", self.bw_box)
        self.field("peak_flops", "Peak at that precision", self.peak_box)
        self.plot = make_plot(
            "Decode ceiling against batch",
            "batch",
            "tokens per second (all sequences)",
            log_x=True,
            log_y=True,
        )
        self.curve = self.plot.plot(pen=pg.mkPen("#1f77b4", width=2))
        self.marker = self.plot.plot(pen=None, symbol="o", symbolBrush="#ff7f0e", symbolSize=10)
        self.plots.addWidget(self.plot)

    def set_devices(self, devices: Sequence[Any]) -> None:
        self.device.set_devices(devices)

    def compute(self) -> DecodeResult:
        return decode_ceiling(
            self.params_box.si_value(),
            self.precision.currentData(),
            self.bw_box.si_value(),
            self.peak_box.si_value(),
            self.batch_box.value(),
        )

    def render(self, r: DecodeResult) -> None:
        self.results.set_rows(
            [
                ("Tokens per second (ceiling)", f"{r.tokens_per_second:,.1f} tokens/s"),
                ("Memory ceiling batch x BW / (P x bytes)", f"{r.bandwidth_tokens_per_second:,.1f} tokens/s"),
                ("Time per decode step", format_si(r.step_time, "s")),
                ("Weights read per step", format_bytes(r.weight_bytes)),
                ("FLOP per token (2P)", format_si(r.flops_per_token, "FLOP")),
                ("Arithmetic intensity", f"{r.intensity:.3g} FLOP/B"),
                ("Attainable throughput", format_si(r.attainable_flops, "FLOP/s")),
                ("Utilisation of peak", percent(r.utilization)),
                ("Bound", "memory (weight reads)" if r.memory_bound else "compute"),
            ]
        )
        batches = np.unique(np.geomspace(1, 4096, 200).astype(int))
        tokens = [
            decode_ceiling(
                self.params_box.si_value(),
                self.precision.currentData(),
                self.bw_box.si_value(),
                self.peak_box.si_value(),
                int(b),
            ).tokens_per_second
            for b in batches
        ]
        self.curve.setData(batches.astype(float), np.asarray(tokens))
        log_ticks(self.plot, "bottom", 1.0, float(batches[-1]))
        log_ticks(self.plot, "left", min(tokens), max(tokens))
        self.marker.setData([float(self.batch_box.value())], [r.tokens_per_second])


class BatchSweepCalculator(CalculatorWidget):
    calculator_id = "batch-sweep"

    def __init__(self, devices: Sequence[Any] = CHAPTER_DEVICES):
        self.sweep = BatchSweepSection(devices)
        self.decode = DecodeSection(devices)
        super().__init__([self.sweep, self.decode])
