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


def store_fields(store, shown: set[str], prices: dict, clouds: dict, today: str) -> dict:
    """The quote fields of the requirements the planner writes, merged with the one store ``store`` (the
    workspace's requirements): the planner's cells replace the quotes of the devices it shows; quotes of other
    devices, each quote's source (kept while its value is unchanged, else "entered in the planner on
    ``today``") and the ranking basis, which the planner does not show, are kept."""
    out = {"rank_by": store.rank_by}
    for name, cells in (("price", prices), ("cloud_price", clouds)):
        old, notes = dict(getattr(store, name)), dict(getattr(store, f"{name}_source"))
        quotes = {k: v for k, v in old.items() if k not in shown}
        sources = {k: v for k, v in notes.items() if k not in shown}
        for dev, value in cells.items():
            quotes[dev] = value
            same = dev in old and abs(old[dev] - value) <= 1e-9 * abs(value)
            if same and dev in notes:
                sources[dev] = notes[dev]
            elif not same:
                sources[dev] = f"entered in the planner on {today}"
        out[name], out[f"{name}_source"] = quotes, sources
    return out
