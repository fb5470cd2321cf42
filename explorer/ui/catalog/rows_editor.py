"""RowsEditor: an editable table of rows (memory levels, link domains) laid out on a grid, with a bold header
row, Add under it beside a hint, and a Remove button on each row.

A row object gives ``widgets()`` (one per column), ``renumber(index)`` (its fields' names follow its place) and
``to_dict()``; it may carry an ``errors`` label, shown on a grid line of its own under the row.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QGridLayout, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget


class RowsEditor(QWidget):
    """Subclasses set :attr:`make_row` (``make_row(editor, index, data)``) and :attr:`lines_per_row`."""

    changed = Signal()
    lines_per_row = 1  # 2: the row's errors label sits on the grid line under it

    def __init__(self, headers: tuple[str, ...], tips: dict[str, str], add_text: str, hint: str,
                 rows: list[dict[str, Any]], parent: QWidget | None = None):
        super().__init__(parent)
        self.rows: list = []
        self.columns = len(headers)
        self.grid = QGridLayout()
        self.grid.setHorizontalSpacing(6)
        for column, text in enumerate(headers):
            label = QLabel(f"<b>{text}</b>")
            label.setToolTip(tips.get(text, "Any unit of the right kind is accepted"))
            self.grid.addWidget(label, 0, column)
        self.add_button = QPushButton(add_text)
        self.add_button.clicked.connect(lambda: self.add_row({}))
        hint_label = QLabel(hint)
        hint_label.setWordWrap(True)
        buttons = QHBoxLayout()
        buttons.addWidget(self.add_button)
        buttons.addWidget(hint_label, 1)
        layout = QVBoxLayout(self)
        layout.addLayout(self.grid)
        layout.addLayout(buttons)
        layout.addStretch(1)
        self._initial = rows

    def _fill(self) -> None:
        """Add the rows given to the constructor (call at the end of the subclass's constructor)."""
        for data in self._initial:
            self.add_row(data)

    def make_row(self, index: int, data: dict[str, Any]):  # pragma: no cover - each subclass makes its rows
        raise NotImplementedError

    def add_row(self, data: dict[str, Any]):
        row = self.make_row(len(self.rows), data)
        self.rows.append(row)
        self._relayout()
        self.changed.emit()
        return row

    def remove_row(self, row) -> None:
        self.rows.remove(row)
        errors = [row.errors] if self.lines_per_row == 2 else []
        for widget in [*row.widgets(), *errors]:
            self.grid.removeWidget(widget)
            widget.deleteLater()
        self._relayout()
        self.changed.emit()

    def _relayout(self) -> None:
        step = self.lines_per_row
        for index, row in enumerate(self.rows):
            row.renumber(index)
            for column, widget in enumerate(row.widgets()):
                self.grid.addWidget(widget, step * index + 1, column, Qt.AlignmentFlag.AlignTop)
            if step == 2:
                self.grid.addWidget(row.errors, step * index + 2, 0, 1, self.columns)

    def values(self) -> list[dict[str, Any]]:
        return [row.to_dict() for row in self.rows]
