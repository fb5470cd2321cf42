"""CatalogEditor: what the device and system editors share: the id (read-only when editing), name, vendor and
notes fields, the problem list under the tabs with OK disabled while there is any, the scroll areas, the notes
kept as written when unchanged, and OK building the item through its file reader (a refused build lists the
reader's problems and keeps the dialog open)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)


class CatalogEditor(QDialog):
    """Subclasses call :meth:`_start` first and :meth:`_finish` last in their constructor, and give
    :meth:`build`, :meth:`invalid_fields`, :meth:`_refresh` and :attr:`error_type`."""

    error_type: type[Exception] = ValueError

    def _start(self, item: Any, to_dict: Callable[[Any], dict], taken_ids: Iterable[str], lock_id: bool) -> dict:
        """The fields every item has; returns the item in file form ({} for a new one)."""
        self._base = to_dict(item) if item is not None else {}
        self._taken = frozenset(taken_ids) - ({item.id} if item is not None and lock_id else set())
        self._result = None
        data = self._base
        self.id_edit = QLineEdit(str(data.get("id", "")))
        self.id_edit.setReadOnly(lock_id)
        self.name_edit = QLineEdit(str(data.get("name", "")))
        self.vendor_edit = QLineEdit(str(data.get("vendor", "")))
        self.notes_edit = QPlainTextEdit(str(data.get("notes", "")))
        self.notes_edit.setMaximumHeight(90)
        return data

    def _finish(self, tabs: QTabWidget, problems_label: QLabel, width: int, height: int) -> None:
        """The tabs, the problem list and OK/Cancel; the identity fields re-check as typed."""
        self.tabs, self.problems_label = tabs, problems_label
        standard = QDialogButtonBox.StandardButton
        self.buttons = QDialogButtonBox(standard.Ok | standard.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(tabs)
        layout.addWidget(problems_label)
        layout.addWidget(self.buttons)
        for edit in (self.id_edit, self.name_edit, self.vendor_edit):
            edit.textChanged.connect(self._refresh)
        self.resize(width, height)
        self._refresh()

    @staticmethod
    def _scroll(widget: QWidget) -> QScrollArea:
        area = QScrollArea()
        area.setWidgetResizable(True)
        area.setWidget(widget)
        return area

    @property
    def ok_button(self) -> QPushButton:
        return self.buttons.button(QDialogButtonBox.StandardButton.Ok)

    def _notes(self) -> str | None:
        """The notes as edited; unchanged notes are kept exactly as written in the file."""
        text = self.notes_edit.toPlainText().strip()
        old = str(self._base.get("notes", ""))
        return old if text == old.strip() and old else (text or None)

    def invalid_fields(self) -> list[str]:  # pragma: no cover - each editor checks its own form
        raise NotImplementedError

    def _refresh(self) -> None:  # pragma: no cover
        raise NotImplementedError

    def build(self):  # pragma: no cover - each editor builds through its own file reader
        raise NotImplementedError

    def problem_line(self, problem: str) -> str:
        """A reader's problem as shown under the form."""
        return problem

    def value(self):
        """The item accepted with OK, else None."""
        return self._result

    def accept(self) -> None:
        if self.invalid_fields():
            self._refresh()
            return
        try:
            self._result = self.build()
        except self.error_type as exc:
            self.problems_label.setText("\n".join(self.problem_line(p) for p in exc.problems))
            return
        super().accept()
