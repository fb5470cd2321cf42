"""The plot items of one device on the roofline and the panel's CSV table (split from ``roofline.py``)."""

from __future__ import annotations

import functools
import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtGui import QPainterPath, QPen

from .plotting import DASH, NO_PEN, PinnedText, changed, device_color, opaque


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


class DeviceItems:
    """The lines of one device slot in the shared :class:`LogLines`, created once and reused: the roof
    (main-memory slope and the ceiling at the precision), the on-chip slopes and the other precisions' ceilings
    (as segment pairs); and its ridge label."""

    def __init__(self, plot: pg.PlotItem, lines: LogLines):
        self.lines = lines
        self.roof = lines.add()
        self.levels = lines.add(pairs=True)
        self.others = lines.add(pairs=True)
        self.ridge_label = PinnedText(anchor=(1.05, -0.1))  # below and left of the ridge point
        plot.addItem(self.ridge_label, ignoreBounds=True)

    def hide(self) -> None:
        for line in (self.roof, self.levels, self.others):
            self.lines.show(line, False)
        self.ridge_label.setVisible(False)


def segments(pieces) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate 2-point segments for a ``connect='pairs'`` curve."""
    return (
        np.array([float(v) for x, _ in pieces for v in (x[0], x[-1])]),
        np.array([float(v) for _, y in pieces for v in (y[0], y[-1])]),
    )


@functools.cache
def _pen(color, width: float, dashed: bool = False) -> QPen:
    pen = pg.mkPen(color, width=width)
    if dashed:
        pen.setDashPattern([8, 6])  # long dashes: cheap to paint
    return pen


@functools.cache
def _faint_pen(color) -> QPen:
    """The pen of another precision's ceiling: the device's colour, pale (opaque: cheap to paint)."""
    return _pen(opaque(pg.mkColor(color).getRgb()[:3], 0.4), 1.0)


def draw_device(items: DeviceItems, dr, index: int, focused: bool) -> None:
    """Draw one device's roof, on-chip slopes, other precisions' ceilings and ridge label."""
    color = device_color(index)
    width = 2.5 if focused else 1.5
    main = dr.slopes[0] if dr.slopes else None
    if dr.ceiling is not None and main is not None:
        x = np.array([main.x[0], dr.ridge, dr.ceiling.x[-1]]) if np.isfinite(dr.ridge) else main.x
        y = np.array([main.y[0], dr.peak, dr.peak]) if np.isfinite(dr.ridge) else main.y
    elif dr.ceiling is not None:
        x, y = dr.ceiling.x, dr.ceiling.y
    elif main is not None:
        x, y = main.x, main.y
    else:
        x, y = np.empty(0), np.empty(0)
    lines = items.lines
    if changed(items, "roof", (x, y, color, width)):
        lines.set(items.roof, x, y, _pen(color, width))
    lines.show(items.roof, len(x) > 0)
    lx, ly = segments([(sl.x, sl.y) for sl in dr.slopes[1:]])
    if changed(items, "levels", (lx, ly, color)):
        lines.set(items.levels, lx, ly, _pen(color, 1.0, dashed=True))
    lines.show(items.levels, len(lx) > 0)
    # a precision with the same peak lies under the roof: drawn pale over it, it would split the roof's line
    ox, oy = segments([(c.x, c.y) for c in dr.other_ceilings if c.flops != dr.peak])
    if changed(items, "others", (ox, oy, color)):
        lines.set(items.others, ox, oy, _faint_pen(color))
    lines.show(items.others, len(ox) > 0)
    # only the device in focus labels its ridge (every ridge is in the legend and the hover): the others' labels
    # are not typeset until their device comes into focus
    shown = focused and math.isfinite(dr.ridge) and math.isfinite(dr.peak)
    if shown and changed(items.ridge_label, "text", (dr.ridge, dr.peak, color)):
        items.ridge_label.setText(f"ridge {dr.ridge:.3g} FLOP/B", color=color)
        items.ridge_label.setPos(math.log10(dr.ridge), math.log10(dr.peak))
    items.ridge_label.setVisible(shown)


def roofline_csv(r):
    """The CSV header and rows of a roofline result (None: the header only)."""
    header = [
        "operator",
        "kind",
        "layer",
        "intensity (FLOP/byte)",
        "attainable (FLOP/s)",
        "modelled (FLOP/s)",
        "time (s)",
        "time share",
        "bound",
        "regime",
        "device",
        "precision",
    ]
    if r is None:
        return header, []
    p, dev = r.points, r.devices[r.device_index]
    rows = [
        [
            p.names[i],
            p.kinds[i],
            int(p.layer[i]) + 1,
            float(p.intensity[i]),
            float(p.attainable[i]),
            float(p.achieved[i]),
            float(p.time[i]),
            float(p.time_share[i]),
            p.bound[i],
            p.regime[i],
            dev.name,
            r.precision,
        ]
        for i in range(len(p.rows))
    ]
    rows.append([])
    rows.append(
        ["device", "peak (FLOP/s)", "main memory bandwidth (B/s)", "ridge (FLOP/byte)", "missing"]
    )
    rows.extend([[x.name, x.peak, x.bandwidth, x.ridge, x.missing or DASH] for x in r.devices])
    return header, rows
