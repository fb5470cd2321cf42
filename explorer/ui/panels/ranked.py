"""What the Systems and Training panels share below their charts: a table of one system's ranked layouts (units in
the headers, the chosen layout's row bold and marked, a double-click chooses a layout) under a "Ranked ... of:"
system picker, in a splitter with the charts."""

from __future__ import annotations

import math

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from .plotting import DASH, changed

MARK = "\u25b6 "  # the chosen layout's row


def number(value: float) -> str:
    """A table cell: 4 significant digits, thousands separated; "—" for an unknown (non-finite) value."""
    if not math.isfinite(value):
        return DASH
    return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"


def fits_text(analysis, k: int) -> str:
    """"yes", or "no (needed > capacity GB)" for layout ``k`` of ``analysis``."""
    if analysis.fits[k]:
        return "yes"
    return f"no ({analysis.memory_bytes[k] / 1e9:.3g} > {analysis.capacity / 1e9:.3g} GB)"


class RankedTable(QTableWidget):
    """Rows of ranked layouts; :meth:`put_rows` fills it, :attr:`layouts` holds each row's layout."""

    layout_chosen = Signal(object)  # the row's layout, on a double-click

    def __init__(self, tip: str, parent=None):
        super().__init__(parent)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setAlternatingRowColors(True)
        self.verticalHeader().setVisible(False)
        self.verticalHeader().setDefaultSectionSize(20)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.setToolTip(tip)
        self.layouts: list = []
        self.cellDoubleClicked.connect(lambda row, _col: self.layout_chosen.emit(self.layouts[row]))

    def put_rows(self, layouts: list, rows: list[tuple[bool, list[str]]], tips: dict[int, str] | None = None) -> None:
        """One row per (chosen?, cells): rank, layout and fits left-aligned, numbers right-aligned, the chosen row
        bold with the mark before its rank; ``tips``: a tooltip per column."""
        self.layouts = layouts
        self.setRowCount(len(rows))
        bold = QFont(self.font())
        bold.setBold(True)
        for row, (mark, cells) in enumerate(rows):
            for col, text in enumerate([(MARK if mark else "") + str(row + 1), *cells]):
                item = QTableWidgetItem(text)
                if tips and col in tips:
                    item.setToolTip(tips[col])
                if col not in (1, 2):
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if mark:
                    item.setFont(bold)
                self.setItem(row, col, item)
        self.resizeColumnsToContents()


def ranked_below(panel, layout, title: str, tip: str, table: RankedTable, min_height: int, chart_stretch: int) -> QComboBox:
    """Put ``table`` under the panel's charts (``panel.graphics``, in ``layout``) in a splitter (``panel.splitter``), with a
    "``title``" system picker above it that calls ``panel._set_focus(system id)``; returns the picker."""
    below = QWidget()
    rows = QVBoxLayout(below)
    rows.setContentsMargins(0, 0, 0, 0)
    row = QHBoxLayout()
    row.addWidget(QLabel(title))
    combo = QComboBox()
    combo.setMinimumContentsLength(24)
    combo.setToolTip(tip)
    combo.activated.connect(lambda i: panel._set_focus(combo.itemData(i)))
    row.addWidget(combo)
    row.addStretch(1)
    rows.addLayout(row)
    table.setMinimumHeight(min_height)
    rows.addWidget(table)
    panel.splitter = QSplitter(Qt.Orientation.Vertical)
    index = layout.indexOf(panel.graphics)
    layout.removeWidget(panel.graphics)
    panel.splitter.addWidget(panel.graphics)
    panel.splitter.addWidget(below)
    panel.splitter.setStretchFactor(0, chart_stretch)
    panel.splitter.setStretchFactor(1, 1)
    panel.splitter.setChildrenCollapsible(False)
    layout.insertWidget(index, panel.splitter, 1)
    return combo


def pick_system(combo: QComboBox, names: list[str], ids: list[str], focus: str | None) -> int:
    """Offer the systems (``names``, ``ids``) in the picker with ``focus`` current; returns its index, or -1."""
    if changed(combo, "items", (names, ids)):
        combo.clear()
        for name, system_id in zip(names, ids, strict=True):
            combo.addItem(name, system_id)
    i = ids.index(focus) if focus in ids else -1
    if i >= 0:
        combo.setCurrentIndex(i)
    return i
