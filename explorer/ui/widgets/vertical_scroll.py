"""A scroll area that scrolls its widget vertically and asks for the widget's whole minimum width.

The procurement planner is tabbed with the analysis panels, so its minimum height was the window's: with a
70B model and two systems (the systems plan and the serving fleet under the ranking) it needed 715 px, which made
the main window 897 px tall, past a 1280 x 800 laptop screen. In this area it keeps its minimum width and scrolls
down instead of setting the window's height (sideways only by the vertical scroll bar's width, when that shows
at the minimum width).
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QSize
from PySide6.QtWidgets import QScrollArea, QStyle, QWidget

#: px: the least height the area asks for (a few rows of the widget, then it scrolls)
MIN_HEIGHT = 160


class VerticalScrollArea(QScrollArea):
    def __init__(self, widget: QWidget, parent=None):
        super().__init__(parent)
        self.setWidget(widget)
        self.setWidgetResizable(True)
        self.setFrameShape(QScrollArea.Shape.NoFrame)
        widget.installEventFilter(self)

    def _bar(self) -> int:
        return self.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)

    def minimumSizeHint(self) -> QSize:
        inner = self.widget().minimumSizeHint()
        return QSize(inner.width(), min(inner.height(), MIN_HEIGHT))

    def sizeHint(self) -> QSize:
        inner = self.widget().sizeHint()
        return QSize(inner.width() + self._bar(), inner.height())

    def eventFilter(self, watched, event) -> bool:
        if watched is self.widget() and event.type() == QEvent.Type.LayoutRequest:
            self.updateGeometry()  # the widget's minimum width changed: so does the area's
        return super().eventFilter(watched, event)
