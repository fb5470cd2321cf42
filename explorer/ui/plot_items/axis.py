"""The panels' axis: SI tick labels in log mode, drawn again only when its own range or label changes, and its
tick layout (pyqtgraph's rules) in less Python."""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPaintEngine, QPen, QPicture, QPolygonF

from .static_texts import StaticTexts

_PREFIX = (
    (1e18, "E"),
    (1e15, "P"),
    (1e12, "T"),
    (1e9, "G"),
    (1e6, "M"),
    (1e3, "k"),
    (1.0, ""),
    (1e-3, "m"),
    (1e-6, "\u00b5"),
    (1e-9, "n"),
    (1e-12, "p"),
    (1e-15, "f"),
)


def short_si(x: float) -> str:
    for scale, prefix in _PREFIX:
        if abs(x) >= scale * 0.999:
            return f"{x / scale:.3g}{prefix}"
    return f"{x:.2g}"


_LEFT_TEXT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter | Qt.TextFlag.TextDontClip
_BOTTOM_TEXT = Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop | Qt.TextFlag.TextDontClip
_MEASURE = QRectF(0, 0, 100, 100)
_MAX_TEXTS = 512  # tick texts whose layout an axis keeps
_LAID_OUT = QPicture()  # AxisItem.picture when the tick layout in ``_specs`` is current


class SiLogAxis(pg.AxisItem):
    """An axis whose log-mode ticks read as SI numbers (1T, 100G, 0.1) rather than powers of ten, and that is
    drawn again only when its own range changes (pyqtgraph redraws both axes of a plot when either range does)
    and whose label is typeset again only when its text changes (pyqtgraph does it on every range change).

    Its ticks are placed by pyqtgraph's rules in less Python: re-ticking an axis (a new range after an edit)
    cost 0.3-0.9 ms in pyqtgraph's ``tickValues`` and ``generateDrawSpecs``, a third of a panel's paint."""

    def setRange(self, mn, mx):
        if getattr(self, "range", None) != [mn, mx]:
            super().setRange(mn, mx)

    def boundingRect(self):
        """pyqtgraph's, computed again only when the axis' geometry or style changes (Qt asks for it dozens of
        times per repaint of a panel, and pyqtgraph computes it in Python each time)."""
        if self.grid is not False:
            return super().boundingRect()
        geometry = self.geometry()
        cached = self.__dict__.get("_bounds")
        if cached is None or cached[0] != geometry:
            cached = self._bounds = (geometry, super().boundingRect())
        return QRectF(cached[1])

    def setStyle(self, **kwargs):
        self._bounds = None
        super().setStyle(**kwargs)

    def _updateLabel(self):
        """Overrides pyqtgraph's private ``AxisItem._updateLabel`` (pyproject.toml bounds pyqtgraph for it;
        tests/ui/plot_items/test_pyqtgraph_internals.py checks it is still there)."""
        text = self.labelString()
        if text != self.__dict__.get("_label_html"):
            self._label_html = text
            self.label.setHtml(text)
            self._adjustSize()
        self.picture = None
        self.update()

    def paint(self, p, opt, widget):
        """pyqtgraph's drawing of the ticks and their text, straight onto the painter: pyqtgraph records them in a
        QPicture and replays it, which only doubles the work under the item's pixmap cache. On screen each tick
        text is a QStaticText, laid out once per text and font (tick texts recur from range to range); other
        devices (SVG, printing) get pyqtgraph's ``drawText``."""
        if self.grid is not False or self.orientation not in ("left", "bottom"):
            return super().paint(p, opt, widget)
        font = self.style["tickFont"]
        if font is not None:
            p.setFont(font)
        if self.picture is None:  # pyqtgraph's mark that the layout must be computed again
            self._specs = self.generateDrawSpecs(p)
            self.picture = _LAID_OUT
        if self._specs is None:
            return
        axis_spec, tick_specs, text_specs = self._specs
        p.setRenderHint(p.RenderHint.Antialiasing, False)
        p.setRenderHint(p.RenderHint.TextAntialiasing, True)
        pen, a, b = axis_spec
        p.setPen(pen)
        p.drawLine(a, b)
        for pen, a, b in tick_specs:
            p.setPen(pen)
            p.drawLine(a, b)
        p.setPen(self.textPen())
        p.setClipRect(self.boundingRect().toAlignedRect())
        if p.paintEngine().type() != QPaintEngine.Type.Raster:
            for rect, flags, text in text_specs:
                p.drawText(rect, int(flags), text)
            return
        texts = self.__dict__.get("_static")
        if texts is None or texts.font != p.font():
            texts = self._static = StaticTexts(p.font(), _MAX_TEXTS)
        left, h = self.orientation == "left", texts.line_height
        for rect, _flags, text in text_specs:
            st = texts.get(text, p.transform())
            w = st.size().width()
            if left:  # right-aligned, centred vertically (as drawText's AlignRight | AlignVCenter)
                p.drawStaticText(QPointF(rect.right() - w, rect.center().y() - h / 2), st)
            else:  # centred horizontally, at the top
                p.drawStaticText(QPointF(rect.center().x() - w / 2, rect.top()), st)

    def tickStrings(self, values, scale, spacing):
        if not self.logMode:
            return super().tickStrings(values, scale, spacing)
        return [short_si(10.0**v) if abs(v - round(v)) < 1e-6 else "" for v in values]

    def tickValues(self, minVal, maxVal, size):
        """pyqtgraph's linear ticks (a tick closer than 1 % of its spacing to one of a higher level is left out),
        in plain Python; log mode as pyqtgraph. A higher level is an arithmetic progression, so the tick of it
        nearest a value is found by rounding rather than by comparing with each."""
        if self.logMode:
            return super().tickValues(minVal, maxVal, size)
        scale = self.scale
        lo, hi = sorted((minVal * scale, maxVal * scale))
        ticks, above = [], []  # above: (spacing, start, count) of the levels drawn so far
        for spacing, offset in self.tickSpacing(lo, hi, size):
            start = math.ceil((lo - offset) / spacing) * spacing + offset
            count = int((hi - start) / spacing) + 1
            tol = spacing / scale * 0.01
            values = []
            for k in range(count):
                v = (k * spacing + start) / scale
                for step, first, n in above:
                    near = min(max(round((v * scale - first) / step), 0), n - 1)
                    if abs(v - (near * step + first) / scale) <= tol:
                        break
                else:
                    values.append(v)
            above.append((spacing, start, count))
            ticks.append((spacing / scale, values))
        return ticks

    def generateDrawSpecs(self, p):
        """pyqtgraph's tick and text layout for a left or bottom axis without grid (the others: pyqtgraph's)."""
        style = self.style
        if self.grid is not False or self.orientation not in ("left", "bottom"):
            return super().generateDrawSpecs(p)
        if style["tickFont"] is not None:
            p.setFont(style["tickFont"])
        bounds = self.mapRectFromParent(self.geometry())
        left = self.orientation == "left"
        if left:
            span = [QPointF(bounds.right() - 1, bounds.top() - 1), QPointF(bounds.right() - 1, bounds.bottom() + 1)]
            stop, direction, extent = bounds.right(), -1, bounds.height()
        else:
            span = [QPointF(bounds.left() - 1, bounds.top() + 1), QPointF(bounds.right() + 1, bounds.top() + 1)]
            stop, direction, extent = bounds.top(), 1, bounds.width()
        ends = self.mapToDevice(QPolygonF(span))  # one mapping for both ends
        if ends is None:
            return None
        length = math.hypot(ends[1].x() - ends[0].x(), ends[1].y() - ends[0].y())
        if length == 0:
            return None
        lo, hi = self.range
        if self._tickLevels is None:
            levels, strings = self.tickValues(lo, hi, length), None
        else:
            levels = [(None, [v for v, _ in level]) for level in self._tickLevels]
            strings = [[t for _, t in level] for level in self._tickLevels]
        scale = (-extent if left else extent) / (hi - lo) if hi != lo else 1.0
        offset = (lo * scale - extent if left else lo * scale) if hi != lo else 0.0
        x_min, x_max = sorted((lo * scale - offset, hi * scale - offset))
        positions, tick_specs = [], []
        for i, (_spacing, values) in enumerate(levels):
            end = stop + style["tickLength"] / (i * 0.5 + 1.0) * direction  # shorter ticks at lower levels
            pen = self._level_pen(i)
            shown = []
            for v in values:
                x = v * scale - offset
                if x < x_min or x > x_max:
                    shown.append(None)
                    continue
                shown.append(x)
                tick_specs.append((pen, QPointF(stop, x), QPointF(end, x)) if left
                                  else (pen, QPointF(x, stop), QPointF(x, end)))
            positions.append(shown)
        drawn = [x for level in positions for x in level if x is not None]
        if style["stopAxisAtTick"][0] and drawn:
            coordinate = span[0].y() if left else span[0].x()
            (span[0].setY if left else span[0].setX)(max(coordinate, min(drawn)))
        if style["stopAxisAtTick"][1] and drawn:
            coordinate = span[1].y() if left else span[1].x()
            (span[1].setY if left else span[1].setX)(min(coordinate, max(drawn)))
        axis_spec = (self.pen(), span[0], span[1])
        text_specs: list = []
        if not style["showValues"]:
            return axis_spec, tick_specs, text_specs
        gap = max(0, style["tickLength"]) + style["tickTextOffset"][0 if left else 1]
        box = self.boundingRect()
        # names on a category axis of fixed width (name_axis) are elided to the room left of the ticks
        elide_to = stop - gap - box.left() if left and strings is not None and self.fixedWidth is not None else None
        measured_sizes: list[tuple[float, float]] = []
        last_size2 = 0.0
        font = p.font()
        if self.__dict__.get("_text_font") != font or len(self._text_sizes) > _MAX_TEXTS:  # sizes by text
            self._text_font, self._text_sizes = QFont(font), {}
        known = self._text_sizes
        for i in range(min(len(levels), style["maxTextLevel"] + 1)):
            texts = (self.tickStrings(levels[i][1], self.autoSIPrefixScale * self.scale, levels[i][0])
                     if strings is None else list(strings[i]))
            if not texts:
                continue
            rects = []
            for j, text in enumerate(texts):
                if positions[i][j] is None:
                    rects.append(None)
                    continue
                if text not in known:
                    r = p.boundingRect(_MEASURE, Qt.AlignmentFlag.AlignCenter, text)
                    known[text] = (r.width(), r.height() * 0.8)  # pyqtgraph: "usually just a bit too large"
                rects.append(known[text])
                measured_sizes.append(known[text])
            if measured_sizes:
                size = sum(h if left else w for w, h in measured_sizes)
                size2 = max(w if left else h for w, h in measured_sizes)
            else:
                size, size2 = 0.0, 0.0
            if i > 0 and any(len(text_specs) >= n and size / length >= limit for n, limit in style["textFillLimits"]):
                break  # too crowded: no text for this level and below
            last_size2 = size2
            for j, text in enumerate(texts):
                if rects[j] is None:
                    continue
                x, (w, h) = positions[i][j], rects[j]
                if elide_to is not None and w > elide_to > 0:
                    # a name wider than its fixed-width axis: elided (pyqtgraph leaves its bar unnamed)
                    text = QFontMetricsF(p.font()).elidedText(text, Qt.TextElideMode.ElideRight, elide_to)
                    w = elide_to
                rect = (QRectF(stop - gap - w, x - h / 2, w, h) if left else QRectF(x - w / 2, stop + gap, w, h))
                if box.intersected(rect) != rect:
                    continue
                text_specs.append((rect, _LEFT_TEXT if left else _BOTTOM_TEXT, text))
        if last_size2 != self.__dict__.get("_last_text_size"):  # the same size again would change nothing
            self._last_text_size = last_size2
            self._updateMaxTextSize(last_size2)
        return axis_spec, tick_specs, text_specs

    def _level_pen(self, level: int) -> QPen:
        """The tick pen of a tick level, with pyqtgraph's fading alpha (cached per level and per pen set: the
        axis's pens are replaced, never changed in place, by ``setPen`` and ``setTickPen``)."""
        alpha = self.style["tickAlpha"]
        if alpha is None:
            alpha = 255 / (level + 1)
        elif isinstance(alpha, float):
            alpha = min(255, max(0, int(round(alpha * 255))))
        source = (self._tickPen, self._pen)
        key = (level, int(alpha), id(source[0]), id(source[1]))
        cache = self.__dict__.setdefault("_level_pens", {})
        if key not in cache:
            pen = self.tickPen()
            if pen.brush().style() == Qt.BrushStyle.SolidPattern:
                pen = QPen(pen)
                color = QColor(pen.color())
                color.setAlpha(int(alpha))
                pen.setColor(color)
            cache[key] = (pen, source)  # the source pens stay referenced: their ids stay theirs
        return cache[key][0]
