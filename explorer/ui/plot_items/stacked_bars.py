"""Horizontal stacked bars in one plot item.

The energy panel stacks, per operator, the energy at each memory level and in arithmetic: about a thousand
rectangles in six colours. Drawn as one ``pg.BarGraphItem`` per colour, every edit paid for six (eleven with the
per-device totals) items' bookkeeping, bounds and pictures in Python; this item keeps the rectangles in one numpy
array and draws each colour with a single ``QPainter.drawRects`` straight from that memory.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import shiboken6
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QBrush

_NO_PEN = pg.mkPen(None)


class StackedBars(pg.GraphicsObject):
    """Bar ``i`` lies along y = i (``height`` thick); its parts run left to right from x = 0 in the order of
    the columns of ``set``'s segments, part ``j`` in ``colors[j]``. NaN parts draw nothing."""

    def __init__(self, height: float = 0.7):
        super().__init__()
        self.height = height
        self.widths = np.zeros((0, 0))  # (bars, parts), NaN as 0
        self.lefts = np.zeros((0, 0))  # where each part starts
        self._rects = np.zeros((0, 4))  # x, y, w, h per rectangle, part by part (QRectF's memory layout)
        self._brushes: list[QBrush] = []
        self._colors: tuple = ()
        self._bounds = QRectF()

    def set(self, segments: np.ndarray, colors, height: float | None = None) -> None:
        """``segments``: (bars, parts) widths; ``colors``: one per part (anything ``pg.mkBrush`` takes)."""
        if height is not None:
            self.height = height
        widths = np.nan_to_num(np.asarray(segments, dtype=float), nan=0.0)
        n, parts = widths.shape
        self.widths = widths
        self.lefts = np.cumsum(widths, axis=1) - widths
        rects = np.empty((parts, n, 4))
        rects[:, :, 0] = self.lefts.T
        rects[:, :, 1] = np.arange(n) - self.height / 2
        rects[:, :, 2] = widths.T
        rects[:, :, 3] = self.height
        self._rects = rects.reshape(-1, 4)
        if tuple(colors) != self._colors:
            self._colors = tuple(colors)
            self._brushes = [pg.mkBrush(c) for c in colors]
        self.prepareGeometryChange()
        right = float(self.widths.sum(axis=1).max(initial=0.0))
        self._bounds = QRectF(0.0, -self.height / 2, right, max(n - 1, 0) + self.height) if n else QRectF()
        self.update()

    def boundingRect(self) -> QRectF:
        return QRectF(self._bounds)

    def paint(self, painter, *_args) -> None:
        n = len(self.widths)
        if not n:
            return
        painter.setPen(_NO_PEN)
        address, stride = self._rects.ctypes.data, self._rects.strides[0]
        for j, brush in enumerate(self._brushes[: self.widths.shape[1]]):
            painter.setBrush(brush)
            painter.drawRects(shiboken6.wrapInstance(address + j * n * stride, QRectF), n)
        painter.setBrush(Qt.BrushStyle.NoBrush)
