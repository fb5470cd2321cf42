"""A plot's title: one line of text and an optional key of coloured squares under it.

pyqtgraph's title is an HTML label: each new title parsed and laid out a text document and asked the plot's
layout for a new size (0.3-0.5 ms per changed title, the cost panel's on every precision change). Here the
two lines are :class:`~.legend_box.LegendBox` rows without a frame over pyqtgraph's (empty) title, in the
30-pixel row pyqtgraph keeps for it, so a new title never re-lays out the plot.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFontMetricsF

from .legend_box import LegendBox

TITLE_COLOR = QColor(150, 150, 150)  # pyqtgraph's foreground grey, as its titles
ROW_HEIGHT = 30  # pyqtgraph's title row


class PlotTitle:
    """Draws ``plot``'s title over pyqtgraph's (kept empty, so that the plot's layout is pyqtgraph's);
    ``set(text, key)`` where ``key`` is ``[(colour, name), ...]``."""

    def __init__(self, plot: pg.PlotItem):
        self.text, self.key = "", ()
        plot.setTitle("")  # pyqtgraph's title row, shown and empty
        self.label = plot.titleLabel
        self.line = LegendBox(anchor=(0.5, 0.0), point_size=10, fill=None, border=None, pad=0)
        self.key_line = LegendBox(anchor=(0.5, 0.0), point_size=8, fill=None, border=None, pad=0)
        for item in (self.line, self.key_line):
            item.setParentItem(self.label)
        self.label.geometryChanged.connect(self._place)
        plot.plot_title = self

    def set(self, text: str, key=()) -> None:
        key = tuple((str(c), str(n)) for c, n in key)
        if (text, key) == (self.text, self.key):
            return
        self.text, self.key = text, key
        self._place()

    def _place(self) -> None:
        """Centred in pyqtgraph's title row, each line elided to its width (the whole title and key in the
        tooltip); one line sits in the middle of the row, two fill it."""
        width = max(self.label.size().width() - 4, 0.0)
        metrics = QFontMetricsF(self.line.fonts[False])
        shown = metrics.elidedText(self.text, Qt.TextElideMode.ElideRight, width) if width else self.text
        self.line.set_rows([[(shown, TITLE_COLOR, False)]] if shown else [])
        runs, key_elided = self._key_runs(width)
        self.key_line.set_rows([runs] if runs else [])
        whole = self.text + ("\n" + "   ".join(n for _c, n in self.key) if self.key else "")
        elided = shown != self.text or key_elided
        for item in (self.line, self.key_line):
            item.setToolTip(whole if elided else "")
        middle = self.label.size().width() / 2
        first = self.line.box_size()[1]
        second = self.key_line.box_size()[1]
        top = max((ROW_HEIGHT - first - second) / 2, 0.0)
        self.line.setPos(middle, top)
        self.key_line.setPos(middle, top + first)

    def _key_runs(self, width: float) -> tuple[list, bool]:
        """■ name   ■ name ... (no runs without a key), and whether the names were elided: when wider than
        ``width``, each name is elided to an equal share of it."""
        if not self.key:
            return [], False
        metrics = QFontMetricsF(self.key_line.fonts[False])
        names = [n for _c, n in self.key]
        gaps = metrics.horizontalAdvance("\u25a0 ") * len(names) + metrics.horizontalAdvance("   ") * (len(names) - 1)
        full = gaps + sum(metrics.horizontalAdvance(n) for n in names)
        elided = bool(width) and full > width
        if elided:
            share = max((width - gaps) / len(names), metrics.horizontalAdvance("\u2026"))
            names = [metrics.elidedText(n, Qt.TextElideMode.ElideRight, share) for n in names]
        runs = []
        for i, ((color, _n), name) in enumerate(zip(self.key, names)):
            runs += [("\u25a0 ", color, False), (name + ("   " if i < len(names) - 1 else ""), TITLE_COLOR, False)]
        return runs, elided
