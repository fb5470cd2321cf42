"""The trace timeline (lanes, rectangles, hover, x-only zoom) and the top-kernels table model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtWidgets import QApplication, QToolTip

from explorer.core.traces import Trace, TraceEvent, load_trace, roofline_points, top_kernels
from explorer.ui.traces import KernelTableModel, TimelineView
from explorer.ui.traces.timeline_view import assign_rows, describe

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "traces"


@pytest.fixture
def view(qtbot):
    widget = TimelineView()
    qtbot.addWidget(widget)
    widget.resize(900, 400)
    return widget


def _rects(bar) -> int:
    return len(bar.opts["x0"])


def test_torq_timeline_lanes_and_rectangles(view):
    trace = load_trace(FIXTURES / "torq_trace.csv", clock_hz=800e6)
    view.set_trace(trace)
    ticks = view.plot.getAxis("left")._tickLevels[0]
    assert [label for _, label in ticks] == ["DMA in", "compute", "DMA out"]
    assert set(view.bars) == {"dma_in", "compute", "dma_out"}
    assert {c: _rects(b) for c, b in view.bars.items()} == {"dma_in": 4, "compute": 3, "dma_out": 3}
    compute = view.bars["compute"].opts
    assert np.allclose(compute["x0"], [2e-6, 7e-6, 12e-6])
    assert np.allclose(compute["width"], [5e-6, 5e-6, 1.25e-6])
    assert np.all(compute["y0"] >= 1) and np.all(compute["y0"] + compute["height"] <= 2)  # lane 1
    # the whole trace is in view, with the y range fixed to the lanes
    (x0, x1), (y0, y1) = view.plot.getViewBox().viewRange()
    assert x0 <= 0 and x1 >= 14e-6 and (y0, y1) == (0, 3)
    assert "800 MHz" in view.note.text()


def test_hit_testing_and_hover_text(view):
    view.set_trace(load_trace(FIXTURES / "torq_trace.csv", clock_hz=800e6))
    event = view.event_at(8e-6, 1.5)  # inside S1 (fully_connected, 7..12 us) on the compute lane
    assert event.name == "fully_connected" and event.location == 'loc("fc1")'
    assert view.event_at(8e-6, 0.5).location == 'loc("fc2")'  # DI3 on the DMA-in lane, 8..9.25 us
    assert view.event_at(1.7e-6, 2.5) is None  # nothing on DMA out before 7 us
    assert view.event_at(8e-6, 7.0) is None
    text = describe(event)
    assert "start: 7 \u00b5s" in text and "duration: 5 \u00b5s" in text and "lane: compute" in text


def test_mouse_move_reports_the_event_under_the_cursor(view, qtbot):
    view.set_trace(load_trace(FIXTURES / "torq_trace.csv", clock_hz=800e6))
    view.show()
    qtbot.waitExposed(view)
    box = view.plot.getViewBox()
    seen = []
    view.eventHovered.connect(seen.append)
    view._on_mouse_moved(box.mapViewToScene(QPointF(3e-6, 1.5)))
    view._on_mouse_moved(box.mapViewToScene(QPointF(13.6e-6, 1.5)))  # compute lane idle after 13.25 us
    QToolTip.hideText()
    view.close()
    QApplication.processEvents()
    assert [e.name if e else None for e in seen] == ["conv2d", None]


def test_zoom_and_pan_move_time_only(view):
    view.set_trace(load_trace(FIXTURES / "torq_trace.csv", clock_hz=800e6))
    box = view.plot.getViewBox()
    assert box.state["mouseEnabled"] == [True, False]
    before_y = box.viewRange()[1]
    box.scaleBy(x=0.25, y=0.25)
    box.translateBy(x=1e-6)
    (x0, x1), _y = box.viewRange()
    assert x1 - x0 < 5e-6
    assert box.state["mouseEnabled"][1] is False and before_y == [0, 3]


def test_nested_cpu_ops_stack_in_sub_rows(view):
    trace = load_trace(FIXTURES / "torch_cpu_trace.json")
    rows = assign_rows(trace.events)
    by_name = {}
    for event, row in zip(trace.events, rows):
        by_name.setdefault(event.name, row)
    assert by_name["conv1"] == 0  # the record_function range
    assert by_name["aten::conv2d"] == 1 and by_name["aten::convolution"] == 2
    view.set_trace(trace)
    assert sum(_rects(b) for b in view.bars.values()) == len(trace.events) == 150
    first_conv = next(e for e in trace.events if e.name == "aten::conv2d")
    y = (0.08 + 1.5 * (0.84 / view._rows_per_lane[0]))  # middle of sub-row 1 of lane 0
    assert view.event_at(first_conv.start_s + first_conv.duration_s / 2, y) == first_conv


def test_many_events_draw_as_one_item_per_category(view):
    events = tuple(TraceEvent(f"k{i % 7}", f"stream {i % 4}", i * 1e-6, 0.8e-6,
                              "compute" if i % 3 else "memcpy") for i in range(10_000))
    view.set_trace(Trace("chrome", events, tuple(f"stream {k}" for k in range(4))))
    assert len(view.bars) == 2
    assert sum(_rects(b) for b in view.bars.values()) == 10_000
    assert view.event_at(5000.5e-6, 0.5).name == f"k{5000 % 7}"
    view.set_trace(None)
    assert view.bars == {}


def test_kernel_table_headers_units_and_values(qtbot):
    points = roofline_points(load_trace(FIXTURES / "ncu_raw.csv"), 10e12, 1e12)
    model = KernelTableModel(top_kernels(points, n=10))
    headers = [model.headerData(c, Qt.Orientation.Horizontal) for c in range(model.columnCount())]
    assert headers == ["Kernel", "Calls", "Total time [ms]", "Mean time [ms]", "Share [%]",
                       "Achieved [TFLOP/s]", "Intensity [FLOP/B]", "Roof [TFLOP/s]", "Efficiency [%]", "Bound",
                       "Gap to roof [\u00d7]"]
    assert model.rowCount() == 4
    row = [model.data(model.index(0, c)) for c in range(model.columnCount())]
    assert row == ["ampere_sgemm_128x64_nn", "2", "2.25", "1.12", "66.2", "3.56", "20", "10", "35.6",
                   "compute", "2.81"]
    add = [model.data(model.index(3, c)) for c in range(model.columnCount())]
    assert add[9] == "memory" and add[8] == "48.0"
    assert model.data(model.index(0, 2), KernelTableModel.SORT_ROLE) == pytest.approx(2.25e-3)
    model.set_top_kernels(None)
    assert model.rowCount() == 0


def test_kernel_table_unknown_rates_show_a_dash():
    trace = load_trace(FIXTURES / "runtime.csv")
    model = KernelTableModel(top_kernels(roofline_points(trace, 1e12, 1e11)))
    assert model.headerData(2, Qt.Orientation.Horizontal) == "Total time [ms]"
    assert model.data(model.index(0, 5)) == "\u2014" and model.data(model.index(0, 9)) == "unknown"
