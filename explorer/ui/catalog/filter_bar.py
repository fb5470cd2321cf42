"""CatalogFilterBar: the search box and the vendor, kind, tier and precision filters above the table."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QLineEdit, QVBoxLayout, QWidget

from explorer.core.hardware.device import KINDS, TIERS
from explorer.core.precision import PRECISIONS
from explorer.store.query import DeviceFilter


def _choices(box: QComboBox, everything: str, options: Sequence[str]) -> None:
    current = box.currentData()
    box.blockSignals(True)
    box.clear()
    box.addItem(everything, None)
    for option in options:
        box.addItem(option, option)
    box.setCurrentIndex(max(0, box.findData(current)))
    box.blockSignals(False)


class CatalogFilterBar(QWidget):
    """Emits :attr:`filter_changed` with a :class:`DeviceFilter` whenever the search or a filter changes."""

    filter_changed = Signal(object)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search name, vendor, family, id…")
        self.search.setClearButtonEnabled(True)
        self.vendor = QComboBox()
        self.kind = QComboBox()
        self.tier = QComboBox()
        self.precision = QComboBox()
        _choices(self.vendor, "All vendors", ())
        _choices(self.kind, "All kinds", KINDS)
        _choices(self.tier, "All tiers", TIERS)
        _choices(self.precision, "Any precision", PRECISIONS)
        self.precision.setToolTip("Only devices with a known dense peak at this precision")
        self.count_label = QLabel()
        widest = self.count_label.fontMetrics().horizontalAdvance("00000 of 00000")
        self.count_label.setMinimumWidth(widest + 8)
        self.count_label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        first = QHBoxLayout()  # two rows, so the bar still fits a narrow dock
        first.addWidget(self.search, 1)
        first.addWidget(self.count_label)
        second = QHBoxLayout()
        for box in (self.vendor, self.kind, self.tier, self.precision):
            box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
            second.addWidget(box)
            box.currentIndexChanged.connect(self._emit)
        second.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addLayout(first)
        layout.addLayout(second)
        self.search.textChanged.connect(self._emit)

    def set_vendors(self, vendors: Sequence[str]) -> None:
        _choices(self.vendor, "All vendors", sorted(set(vendors), key=str.lower))

    def set_count(self, shown: int, total: int) -> None:
        self.count_label.setText(f"{shown} of {total}")
        self.count_label.setToolTip(f"{shown} devices match the filters, of {total} in the catalog")

    def current_filter(self) -> DeviceFilter:
        def one(box: QComboBox) -> tuple[str, ...]:
            return () if box.currentData() is None else (box.currentData(),)

        return DeviceFilter(text=self.search.text(), vendors=one(self.vendor), kinds=one(self.kind),
                            tiers=one(self.tier), precision=self.precision.currentData())

    def set_choice(self, box: QComboBox, value: str | None) -> None:
        box.setCurrentIndex(max(0, box.findData(value)))

    def _emit(self, *_args) -> None:
        self.filter_changed.emit(self.current_filter())
