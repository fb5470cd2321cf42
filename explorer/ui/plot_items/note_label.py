"""A word-wrapped note, at least some lines high, whose text changes re-lay out the widgets around it only when the
text needs more lines than it has (or fewer, down to those lines)."""

from __future__ import annotations

import math

from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QPainter, QPalette, QStaticText
from PySide6.QtWidgets import QSizePolicy, QWidget


class NoteLabel(QWidget):
    """A word-wrapped note at least ``lines`` lines high, and as high as its whole text at its width, whose text
    changes re-lay out the panel around it only when the number of lines changes beyond ``lines``.

    A QLabel in a layout asks the layout to recompute every size hint of the panel on each ``setText``, and a
    word-wrapped QLabel lays its text out for its size hint as well as for its paint. This widget has a fixed
    height and draws its text as a QStaticText wrapped to its width: one layout per new text (or width), a
    quarter of a QLabel's cost. A text longer than ``lines`` lines makes it taller (the panels scroll): a note cut
    off after its lines hid the end of the tiling suggestion and of the cost panel's power assumption."""

    def __init__(self, lines: int, parent=None):
        super().__init__(parent)
        self._text = ""
        self._static = QStaticText()
        self._static.setTextFormat(Qt.TextFormat.PlainText)  # no markup to parse, no escaping of names
        self._least = self.fontMetrics().lineSpacing() * lines + 4
        self.setFixedHeight(self._least)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)

    def resizeEvent(self, event) -> None:
        if event.size().width() != event.oldSize().width():
            self._static.setTextWidth(event.size().width())
            self._fit()
        super().resizeEvent(event)

    def _fit(self) -> None:
        """As high as the whole text at this width, and at least the lines asked for."""
        if self.width() <= 0:
            return
        needed = math.ceil(self._static.size().height()) + 4 if self._text else 0
        height = max(self._least, needed)
        if height != self.height():
            self.setFixedHeight(height)

    def text(self) -> str:
        return self._text

    def setText(self, text: str) -> None:
        if text != self._text:
            self._text = text
            self._static.setText(text.replace("\n", "\u2028"))  # a text layout breaks lines at U+2028, not at \n
            self._fit()
            self.update()

    def paintEvent(self, _event) -> None:
        if not self._text:
            return
        painter = QPainter(self)
        painter.setPen(self.palette().color(QPalette.ColorRole.WindowText))
        painter.setClipRect(self.rect())
        painter.drawStaticText(QPointF(0, 0), self._static)
        painter.end()
