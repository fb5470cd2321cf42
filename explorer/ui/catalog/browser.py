"""CatalogBrowser: what the catalog dock's Devices and Systems tabs share.

Both are a filter bar over a sortable table, Add/Duplicate/Edit/Delete buttons and a detail pane; both save
through the repository with optimistic locking (a conflict is shown field by field and the edit kept for a retry,
never dropped), re-open the editor with the edit when a save is refused, and delete only user rows. A tab supplies
its model, proxy, filter bar, detail pane and the few hooks below that name its repository's calls; dialogs are
run through the dock's test hooks (``host.exec_dialog``, ``confirm``, ``show_error``, ``resolve_conflict``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from PySide6.QtCore import QItemSelectionModel, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QPushButton,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)
from shiboken6 import isValid

from explorer.store.errors import CatalogError, ConflictError
from explorer.ui.catalog.conflict import ConflictChoice

BUTTONS = ("Add…", "Duplicate…", "Edit…", "Delete")


class CatalogBrowser:
    """Mixed into a QWidget that sets ``workspace``, ``repository``, ``host``, ``model``, ``proxy``,
    ``filter_bar`` and ``detail`` and then calls :meth:`_build`."""

    noun = "item"  # "device" or "system", in every message
    id_column = 0  # the source column whose index carries the row's id
    id_role: Any = None
    save_errors: tuple[type[Exception], ...] = (CatalogError,)
    duplicate_error: type[Exception] = CatalogError
    unknown_error: type[Exception] = CatalogError

    # ------------------------------------------------------------------------------------ tab's hooks
    def _rows(self) -> list: ...
    def _row(self, number: int): ...
    def _get(self, item_id: str): ...
    def _record(self, item_id: str) -> tuple[Any, int]: ...
    def _ids(self) -> tuple[str, ...]: ...
    def _add(self, item) -> None: ...
    def _update(self, item, version: int) -> None: ...
    def _remove(self, item_id: str) -> None: ...
    def _editor(self, draft, **kwargs): ...
    def _after_write(self, select: str | None = None, edited: bool = False) -> None: ...
    def _forget(self, item_id: str) -> None: ...
    def _show(self, item, overridden: bool) -> None: ...
    def _set_vendors(self, rows: list) -> None: ...

    # ------------------------------------------------------------------------------------------ layout
    def _build(self, sort_column: int, tips: dict[str, str], extra: QWidget | None = None) -> QSplitter:
        """The table, the buttons (``tips`` by label) with ``extra`` at the row's end, and the detail pane
        below, in a splitter; connects the filter bar and the table."""
        self.table = table = QTableView()
        table.setModel(self.proxy)
        table.setSortingEnabled(True)
        table.sortByColumn(sort_column, Qt.SortOrder.AscendingOrder)
        table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        table.setAlternatingRowColors(True)
        table.verticalHeader().hide()
        table.verticalHeader().setDefaultSectionSize(22)
        table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.buttons = {name: QPushButton(name) for name in BUTTONS}
        for name, action in zip(BUTTONS, (self.add_item, self.duplicate_item, self.edit_item, self.delete_item),
                                strict=True):
            self.buttons[name].setToolTip(tips[name])
            self.buttons[name].clicked.connect(lambda _checked=False, act=action: act())
        row = QHBoxLayout()
        for button in self.buttons.values():
            row.addWidget(button)
        row.addStretch(1)
        if extra is not None:
            row.addWidget(extra)
        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addWidget(self.filter_bar)
        top_layout.addWidget(table)
        top_layout.addLayout(row)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(top)
        splitter.addWidget(self.detail)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        self.filter_bar.filter_changed.connect(self._on_filter_changed)
        table.selectionModel().currentRowChanged.connect(self._on_current_changed)
        return splitter

    def _fill_when_open(self, name_column: int, widest: int) -> None:
        """Read the rows and fit the columns (:meth:`_fit_columns`) now, or, when the repository is a catalog
        opened on first use (``explorer.store.lazy.LazyCatalog``: the window is painted first), once it is open."""
        def fill(_repository=None) -> None:
            if isValid(self.table):  # the window may be gone before the catalog opens
                self.refresh()
                self._fit_columns(name_column, widest)

        when_open = getattr(type(self.repository), "when_open", None)
        if when_open is None:
            fill()
        else:
            self.repository.when_open(fill)

    def _fit_columns(self, name_column: int, widest: int) -> None:
        """Columns to their contents, the name column at most ``widest`` px (long names elide; the tooltip and
        the detail pane show them whole)."""
        self.table.resizeColumnsToContents()
        header = self.table.horizontalHeader()
        header.resizeSection(name_column, min(header.sectionSize(name_column), widest))

    # ------------------------------------------------------------------------------------ table state
    def refresh(self, select: str | None = None) -> None:
        """Re-read the rows from the repository, keeping (or moving to ``select``) the current row."""
        keep = select or self.current_id()
        rows = self._rows()
        self.model.set_rows(rows)
        self.proxy.sort(self.proxy.sortColumn(), self.proxy.sortOrder())
        self._set_vendors(rows)
        self._update_count()
        if keep:
            self.select_item(keep)
        self._on_current_changed()

    def current_id(self) -> str | None:
        index = self.table.selectionModel().currentIndex()
        return index.data(self.id_role) if index.isValid() else None

    def shown_ids(self) -> tuple[str, ...]:
        """The ids of the rows the filters show, in the table's order."""
        return tuple(self.proxy.index(r, self.id_column).data(self.id_role) for r in range(self.proxy.rowCount()))

    def select_item(self, item_id: str) -> bool:
        """Make ``item_id`` the current row, clearing filters that hide it; False if it is not listed."""
        source_row = self.model.row_of(item_id)
        if source_row < 0:
            return False
        index = self.proxy.mapFromSource(self.model.index(source_row, self.id_column))
        if not index.isValid():
            self.filter_bar.clear()
            index = self.proxy.mapFromSource(self.model.index(source_row, self.id_column))
        flags = QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
        self.table.selectionModel().setCurrentIndex(index, flags)
        self.table.scrollTo(index)
        return True

    def _on_filter_changed(self, f) -> None:
        self.proxy.set_filter(f)
        self._update_count()

    def _update_count(self) -> None:
        self.filter_bar.set_count(self.proxy.rowCount(), self.model.rowCount())

    def _on_current_changed(self, *_args) -> None:
        item_id = self.current_id()
        row = self._row(self.model.row_of(item_id)) if item_id else None
        item = None
        if row is not None:
            try:
                item = self._get(row.id)
            except CatalogError as exc:
                self.host.show_error(f"Cannot read the {self.noun}", str(exc))
        self._show(item, row is not None and row.overridden)
        for name in ("Duplicate…", "Edit…"):
            self.buttons[name].setEnabled(item is not None)
        self.buttons["Delete"].setEnabled(row is not None and row.origin == "user")

    # ----------------------------------------------------------------------------------------- editing
    def _ask(self, draft, **kwargs):
        """Run the editor on ``draft``; the edited item, or None when cancelled."""
        dialog = self._editor(draft, **kwargs)
        return dialog.value() if self.host.exec_dialog(dialog) else None

    def add_item(self, draft=None, title: str | None = None):
        """Edit ``draft`` (or an empty item) and add it; a taken id or a refused save re-opens the editor with
        the edit."""
        while True:
            draft = self._ask(draft, taken_ids=self._ids(), title=title or f"Add {self.noun}")
            if draft is None:
                return None
            try:
                self._add(draft)
            except self.duplicate_error as exc:  # someone added the id since the dialog opened
                self.host.show_error(f"{self.noun.capitalize()} id taken",
                                     f"{exc}\nYour {self.noun} was not saved; choose another id.")
                continue
            except self.save_errors as exc:
                self.host.show_error(f"Cannot add the {self.noun}",
                                     f"{exc}\nNothing was saved: correct it and save again.")
                continue
            self._after_write(select=draft.id)
            return draft

    def duplicate_item(self, item_id: str | None = None):
        item_id = item_id or self.current_id()
        if not item_id:
            return None
        source = self._get(item_id)
        taken = set(self._ids())
        new_id = next(c for c in (f"{item_id}-copy{n or ''}" for n in range(len(taken) + 1)) if c not in taken)
        draft = replace(source, id=new_id, name=f"{source.name} (copy)", origin="user")
        return self.add_item(draft, title=f"Duplicate {source.name}")

    def edit_item(self, item_id: str | None = None):
        """Edit and save an item against the version read; conflicts are resolved with the user."""
        item_id = item_id or self.current_id()
        if not item_id:
            return None
        draft, version = self._record(item_id)
        ask = True
        while True:
            if ask:
                edited = self._ask(draft, lock_id=True, title=f"Edit {draft.name}")
                if edited is None:
                    return None
                draft = edited
            try:
                self._update(draft, version)
            except ConflictError as exc:
                choice = self.host.resolve_conflict(exc)
                if choice is ConflictChoice.DISCARD:
                    self._after_write(select=draft.id, edited=True)
                    return None
                draft, version, ask = exc.mine, exc.theirs_version, choice is ConflictChoice.EDIT_AGAIN
                continue
            except self.unknown_error:
                question = (f"'{draft.id}' was deleted from the catalog by someone else. "
                            f"Add your edited version as a new user {self.noun}?")
                if self.host.confirm(f"{self.noun.capitalize()} deleted", question):
                    return self.add_item(draft, title=f"Add {draft.name}")
                self._after_write()
                return None
            except self.save_errors as exc:
                self.host.show_error(f"Cannot save the {self.noun}",
                                     f"{exc}\nYour edit is kept: correct it and save again.")
                ask = True
                continue
            self._after_write(select=draft.id, edited=True)
            return draft

    def delete_item(self, item_id: str | None = None) -> bool:
        item_id = item_id or self.current_id()
        row_number = self.model.row_of(item_id) if item_id else -1
        if row_number < 0:
            return False
        row = self._row(row_number)
        if row.origin != "user":
            self.host.show_error("Cannot delete",
                                 f"'{row.name}' is a shipped {self.noun}: duplicate it or edit it instead.")
            return False
        question = f"Delete the user {self.noun} '{row.name}' ({row.id})? This cannot be undone."
        if not self.host.confirm(f"Delete {self.noun}", question):
            return False
        try:
            self._remove(item_id)
        except CatalogError as exc:
            self.host.show_error("Cannot delete", str(exc))
            self.refresh()
            return False
        self._forget(item_id)
        self._after_write()
        return True
