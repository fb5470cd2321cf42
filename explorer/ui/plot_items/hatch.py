"""Hatching over chosen parts of a :class:`StackedBars`: the energy panel marks the bar segments whose figures
are Horowitz's 45 nm defaults rather than the device's own (issue 23), so that bars drawn from the same default
energies do not read as a comparison of chips.

The hatch is drawn in device pixels (the view's transform mapped away first): a pattern brush under
pyqtgraph's data transform would be stretched by the scale of the joule axis.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QPen

from .stacked_bars import StackedBars

HATCH_COLOR = QColor(40, 40, 40, 200)


def hatch_brush() -> QBrush:
    """The brush of a marked segment (the panel's legend swatch uses the same)."""
    return QBrush(HATCH_COLOR, Qt.BrushStyle.BDiagPattern)


class HatchOverlay(pg.GraphicsObject):
    """Draws diagonal hatching, and a thin outline, over part ``j`` of bar ``i`` of ``bars`` where
    ``marks[i, j]`` is True; follows ``bars`` whenever :meth:`set` is called after it."""

    def __init__(self, bars: StackedBars):
        super().__init__()
        self.bars = bars
        self.marks = np.zeros((0, 0), dtype=bool)
        self.setZValue(bars.zValue() + 1)

    def set(self, marks: np.ndarray) -> None:
        """``marks``: (bars, parts) bool, aligned with the bars' segments (missing rows or columns: unmarked)."""
        marks = np.asarray(marks, dtype=bool)
        shape = self.bars.widths.shape
        out = np.zeros(shape, dtype=bool)
        r, c = min(shape[0], marks.shape[0] if marks.ndim == 2 else 0), min(shape[1], marks.shape[1] if marks.ndim == 2 else 0)
        out[:r, :c] = marks[:r, :c]
        self.marks = out & (self.bars.widths > 0)
        self.prepareGeometryChange()
        self.update()

    def marked_rects(self) -> list[QRectF]:
        """The data-space rectangles hatched now (for tests and tooltips)."""
        b = self.bars
        h = b.height
        return [QRectF(float(b.lefts[i, j]), i - h / 2, float(b.widths[i, j]), h) for i, j in zip(*np.nonzero(self.marks))]

    def boundingRect(self) -> QRectF:
        return self.bars.boundingRect()

    def paint(self, painter, *_args) -> None:
        rects = self.marked_rects()
        if not rects:
            return
        transform = painter.transform()
        painter.save()
        painter.resetTransform()
        painter.setPen(QPen(HATCH_COLOR, 0))
        painter.setBrush(hatch_brush())
        for rect in rects:
            painter.drawRect(transform.mapRect(rect))
        painter.restore()
