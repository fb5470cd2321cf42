"""The "Calculators" area: a list of the chapter's calculators on the left, the chosen one on the right."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtWidgets import QHBoxLayout, QListWidget, QSplitter, QStackedWidget, QWidget

from explorer.core.calculators import CALCULATORS
from explorer.core.calculators.batch_sweep import CHAPTER_DEVICES, RidgeDevice

from . import WIDGET_CLASSES
from ._widgets import CalculatorWidget

__all__ = ["CalculatorsPanel", "RidgeDevice"]


class CalculatorsPanel(QWidget):
    """All calculators. ``devices`` (objects with ``name``, ``peak_flops`` in FLOP/s and ``bandwidth`` in
    B/s, see :class:`RidgeDevice`) feed the ridge lines and the device pickers; the main window passes the
    selected catalog devices later through :meth:`set_devices`. Without devices the chapter's V100, A100,
    T4 and H100 (dense FP16) are used."""

    def __init__(self, devices: Sequence[RidgeDevice] | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.list = QListWidget()
        self.stack = QStackedWidget()
        self.widgets: dict[str, CalculatorWidget] = {}
        for calc in CALCULATORS:
            widget = WIDGET_CLASSES[calc.id]()
            self.widgets[calc.id] = widget
            self.list.addItem(calc.title)
            self.stack.addWidget(widget)
        self.list.currentRowChanged.connect(self.stack.setCurrentIndex)
        self.list.setMaximumWidth(280)
        splitter = QSplitter()
        splitter.addWidget(self.list)
        splitter.addWidget(self.stack)
        splitter.setStretchFactor(1, 1)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(splitter)
        self.list.setCurrentRow(0)
        self.set_devices(list(devices) if devices is not None else list(CHAPTER_DEVICES))

    def set_devices(self, devices: Sequence[RidgeDevice]) -> None:
        """Use these devices for ridge lines and device pickers (an empty list clears them)."""
        self.devices = list(devices)
        for widget in self.widgets.values():
            widget.set_devices(self.devices)

    def widget(self, calculator_id: str) -> CalculatorWidget:
        return self.widgets[calculator_id]

    def show_calculator(self, calculator_id: str) -> CalculatorWidget:
        ids = [c.id for c in CALCULATORS]
        self.list.setCurrentRow(ids.index(calculator_id))
        return self.widgets[calculator_id]

    def current_id(self) -> str:
        return CALCULATORS[self.stack.currentIndex()].id
