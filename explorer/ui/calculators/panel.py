"""The "Calculators" area: a list of the chapter's calculators on the left, the chosen one on the right."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QHBoxLayout,
    QListView,
    QListWidget,
    QScrollArea,
    QSplitter,
    QStackedWidget,
    QWidget,
)

from explorer.core.calculators import CALCULATORS
from explorer.core.calculators.batch_sweep import CHAPTER_DEVICES, RidgeDevice

from . import WIDGET_CLASSES
from ._widgets import CalculatorWidget

__all__ = ["CalculatorsPanel", "RidgeDevice"]

IDS = [c.id for c in CALCULATORS]
LIST_WIDTH = (140, 180)  # px: the calculators' names wrap onto two lines rather than take the calculators' width


def _scrolling(widget: QWidget) -> QScrollArea:
    """A calculator scrolls, vertically, when its dock is shorter than it (or narrower than its inputs)."""
    area = QScrollArea()
    area.setWidget(widget)
    area.setWidgetResizable(True)
    area.setFrameShape(QScrollArea.Shape.NoFrame)
    return area


class CalculatorsPanel(QWidget):
    """All calculators. ``devices`` (objects with ``name``, ``peak_flops`` in FLOP/s and ``bandwidth`` in
    B/s, see :class:`RidgeDevice`) feed the ridge lines and the device pickers; the main window passes the
    selected catalog devices later through :meth:`set_devices`. Without devices the chapter's V100, A100,
    T4 and H100 (dense FP16) are used.

    A calculator stacks its plots under its inputs when the area is narrower than both side by side, and scrolls
    (the list of calculators stays in place); the names in the list wrap.

    A calculator's widget is built the first time it is shown (or asked for with :meth:`widget`): ten
    calculators with fifteen plots would otherwise add about half a second to every start of the app."""

    def __init__(self, devices: Sequence[RidgeDevice] | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.list = QListWidget()
        self.list.setWordWrap(True)
        self.list.setTextElideMode(Qt.TextElideMode.ElideNone)
        self.list.setResizeMode(QListView.ResizeMode.Adjust)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.stack = QStackedWidget()
        self.widgets: dict[str, CalculatorWidget] = {}  # the ones built so far
        for calc in CALCULATORS:
            self.list.addItem(calc.title)
            self.stack.addWidget(QWidget())  # a placeholder until the calculator is first shown
        self.list.currentRowChanged.connect(self._show_row)
        self.list.setMinimumWidth(LIST_WIDTH[0])
        self.list.setMaximumWidth(LIST_WIDTH[1])
        splitter = self.splitter = QSplitter()
        splitter.setChildrenCollapsible(False)
        splitter.addWidget(self.list)
        splitter.addWidget(self.stack)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([LIST_WIDTH[1], 10 * LIST_WIDTH[1]])
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(splitter)
        self.set_devices(list(devices) if devices is not None else list(CHAPTER_DEVICES))
        self.list.setCurrentRow(0)

    def set_devices(self, devices: Sequence[RidgeDevice]) -> None:
        """Use these devices for ridge lines and device pickers (an empty list clears them)."""
        self.devices = list(devices)
        for widget in self.widgets.values():
            widget.set_devices(self.devices)

    def widget(self, calculator_id: str) -> CalculatorWidget:
        """The calculator's widget (built now if it was not yet)."""
        widget = self.widgets.get(calculator_id)
        if widget is None:
            index = IDS.index(calculator_id)
            widget = self.widgets[calculator_id] = WIDGET_CLASSES[calculator_id]()
            widget.set_devices(self.devices)
            placeholder = self.stack.widget(index)
            current = self.stack.currentIndex()
            self.stack.insertWidget(index, _scrolling(widget))
            self.stack.removeWidget(placeholder)
            placeholder.deleteLater()
            self.stack.setCurrentIndex(current)
        return widget

    def _show_row(self, row: int) -> None:
        if 0 <= row < len(CALCULATORS):
            self.widget(IDS[row])
            self.stack.setCurrentIndex(row)

    def show_calculator(self, calculator_id: str) -> CalculatorWidget:
        self.list.setCurrentRow(IDS.index(calculator_id))
        return self.widget(calculator_id)

    def current_id(self) -> str:
        return CALCULATORS[self.stack.currentIndex()].id
