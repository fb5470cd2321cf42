"""``pg.BarGraphItem`` with its bounding rectangle cached.

It reads two of ``BarGraphItem``'s private attributes (``_sharedPen``, ``_pens``) to know that nothing is
stroked; tests/ui/plot_items/test_pyqtgraph_internals.py checks they are still there.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt


class Bars(pg.BarGraphItem):
    """``pg.BarGraphItem`` that computes its bounding rectangle once per change of data, pen or view.

    Qt asks an item for its bounds many times per paint, and pyqtgraph's recomputes them each time in Python,
    padded by half a pixel (derived from the view transform) even for bars drawn without a pen."""

    _bounds = None

    def setOpts(self, **opts):
        self._bounds = None
        super().setOpts(**opts)

    def viewTransformChanged(self):
        self._bounds = None
        super().viewTransformChanged()

    def pixelPadding(self):
        pen = self._sharedPen
        if self._pens is None and pen is not None and pen.style() == Qt.PenStyle.NoPen:
            return 0.0  # nothing is stroked outside the rectangles
        return super().pixelPadding()

    def boundingRect(self):
        if self._bounds is None:
            self._bounds = super().boundingRect()
        return QRectF(self._bounds)
