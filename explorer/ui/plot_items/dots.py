"""Dots: a scatter of symbols of fixed pixel size for plots that move all their points on every edit.

pyqtgraph's ScatterPlotItem keeps a Python record per point and rebuilds it on every ``setData`` (styles, atlas
keys, per-point brushes): 0.3-0.6 ms for the roofline's 200 operators, on every precision change or model edit.
``Dots`` keeps numpy arrays, renders one pixmap per distinct (size, colour) with pyqtgraph's own symbol shapes,
and paints them all with one ``drawPixmapFragments`` from a pixmap of those symbols; when exported (SVG, PNG), symbols are drawn as vectors as pyqtgraph does.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import shiboken6
from pyqtgraph.graphicsItems.ScatterPlotItem import drawSymbol, renderSymbol
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QPainter, QPixmap


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
    def _atlas(self, ratio: float) -> tuple[QPixmap, np.ndarray]:
        """Every style's symbol side by side in one pixmap (rendered at ``ratio`` device pixels per pixel), and
        each style's source rectangle in it (device pixels): x, y, width, height."""
        key = (tuple(self._styles), ratio)
        if self.__dict__.get("_atlas_key") != key:
            pixmaps = []
            for size, rgba in self._styles:
                pixmap = self._pixmaps.get((size, rgba, ratio))
                if pixmap is None:
                    image = renderSymbol(self.symbol, size * ratio, pg.mkPen(self.pen), _brush(rgba))
                    pixmap = self._pixmaps[(size, rgba, ratio)] = QPixmap.fromImage(image)
                pixmaps.append(pixmap)
            width = sum(p.width() for p in pixmaps)
            atlas = QPixmap(max(width, 1), max((p.height() for p in pixmaps), default=1))
            atlas.fill(Qt.GlobalColor.transparent)
            rects, left = np.zeros((len(pixmaps), 4)), 0
            painter = QPainter(atlas)
            for i, p in enumerate(pixmaps):
                painter.drawPixmap(left, 0, p)
                rects[i] = (left, 0, p.width(), p.height())
                left += p.width()
            painter.end()
            self._atlas_key, self._atlas_pixmap, self._atlas_rects = key, atlas, rects
        return self._atlas_pixmap, self._atlas_rects

    def paint(self, painter, _option, widget=None) -> None:
        if not len(self.x):
            return
        t = painter.transform()
        xs = t.m11() * self.x + t.m21() * self.y + t.dx()
        ys = t.m12() * self.x + t.m22() * self.y + t.dy()
        painter.resetTransform()
        if self._exportOpts is not False:  # exports keep vector symbols
            for x, y, style in zip(xs.tolist(), ys.tolist(), self._style_of.tolist()):
                size, rgba = self._styles[style]
                painter.resetTransform()
                painter.translate(x, y)
                drawSymbol(painter, self.symbol, size, self.pen, _brush(rgba))
            return
        # one drawPixmapFragments call, in the points' order (the last on top), from one pixmap of the styles
        ratio = widget.devicePixelRatioF() if widget is not None else 1.0
        atlas, rects = self._atlas(ratio)
        shown = np.isfinite(xs) & np.isfinite(ys)  # NaN: not drawn
        n = int(shown.sum())
        if not n:
            return
        fragments = np.empty((n, 10))  # QPainter.PixmapFragment: x, y (centre), source rect, scale x/y, angle, alpha
        fragments[:, 0], fragments[:, 1] = xs[shown], ys[shown]
        fragments[:, 2:6] = rects[self._style_of[shown]]
        fragments[:, 6:8] = 1.0 / ratio
        fragments[:, 8], fragments[:, 9] = 0.0, 1.0
        first = shiboken6.wrapInstance(fragments.ctypes.data, QPainter.PixmapFragment)
        painter.drawPixmapFragments(first, n, atlas)

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
