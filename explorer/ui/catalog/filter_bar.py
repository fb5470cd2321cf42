"""The catalog tables' filter bars: :class:`FilterBar` (a search box, a count and a row of combos) and the
devices' :class:`CatalogFilterBar` (vendor, kind, tier, precision); the systems' bar is in :mod:`.system_table`."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QLineEdit, QVBoxLayout, QWidget

from explorer.core.hardware.device import KINDS, TIERS
from explorer.core.precision import PRECISIONS
from explorer.store.rows import DeviceFilter


def choices(box: QComboBox, everything: str, options: Sequence[str]) -> None:
    """Fill ``box`` with an "everything" entry (data None) and ``options``, keeping the current choice."""
    current = box.currentData()
    box.blockSignals(True)
    box.clear()
    box.addItem(everything, None)
    for option in options:
        box.addItem(option, option)
    box.setCurrentIndex(max(0, box.findData(current)))
    box.blockSignals(False)


def one(box: QComboBox) -> tuple[str, ...]:
    """The box's choice as a filter's tuple: () for "everything"."""
    return () if box.currentData() is None else (box.currentData(),)


class FilterBar(QWidget):
    """A search box with a shown-of-total count above a row of filter combos; emits :attr:`filter_changed` with
    the subclass's :meth:`current_filter` whenever the search or a combo changes. Subclasses make their combos
    and call :meth:`_lay_out` with them."""

    filter_changed = Signal(object)
    noun = "items"

    def __init__(self, placeholder: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.search = QLineEdit()
        self.search.setPlaceholderText(placeholder)
        self.search.setClearButtonEnabled(True)
        self.count_label = QLabel()
        widest = self.count_label.fontMetrics().horizontalAdvance("00000 of 00000")
        self.count_label.setMinimumWidth(widest + 8)
        self.count_label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.boxes: tuple[QComboBox, ...] = ()

    def _lay_out(self, *boxes: QComboBox) -> None:
        self.boxes = boxes
        first = QHBoxLayout()  # two rows, so the bar still fits a narrow dock
        first.addWidget(self.search, 1)
        first.addWidget(self.count_label)
        second = QHBoxLayout()
        for box in boxes:
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

    def set_count(self, shown: int, total: int) -> None:
        self.count_label.setText(f"{shown} of {total}")
        self.count_label.setToolTip(f"{shown} {self.noun} match the filters, of {total} in the catalog")

    def clear(self) -> None:
        """Show everything: empty search, every combo on its "everything" entry."""
        self.search.clear()
        for box in self.boxes:
            box.setCurrentIndex(0)

    def current_filter(self):  # pragma: no cover - each subclass builds its own filter
        raise NotImplementedError

    def _emit(self, *_args) -> None:
        self.filter_changed.emit(self.current_filter())


class CatalogFilterBar(FilterBar):
    """The devices' bar: search, vendor, kind, tier and precision; its filter is a :class:`DeviceFilter`."""

    noun = "devices"

    def __init__(self, parent: QWidget | None = None):
        super().__init__("Search name, vendor, family, id…", parent)
        self.vendor, self.kind, self.tier, self.precision = QComboBox(), QComboBox(), QComboBox(), QComboBox()
        choices(self.vendor, "All vendors", ())
        choices(self.kind, "All kinds", KINDS)
        choices(self.tier, "All tiers", TIERS)
        choices(self.precision, "Any precision", PRECISIONS)
        self.precision.setToolTip("Only devices with a known dense peak at this precision")
        self._lay_out(self.vendor, self.kind, self.tier, self.precision)

    def set_vendors(self, vendors: Sequence[str]) -> None:
        choices(self.vendor, "All vendors", sorted(set(vendors), key=str.lower))

    def current_filter(self) -> DeviceFilter:
        return DeviceFilter(text=self.search.text(), vendors=one(self.vendor), kinds=one(self.kind),
                            tiers=one(self.tier), precision=self.precision.currentData())

    def set_choice(self, box: QComboBox, value: str | None) -> None:
        box.setCurrentIndex(max(0, box.findData(value)))
