"""Bars: a BarGraphItem whose bounds are computed once per change and not padded when nothing is stroked."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QRectF

from explorer.ui.plot_items.bars import Bars


def test_bounds_follow_the_data_and_are_unpadded_without_a_pen(qtbot):
    view = pg.PlotWidget()
    qtbot.addWidget(view)
    bars = Bars(x0=[0.0, 1.0], y=[0.0, 1.0], width=[2.0, 3.0], height=0.5, pen=pg.mkPen(None))
    outlined = Bars(x0=[0.0, 1.0], y=[0.0, 1.0], width=[2.0, 3.0], height=0.5, pen=pg.mkPen("k", width=2))
    view.addItem(bars)
    view.addItem(outlined)
    view.setRange(xRange=(0, 10), yRange=(-1, 2), padding=0)
    view.resize(400, 300)
    view.show()
    qtbot.waitExposed(view)
    assert bars.boundingRect() == QRectF(0.0, -0.25, 4.0, 1.5)  # the rectangles exactly: no pen, no padding
    assert outlined.boundingRect().contains(QRectF(0.0, -0.25, 4.0, 1.5))
    assert outlined.boundingRect().width() > 4.0  # a stroked outline is padded, as pyqtgraph does
    bars.setOpts(width=[5.0, 3.0])  # new data: new bounds
    assert bars.boundingRect() == QRectF(0.0, -0.25, 5.0, 1.5)
