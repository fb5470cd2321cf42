"""MemoryLevelsEditor: the memory hierarchy of a device as a small editable table (off-chip level first).

One row per level: name, role, capacity, bandwidth, access energy and latency, each figure a
:class:`QuantityEdit`. Rows keep what the form does not show (``instances``, sources and notes of
unchanged figures) from the level they were created from.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QLabel, QLineEdit, QPushButton, QWidget

from explorer.core.hardware.device import ROLES
from explorer.ui.catalog.fields import cited_text, combo, merge_cited
from explorer.ui.catalog.rows_editor import RowsEditor
from explorer.ui.widgets.quantity_edit import ERROR_STYLE, QuantityEdit

FIGURES = (("capacity", "bytes"), ("bandwidth", "bandwidth"), ("energy", "energy_per_byte"),
           ("latency", "time"))
HEADERS = ("Name", "Role", "Capacity [B]", "Bandwidth [B/s]", "Energy [J/B]", "Latency [s]", "")


class _LevelRow:
    def __init__(self, editor: MemoryLevelsEditor, index: int, level: dict[str, Any]):
        self.original = dict(level)
        self.name = QLineEdit(str(level.get("name", "")))
        self.name.setPlaceholderText("e.g. HBM3")
        self.role = combo(ROLES, level.get("role", "offchip"))
        self.edits = {key: QuantityEdit(kind, f"memory[{index}].{key}", cited_text(level.get(key)),
                                        inline_error=False)
                      for key, kind in FIGURES}
        self.errors = QLabel()  # the row's problems, under the row across all columns
        self.errors.setStyleSheet(ERROR_STYLE)
        self.errors.setWordWrap(True)
        self.errors.hide()
        self.remove = QPushButton("Remove")
        self.remove.setToolTip("Remove this memory level")
        self.name.textChanged.connect(editor.changed)
        self.role.currentIndexChanged.connect(editor.changed)
        for edit in self.edits.values():
            edit.value_changed.connect(self.show_errors)
            edit.value_changed.connect(editor.changed)
        self.remove.clicked.connect(lambda: editor.remove_row(self))

    def widgets(self) -> list[QWidget]:
        return [self.name, self.role, *self.edits.values(), self.remove]

    def show_errors(self) -> None:
        problems = [f"{key}: {edit.error()}" for key, edit in self.edits.items() if not edit.is_valid()]
        self.errors.setText("\n".join(problems))
        self.errors.setVisible(bool(problems))

    def renumber(self, index: int) -> None:
        for key, edit in self.edits.items():
            edit.field = f"memory[{index}].{key}"

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.original.items() if k in ("instances", "note")}
        out["name"] = self.name.text().strip()
        out["role"] = self.role.currentData()
        for key, edit in self.edits.items():
            value = merge_cited(self.original.get(key), edit.text())
            if value is not None:
                out[key] = value
        return out


class MemoryLevelsEditor(RowsEditor):
    """Rows of memory levels with Add / Remove; :meth:`levels` gives them in device-file form."""

    lines_per_row = 2

    def __init__(self, levels: list[dict[str, Any]], parent: QWidget | None = None):
        tip = "Any unit of the right kind is accepted: 80 GB, 3.35 TB/s, 160 pJ/B, 300 ns"
        super().__init__(HEADERS, dict.fromkeys(HEADERS, tip), "Add level",
                         "Off-chip memory first, then on-chip levels, registers last. Empty = unknown.", levels,
                         parent)
        self.grid.setColumnStretch(0, 2)
        for column in range(2, 6):
            self.grid.setColumnStretch(column, 1)
        self._fill()

    def make_row(self, index: int, data: dict[str, Any]) -> _LevelRow:
        return _LevelRow(self, index, data)

    def problems(self) -> list[str]:
        out = []
        for index, row in enumerate(self.rows):
            if not row.name.text().strip():
                out.append(f"memory[{index}].name: is required")
            out += [f"{edit.field}: {edit.error()}" for edit in row.edits.values() if not edit.is_valid()]
        return out

    levels = RowsEditor.values
