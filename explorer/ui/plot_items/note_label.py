"""A word-wrapped note of fixed height whose text changes never re-lay out the widgets around it."""

from __future__ import annotations

from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QPainter, QPalette, QStaticText
from PySide6.QtWidgets import QSizePolicy, QWidget


class NoteLabel(QWidget):
    """A word-wrapped note ``lines`` lines high, whatever its text, whose text changes never re-lay out the
    panel around it.

    A QLabel in a layout asks the layout to recompute every size hint of the panel on each ``setText``, and a
    word-wrapped QLabel lays its text out for its size hint as well as for its paint. This widget has a fixed
    height and draws its text as a QStaticText wrapped to its width: one layout per new text (or width), a
    quarter of a QLabel's cost. Text beyond ``lines`` lines is cut off (panels give long notes a tooltip)."""

    def __init__(self, lines: int, parent=None):
        super().__init__(parent)
        self._text = ""
        self._static = QStaticText()
        self._static.setTextFormat(Qt.TextFormat.PlainText)  # no markup to parse, no escaping of names
        self.setFixedHeight(self.fontMetrics().lineSpacing() * lines + 4)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)

    def resizeEvent(self, event) -> None:
        self._static.setTextWidth(event.size().width())
        super().resizeEvent(event)

    def text(self) -> str:
        return self._text

    def setText(self, text: str) -> None:
        if text != self._text:
            self._text = text
            self._static.setText(text.replace("\n", "\u2028"))  # a text layout breaks lines at U+2028, not at \n
            self.update()

    def paintEvent(self, _event) -> None:
        if not self._text:
            return
        painter = QPainter(self)
        painter.setPen(self.palette().color(QPalette.ColorRole.WindowText))
        painter.setClipRect(self.rect())
        painter.drawStaticText(QPointF(0, 0), self._static)
        painter.end()
