"""Polylines given in linear units, drawn in a log-log view's log10 coordinates by one plot item."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtGui import QPainterPath

NO_PEN = pg.mkPen(None)


class Line:
    """One polyline of a :class:`LogLines` item (with ``pairs``, separate two-point segments), in linear units."""

    __slots__ = ("x", "y", "pen", "pairs", "visible", "path")

    def __init__(self, pairs: bool = False):
        self.pairs = pairs
        self.x = self.y = np.empty(0)
        self.pen = NO_PEN
        self.visible = False
        self.path = QPainterPath()

    def getOriginalDataset(self) -> tuple[np.ndarray, np.ndarray]:
        """The points in linear units (as PlotDataItem.getOriginalDataset)."""
        return self.x, self.y

    def getData(self) -> tuple[np.ndarray, np.ndarray]:
        """The points as drawn: log10 of the linear units."""
        return np.log10(self.x), np.log10(self.y)

    def isVisible(self) -> bool:
        return self.visible


class LogLines(pg.GraphicsObject):
    """Polylines with a pen each, given in linear units and drawn in the log-log view's log10 coordinates, all
    painted by this one item.

    The roofline draws three lines per device; as pyqtgraph curves each was an item whose update and paint cost
    tens of microseconds of Python (bounds, path, pens), for every device on every precision change. Here an
    update builds a short QPainterPath and a paint is a loop of ``drawPath``."""

    PAD_PX = 3.0  # the widest pen (2.5 px) stroked over the path's bounds

    def __init__(self):
        super().__init__()
        self.lines: list[Line] = []
        self._bounds: QRectF | None = None

    def add(self, pairs: bool = False) -> Line:
        line = Line(pairs)
        self.lines.append(line)
        return line

    def set(self, line: Line, x, y, pen) -> None:
        x, y = np.asarray(x, float), np.asarray(y, float)
        line.x, line.y, line.pen = x, y, pen
        path = QPainterPath()
        points = list(zip(np.log10(x).tolist(), np.log10(y).tolist()))
        for i, (px, py) in enumerate(points):
            if i == 0 or (line.pairs and i % 2 == 0):
                path.moveTo(px, py)
            else:
                path.lineTo(px, py)
        line.path = path
        self._changed()

    def show(self, line: Line, visible: bool) -> None:
        if line.visible != visible:
            line.visible = visible
            self._changed()

    def _changed(self) -> None:
        self.prepareGeometryChange()
        self._bounds = None
        self.update()

    def viewTransformChanged(self) -> None:
        self.prepareGeometryChange()
        self._bounds = None

    def boundingRect(self) -> QRectF:
        if self._bounds is None:
            rect = QRectF()
            for line in self.lines:
                if line.visible:
                    rect = rect.united(line.path.boundingRect())
            px, py = self.pixelVectors()
            if rect.isValid() and px is not None:
                dx, dy = abs(px.x()) * self.PAD_PX, abs(py.y()) * self.PAD_PX
                rect = rect.adjusted(-dx, -dy, dx, dy)
            self._bounds = rect
        return self._bounds

    def paint(self, painter, *_args) -> None:
        for line in self.lines:
            if line.visible:
                painter.setPen(line.pen)
                painter.drawPath(line.path)
