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
        runs = []
        for i, (color, name) in enumerate(key):
            runs += [("\u25a0 ", color, False), (name + ("   " if i < len(key) - 1 else ""), TITLE_COLOR, False)]
        self.key_line.set_rows([runs] if runs else [])
        self._place()

    def _place(self) -> None:
        """Centred in pyqtgraph's title row (elided to its width, the whole title in the tooltip); one line sits
        in its middle, two fill it."""
        width = self.label.size().width()
        metrics = QFontMetricsF(self.line.fonts[False])
        shown = metrics.elidedText(self.text, Qt.TextElideMode.ElideRight, max(width - 4, 0)) if width > 0 else self.text
        self.line.set_rows([[(shown, TITLE_COLOR, False)]] if shown else [])
        self.line.setToolTip(self.text if shown != self.text else "")
        middle = width / 2
        first = self.line.box_size()[1]
        second = self.key_line.box_size()[1]
        top = max((ROW_HEIGHT - first - second) / 2, 0.0)
        self.line.setPos(middle, top)
        self.key_line.setPos(middle, top + first)
