"""The panels' axes lay out ticks and labels as pyqtgraph does (they do it in less Python)."""

from __future__ import annotations

import pyqtgraph as pg
import pytest
from PySide6.QtGui import QPainter, QPicture

from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.session.workspace import Assumptions, Workspace
from explorer.core.workload.templates import get_template
from explorer.ui.panels import PANELS
from explorer.ui.panels.plotting import new_plot, set_ticks
from explorer.ui.plot_items.axis import SiLogAxis

IDS = ("nvidia-a100-sxm4-80gb", "nvidia-h100-sxm5", "google-tpu-v4")


def specs(axis, generate):
    picture = QPicture()
    painter = QPainter(picture)
    try:
        result = generate(axis, painter)
    finally:
        painter.end()
    if result is None:
        return None
    (pen, a, b), ticks, texts = result
    return (
        (pen.color().rgba(), round(a.x(), 6), round(a.y(), 6), round(b.x(), 6), round(b.y(), 6)),
        [(p.color().rgba(), round(p1.x(), 6), round(p1.y(), 6), round(p2.x(), 6), round(p2.y(), 6))
         for p, p1, p2 in ticks],
        [(tuple(round(v, 6) for v in r.getRect()), int(flags), text) for r, flags, text in texts],
    )


def assert_same_layout(axis):
    ours = specs(axis, SiLogAxis.generateDrawSpecs)
    theirs = specs(axis, pg.AxisItem.generateDrawSpecs)
    assert ours == theirs
    # and the tick values themselves (pyqtgraph's numpy version)
    lo, hi = axis.range
    assert axis.tickValues(lo, hi, 600) == [(s, list(v)) for s, v in pg.AxisItem.tickValues(axis, lo, hi, 600)]


@pytest.mark.parametrize("precision", ["fp16", "int8"])
def test_every_panel_axis_is_laid_out_as_pyqtgraph_does(qtbot, precision):
    catalog = {d.id: d for d in load_shipped_devices()}
    gpt2 = get_template("gpt2")
    ws = Workspace(gpt2.build(), lookup=lambda ids: [catalog[i] for i in ids],
                   assumptions=Assumptions(precision=precision))
    ws.select_devices(IDS)
    axes = 0
    for panel_type in PANELS:
        panel = panel_type(ws)
        qtbot.addWidget(panel)
        panel.resize(1000, 700)
        panel.show()
        qtbot.waitExposed(panel)
        qtbot.waitUntil(lambda p=panel: not p.pending, timeout=2000)
        for item in panel.graphics.scene().items():
            if isinstance(item, SiLogAxis) and item.isVisible() and item.orientation in ("left", "bottom"):
                assert_same_layout(item)
                axes += 1
    assert axes >= 12  # roofline 2, energy 6, tiling, cost: every plot's left and bottom axes


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize(
    "lo, hi", [(0, 1), (0, 0.0037), (-3.5, 12.25), (0, 2.5e6), (1e-9, 3e-9), (-1.0, -1.0 + 1e-12), (5, 5)]
)
@pytest.mark.parametrize("side", ["left", "bottom"])
def test_ranges_and_sizes(qtbot, lo, hi, log, side):
    widget = pg.GraphicsLayoutWidget()
    qtbot.addWidget(widget)
    plot = new_plot("t", log_x=log, log_y=log)
    widget.addItem(plot)
    widget.resize(640, 380)
    widget.show()
    qtbot.waitExposed(widget)
    axis = plot.getAxis(side)
    plot.setLabel(side, "energy", units="J")
    (plot.setXRange if side == "bottom" else plot.setYRange)(lo, hi, padding=0)
    plot.vb.updateMatrix()
    qtbot.wait(1)
    assert_same_layout(axis)


def plot_on_screen(qtbot) -> tuple[pg.GraphicsLayoutWidget, pg.PlotItem]:
    """A panel-style plot in a 500 x 300 window on screen (keep the window: it owns the plot)."""
    widget = pg.GraphicsLayoutWidget()
    qtbot.addWidget(widget)
    plot = new_plot()
    widget.addItem(plot)
    widget.resize(500, 300)
    widget.show()
    qtbot.waitExposed(widget)
    return widget, plot


def test_named_ticks(qtbot):
    _window, plot = plot_on_screen(qtbot)
    set_ticks(plot.getAxis("left"), [[(i, f"layer number {i}") for i in range(40)]])
    plot.setYRange(-0.5, 39.5, padding=0)
    plot.vb.updateMatrix()
    assert_same_layout(plot.getAxis("left"))


def test_a_name_wider_than_its_fixed_width_axis_is_elided_not_dropped(qtbot):
    """pyqtgraph leaves out a tick label that does not fit; on a category axis of fixed width (``name_axis``)
    that left a device's bar without a name. Ours elides it; everything else is laid out as pyqtgraph does."""
    from explorer.ui.panels.plotting import name_axis

    _window, plot = plot_on_screen(qtbot)
    axis = name_axis(plot, 90)
    qtbot.waitUntil(lambda: axis.geometry().width() == 90, timeout=2000)  # the plot laid out again
    set_ticks(axis, [[(0, "GPU A"), (1, "NVIDIA Tesla V100 SXM2 (32 GB)")]])
    plot.setYRange(-0.5, 1.5, padding=0)
    plot.vb.updateMatrix()
    ours = specs(axis, SiLogAxis.generateDrawSpecs)
    theirs = specs(axis, pg.AxisItem.generateDrawSpecs)
    assert [t[2] for t in theirs[2]] == ["GPU A"]  # pyqtgraph: the long name is not drawn at all
    texts = [t[2] for t in ours[2]]
    assert texts[0] == "GPU A" and texts[1].endswith("\u2026") and "NVIDIA Tesla V100 SXM2".startswith(texts[1][:6])
    box = axis.boundingRect()
    assert all(box.contains(pg.QtCore.QRectF(*rect)) for rect, _f, _t in ours[2])
    assert ours[:2] == theirs[:2]  # same axis line and ticks
