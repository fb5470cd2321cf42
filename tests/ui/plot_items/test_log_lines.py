"""LogLines: polylines given in linear units, drawn (and bounded) in log10 coordinates by one item."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtGui import QPainterPath

from explorer.ui.plot_items.log_lines import LogLines


def test_lines_are_drawn_in_log10_and_hidden_lines_have_no_bounds(qapp):
    item = LogLines()
    roof, pairs = item.add(), item.add(pairs=True)
    assert item.boundingRect().isNull()
    pen = pg.mkPen("r")
    item.set(roof, [1, 10, 100], [10, 1000, 1000], pen)
    x, y = roof.getData()
    np.testing.assert_allclose(x, [0, 1, 2])
    np.testing.assert_allclose(y, [1, 3, 3])
    assert roof.getOriginalDataset()[0].tolist() == [1, 10, 100]
    assert item.boundingRect().isNull()  # not shown yet
    item.show(roof, True)
    assert item.boundingRect() == QRectF(0, 1, 2, 2)  # no view: no pixel padding
    item.set(pairs, [1, 10, 1000, 10000], [1, 1, 100, 100], pen)
    item.show(pairs, True)
    assert item.boundingRect() == QRectF(0, 0, 4, 3)
    kinds = [pairs.path.elementAt(i).type for i in range(pairs.path.elementCount())]
    move, line = QPainterPath.ElementType.MoveToElement, QPainterPath.ElementType.LineToElement
    assert kinds == [move, line, move, line]  # two separate segments
    assert [roof.path.elementAt(i).type for i in range(3)] == [move, line, line]  # one polyline
    item.show(roof, False)
    assert item.boundingRect() == QRectF(0, 0, 4, 2)
