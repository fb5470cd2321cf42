"""Hover tooltips and click-to-select through synthesized mouse events on the charts' widgets (not by calling the
describe functions): the pickers must live as long as their plots."""

from __future__ import annotations

import gc

import numpy as np
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QApplication
from test_panels import make, ws  # noqa: F401 - the fixture

from explorer.ui.panels import CostPanel, EnergyPanel, RooflinePanel, TilingPanel


def _view_pos(panel, plot, x: float, y: float) -> QPoint:
    scene = plot.vb.mapViewToScene(QPointF(x, y))
    return panel.graphics.mapFromScene(scene)


def hover(panel, plot, x: float, y: float) -> str:
    """Move the mouse to data point (x, y) of ``plot`` and return the tooltip the plot shows."""
    pos = _view_pos(panel, plot, x, y)
    for p in (pos + QPoint(3, 3), pos):  # a move onto the point from beside it
        event = QMouseEvent(QMouseEvent.Type.MouseMove, QPointF(p), QPointF(panel.graphics.viewport().mapToGlobal(p)),
                            Qt.MouseButton.NoButton, Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier)
        QApplication.sendEvent(panel.graphics.viewport(), event)
    return plot.vb.toolTip()


def click(qtbot, panel, plot, x: float, y: float) -> None:
    qtbot.mouseClick(panel.graphics.viewport(), Qt.MouseButton.LeftButton, pos=_view_pos(panel, plot, x, y))


def test_hovering_a_roofline_point_shows_its_tooltip(qtbot, ws):  # noqa: F811
    panel = make(qtbot, RooflinePanel, ws)
    gc.collect()  # a picker nobody keeps would be gone now
    x, y = panel.points.getData()
    tip = hover(panel, panel.plot, x[0], y[0])
    assert tip and tip == panel.describe_hover(panel._hover_key(x[0], y[0]))


def test_hovering_and_clicking_an_energy_bar(qtbot, ws):  # noqa: F811
    panel = make(qtbot, EnergyPanel, ws)
    gc.collect()
    totals = np.nansum(panel._bars()[1], axis=1)
    i = int(np.argmax(totals))
    (x_lo, x_hi), _ = panel.per_layer.vb.viewRange()
    x = min(totals[i] * 0.5, (x_lo + x_hi) / 2)
    y = panel.per_layer.vb.viewRange()[1]
    key = next(y_ for y_ in np.linspace(y[0], y[1], 400) if panel._locate_bar(x, y_) == i)
    tip = hover(panel, panel.per_layer, x, key)
    assert tip == panel._describe_bar(i)
    click(qtbot, panel, panel.per_layer, x, key)
    assert ws.focused_layer == i


def test_hovering_a_cost_bar(qtbot, ws):  # noqa: F811
    panel = make(qtbot, CostPanel, ws)
    gc.collect()
    (x_lo, x_hi), (y_lo, y_hi) = panel.per_tflops.vb.viewRange()
    points = [(x, y) for x in np.linspace(x_lo, x_hi, 40) for y in np.linspace(y_lo, y_hi, 40)
              if panel._locate(x, y) is not None]
    assert points, "no bar under any point of the chart"
    x, y = points[len(points) // 2]
    assert hover(panel, panel.per_tflops, x, y) == panel._describe(panel._locate(x, y), "per_tflops")


def test_hovering_and_clicking_a_tiling_bar(qtbot, ws):  # noqa: F811
    panel = make(qtbot, TilingPanel, ws)
    gc.collect()
    plot = panel.bars.getViewBox().parentItem()
    (x_lo, x_hi), (y_lo, y_hi) = plot.vb.viewRange()
    last = len(panel.view.gemm_rows) - 1  # the down projection (layer 3), not the layer in focus
    x = x_lo + 0.02 * (x_hi - x_lo)
    assert hover(panel, plot, x, last) == panel._describe_bar(last)
    click(qtbot, panel, plot, x, last)
    assert ws.focused_layer == int(panel.view.gemm_layer[last])
