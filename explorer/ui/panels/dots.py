"""Dots: a scatter of symbols of fixed pixel size for plots that move all their points on every edit.

pyqtgraph's ScatterPlotItem keeps a Python record per point and rebuilds it on every ``setData`` (styles, atlas
keys, per-point brushes): 0.3-0.6 ms for the roofline's 200 operators, on every precision change or model edit.
``Dots`` keeps numpy arrays, renders one pixmap per distinct (size, colour) with pyqtgraph's own symbol shapes,
and paints a loop of ``drawPixmap``; when exported (SVG, PNG), symbols are drawn as vectors as pyqtgraph does.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from pyqtgraph.graphicsItems.ScatterPlotItem import drawSymbol, renderSymbol
from PySide6.QtCore import QPointF, QRectF, Signal
from PySide6.QtGui import QBrush, QColor, QPixmap


def _brush(rgba: tuple | None) -> QBrush:
    return QBrush(QColor(*rgba)) if rgba is not None else QBrush()  # None: no fill


class Dots(pg.GraphicsObject):
    """Points at view coordinates ``x``, ``y``; each with a size in pixels and an RGBA colour (or the item's
    defaults), one pen for all, and an optional data value. ``sigClicked(item, data values, event)`` is emitted
    for a left click on points (topmost last)."""

    sigClicked = Signal(object, object, object)

    def __init__(self, symbol: str = "o", size: float = 10.0, pen=None, color=None):
        super().__init__()
        self.symbol = symbol
        self.default_size = float(size)
        self.pen = pg.mkPen(pen) if pen is not None else pg.mkPen(None)
        self.default_color = tuple(color) if color is not None else None  # None: no fill
        self.x = self.y = self.sizes = np.empty(0)
        self.values = np.empty(0)
        self._styles: list[tuple[float, tuple | None]] = []  # distinct (size, rgba) of the points
        self._style_of = np.empty(0, dtype=int)  # per point: its index in _styles
        self._pixmaps: dict[tuple, QPixmap] = {}
        self._bounds: QRectF | None = None

    # -- data
    def setData(self, x, y, size=None, colors=None, data=None) -> None:
        """``size``: pixels, one or per point; ``colors``: an n x 4 array of RGBA (0-255), or None for the
        default colour; ``data``: one value per point (default: its index)."""
        self.x, self.y = np.asarray(x, float).ravel(), np.asarray(y, float).ravel()
        n = len(self.x)
        self.sizes = np.broadcast_to(np.asarray(self.default_size if size is None else size, float), (n,)).copy()
        self.values = np.arange(n) if data is None else np.asarray(data)
        # distinct (size, colour) pairs as one integer each: the size in 1/64 px, then the RGBA bytes
        code = np.round(self.sizes * 64).astype(np.int64) << 32
        if colors is not None and n:
            rgba = np.asarray(colors).reshape(n, 4).astype(np.int64) & 0xFF
            code |= (rgba[:, 0] << 24) | (rgba[:, 1] << 16) | (rgba[:, 2] << 8) | rgba[:, 3]
        unique, style_of = np.unique(code, return_inverse=True)
        self._style_of = style_of.ravel()
        self._styles = [
            (
                (c >> 32) / 64,
                self.default_color if colors is None or not n
                else ((c >> 24) & 0xFF, (c >> 16) & 0xFF, (c >> 8) & 0xFF, c & 0xFF),
            )
            for c in unique.tolist()
        ]
        self.prepareGeometryChange()
        self._bounds = None
        self.update()

    def getData(self) -> tuple[np.ndarray, np.ndarray]:
        return self.x, self.y

    def pixel_sizes(self) -> np.ndarray:
        return self.sizes

    # -- geometry
    def viewTransformChanged(self) -> None:
        self.prepareGeometryChange()
        self._bounds = None

    def boundingRect(self) -> QRectF:
        if self._bounds is None:
            finite = np.isfinite(self.x) & np.isfinite(self.y)
            px, py = self.pixelVectors()
            if not finite.any() or px is None:
                self._bounds = QRectF()
            else:
                x, y = self.x[finite], self.y[finite]
                half = float(self.sizes[finite].max()) / 2 + self.pen.widthF() + 1
                dx, dy = abs(px.x()) * half, abs(py.y()) * half
                self._bounds = QRectF(x.min() - dx, y.min() - dy, x.max() - x.min() + 2 * dx,
                                      y.max() - y.min() + 2 * dy)
        return self._bounds

    def pointsAt(self, pos: QPointF) -> list[int]:
        """Indices of the points whose symbol covers ``pos`` (view coordinates), topmost last."""
        px, py = self.pixelVectors()
        if px is None or not len(self.x):
            return []
        half = self.sizes / 2
        hit = (np.abs(self.x - pos.x()) <= half * abs(px.x())) & (np.abs(self.y - pos.y()) <= half * abs(py.y()))
        return np.flatnonzero(hit).tolist()

    # -- painting
    def _pixmap(self, style: int, ratio: float) -> QPixmap:
        size, rgba = self._styles[style]
        key = (size, rgba, ratio)
        pixmap = self._pixmaps.get(key)
        if pixmap is None:
            image = renderSymbol(self.symbol, size * ratio, pg.mkPen(self.pen), _brush(rgba))
            pixmap = self._pixmaps[key] = QPixmap.fromImage(image)
            pixmap.setDevicePixelRatio(ratio)
        return pixmap

    def paint(self, painter, _option, widget=None) -> None:
        if not len(self.x):
            return
        t = painter.transform()
        xs = (t.m11() * self.x + t.m21() * self.y + t.dx()).tolist()
        ys = (t.m12() * self.x + t.m22() * self.y + t.dy()).tolist()
        painter.resetTransform()
        if self._exportOpts is not False:  # exports keep vector symbols
            for x, y, style in zip(xs, ys, self._style_of.tolist()):
                size, rgba = self._styles[style]
                painter.resetTransform()
                painter.translate(x, y)
                drawSymbol(painter, self.symbol, size, self.pen, _brush(rgba))
            return
        ratio = widget.devicePixelRatioF() if widget is not None else 1.0
        pixmaps = [self._pixmap(i, ratio) for i in range(len(self._styles))]
        halves = [p.width() / ratio / 2 for p in pixmaps]
        draw = painter.drawPixmap
        for x, y, style in zip(xs, ys, self._style_of.tolist()):
            if x == x and y == y:  # NaN: not drawn
                h = halves[style]
                draw(QPointF(x - h, y - h), pixmaps[style])

    # -- interaction
    def mouseClickEvent(self, ev) -> None:
        if ev.button() != pg.QtCore.Qt.MouseButton.LeftButton:
            return
        found = self.pointsAt(ev.pos())
        if found:
            ev.accept()
            self.sigClicked.emit(self, [self.values[i] for i in found], ev)
        else:
            ev.ignore()
