"""Marking a quote cell that cannot be read, without touching the other cells or re-emitting edits."""

from __future__ import annotations

from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QTableWidgetItem

BAD_CELL = QColor(255, 205, 205)


def mark_cell(item: QTableWidgetItem, error: str) -> None:
    """Tint ``item`` and put ``error`` in its tooltip (clear both when ``error`` is empty); the table's signals
    are blocked meanwhile so that marking a cell is not read as an edit."""
    table = item.tableWidget()
    blocked = table.blockSignals(True) if table is not None else False
    try:
        item.setBackground(QBrush(BAD_CELL) if error else QBrush())
        item.setToolTip(error)
    finally:
        if table is not None:
            table.blockSignals(blocked)
