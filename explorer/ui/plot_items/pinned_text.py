"""Plain text pinned to a point of a plot at screen size: a cheap ``pg.TextItem``."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFontMetricsF, QTransform
from PySide6.QtWidgets import QGraphicsItem, QGraphicsSimpleTextItem


class PinnedText(QGraphicsSimpleTextItem):
    """Plain text pinned to a point of a plot, drawn at screen size like ``pg.TextItem`` (same font, same
    margin around the text, 4 px unless told, same anchor) but much cheaper to change and when the view's range
    changes: no text document to lay out, Qt ignores the view transform for it (no Python transform update per
    repaint) and keeps its pixmap cache, since only its position moves."""

    def __init__(self, color=(0, 0, 0), anchor=(0.0, 0.0), margin: float = 4.0):
        super().__init__()
        self.anchor = anchor
        self.margin = margin  # pg.TextItem shows its document's margin (4 px by default)
        self.setBrush(pg.mkBrush(color))
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations)
        self.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)

    def setText(self, text: str, color=None) -> None:
        if color is not None and QColor(color) != self.brush().color():
            self.setBrush(pg.mkBrush(color))
        if text == self.text():
            return
        super().setText(text)
        w, h = self.box_size()
        m = self.margin
        self.setTransform(QTransform.fromTranslate(m - self.anchor[0] * w, m - self.anchor[1] * h))

    def set_elided(self, text: str, width: float) -> None:
        """``text`` elided to ``width`` pixels (its margins included), whole in the tooltip when it is cut."""
        available = max(width - 2 * self.margin, 0.0)
        shown = QFontMetricsF(self.font()).elidedText(text, Qt.TextElideMode.ElideRight, available)
        self.setText(shown)
        self.setToolTip(text if shown != text else "")

    def box_size(self) -> tuple[float, float]:
        """Width and height in pixels of the text and its margin (what ``pg.TextItem``'s text item measures)."""
        rect = super().boundingRect()
        return rect.width() + 2 * self.margin, rect.height() + 2 * self.margin

    def toPlainText(self) -> str:
        return self.text()
