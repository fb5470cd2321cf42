"""Render the screenshots used in docs/traces.md from the committed trace fixtures.

Run from the repository root:  .venv/bin/python docs/screenshots/make_trace_shots.py

* ``traces-roofline.png``: the real torch.profiler CPU capture (tests/fixtures/traces/torch_cpu_trace.json)
  on the roofline of an illustrative single-core CPU (100 GFLOP/s, 20 GB/s). Each measured op (FLOPs
  counted by the profiler, over its measured time) sits below the point the analytical model
  (explorer.core.analysis.evaluate on the same network) predicts for its layer: the roof at the layer's
  FLOP/byte. A dashed line joins the two.
* ``traces-timeline.png``: the Torq compile-time trace (synthetic fixture, 800 MHz) on the
  timeline, lanes DMA in / compute / DMA out, with the top-kernels table below.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QApplication, QHeaderView, QLabel, QTableView, QVBoxLayout, QWidget

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from explorer.core.analysis.evaluate import evaluate
from explorer.core.hardware.device_file import device_from_dict
from explorer.core.traces import layer_work, load_trace, overlap_summary, roofline_points, top_kernels
from explorer.core.units import format_si
from explorer.core.workload.layers import Context
from explorer.core.workload.model import load_model_file
from explorer.ui.traces import KernelTableModel, TimelineView

FIXTURES = ROOT / "tests" / "fixtures" / "traces"
OUT = ROOT / "docs" / "screenshots"
PEAK, BANDWIDTH = 100e9, 20e9  # illustrative single CPU core: FLOP/s, byte/s


def cpu_model() -> dict[str, tuple[float, float]]:
    """(FLOPs, bytes) per layer from the analytical model of the profiled network (batch 4, fp32)."""
    cpu = device_from_dict({"id": "cpu", "name": "one core", "vendor": "illustrative", "kind": "cpu",
                            "peak": {"fp32": "100 GFLOP/s"},
                            "memory": [{"name": "DRAM", "role": "offchip", "capacity": "16 GB",
                                        "bandwidth": "20 GB/s"}]})
    model = load_model_file(FIXTURES / "smallnet.json")
    return layer_work(evaluate(model, [cpu], "fp32", Context(batch=4)))


def roofline_picture() -> QWidget:
    work = cpu_model()
    points = roofline_points(load_trace(FIXTURES / "torch_cpu_trace.json"), PEAK, BANDWIDTH, model=work)
    plot = pg.PlotWidget(background="w")
    plot.setLogMode(x=True, y=True)
    plot.setLabel("bottom", "arithmetic intensity [FLOP/byte]")
    plot.setLabel("left", "performance [FLOP/s]")
    plot.setTitle("torch.profiler CPU capture: measured ops vs the model's prediction per layer")
    plot.addLegend(offset=(10, 10))
    intensity = np.logspace(-1, 2, 200)
    plot.plot(intensity, np.minimum(PEAK, BANDWIDTH * intensity), pen=pg.mkPen("k", width=2),
              name=f"roof: {format_si(PEAK, 'FLOP/s')}, {format_si(BANDWIDTH, 'B/s')}")
    ok = points.plottable
    modeled = points.attainable_flops_per_s
    for i in np.flatnonzero(ok):
        plot.plot([points.intensity[i]] * 2, [points.achieved_flops_per_s[i], modeled[i]],
                  pen=pg.mkPen("#999999", width=1, style=pg.QtCore.Qt.PenStyle.DashLine))
    plot.plot(points.intensity[ok], modeled[ok], pen=None, symbol="s", symbolSize=11,
              symbolBrush=pg.mkBrush("#ffffff"), symbolPen=pg.mkPen("#d62728", width=2),
              name="modeled (roof at the layer's intensity)")
    plot.plot(points.intensity[ok], points.achieved_flops_per_s[ok], pen=None, symbol="o", symbolSize=9,
              symbolBrush=pg.mkBrush("#1f77b4"), name="measured (profiler FLOPs / measured time)")
    label_anchor = {"fc1": (0, 1), "fc2": (0, 0)}  # fc1 and fc2 sit almost on top of each other
    for layer in ("conv1", "fc1", "fc2", "fc3"):
        idx = [i for i in np.flatnonzero(ok) if points.matched_layers[i] == layer]
        if idx:
            label = pg.TextItem(layer, color="#333333", anchor=label_anchor.get(layer, (0, 0.5)))
            label.setPos(np.log10(points.intensity[idx[0]]) + 0.04, np.log10(modeled[idx[0]]))
            plot.addItem(label)
    ticks = {"bottom": [(-1, "0.1"), (0, "1"), (1, "10"), (2, "100")],
             "left": [(8, "100 M"), (9, "1 G"), (10, "10 G"), (11, "100 G")]}
    for side, major in ticks.items():
        axis = plot.getAxis(side)
        axis.enableAutoSIPrefix(False)
        axis.setTicks([major, []])
    plot.getAxis("left").setWidth(60)
    plot.setXRange(-1, 2, padding=0.02)
    plot.setYRange(8, 11.3)
    plot.resize(900, 560)
    return plot


def timeline_picture() -> QWidget:
    trace = load_trace(FIXTURES / "torq_trace.csv", clock_hz=800e6)
    model = {"conv1": (4e6, 2e5), "fc1": (5e5, 2.5e5), "fc2": (1e5, 5e4)}
    points = roofline_points(trace, 1e12, 1e11, model=model)
    summary = overlap_summary(trace)
    widget = QWidget()
    widget.setStyleSheet("background: white")
    layout = QVBoxLayout(widget)
    view = TimelineView()
    view.set_trace(trace)
    layout.addWidget(view, 3)
    layout.addWidget(QLabel(
        f"DMA {format_si(summary.dma_s, 's')}, compute {format_si(summary.compute_s, 's')}, "
        f"overlapped {format_si(summary.overlap_s, 's')} "
        f"({summary.hidden_dma_fraction:.0%} of DMA hidden), idle {format_si(summary.idle_s, 's')}"))
    table = QTableView()
    table.setModel(KernelTableModel(top_kernels(points, by="location")))
    table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    table.verticalHeader().setVisible(False)
    layout.addWidget(table, 2)
    widget.resize(1100, 700)
    return widget


def main() -> None:
    app = QApplication.instance() or QApplication([])
    OUT.mkdir(parents=True, exist_ok=True)
    for name, make in (("traces-roofline.png", roofline_picture), ("traces-timeline.png", timeline_picture)):
        widget = make()
        widget.show()
        app.processEvents()
        widget.grab().save(str(OUT / name))
        widget.close()
        widget.deleteLater()  # destroy the Qt objects now, not during interpreter shutdown
        app.processEvents()
        print(f"wrote {OUT / name}")


if __name__ == "__main__":
    main()
