"""SystemsBrowser: the catalog dock's Systems tab. List, filter, show, add, duplicate, edit, delete, import and
export the catalog's systems the way the Devices tab does devices.

Every write goes through the system repository (:mod:`explorer.store.system_repository`) with optimistic locking
(a conflict is shown field by field and the edit kept for a retry); a refused save writes nothing and re-opens the
editor with the edit. After a write the workspace re-reads the catalog's systems
(:meth:`~explorer.core.session.workspace.Workspace.reload_systems`), so the Systems panel offers the new or edited
system and re-analyzes a chosen one. Dialogs are run through the dock's test hooks (``exec_dialog``, ``confirm``,
``show_error``, ``resolve_conflict``, ``choose_file``).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QItemSelectionModel, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QMenu,
    QPushButton,
    QSplitter,
    QTableView,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from explorer.core.hardware.system import System
from explorer.core.hardware.system_file import SystemFileError
from explorer.core.session.commands import SetSystem
from explorer.store.errors import CatalogError, ConflictError, DuplicateSystemError, UnknownSystemError
from explorer.store.io import ImportFileError
from explorer.ui.catalog.conflict import ConflictChoice
from explorer.ui.catalog.system_detail import SystemDetailView
from explorer.ui.catalog.system_editor import SystemEditorDialog
from explorer.ui.catalog.system_table import (
    COLUMN_INDEX,
    ID_ROLE,
    SystemFilterBar,
    SystemFilterProxy,
    SystemTableModel,
)
from explorer.ui.catalog.transfer import (
    SYSTEM_FILE_FILTERS,
    ImportRejectedError,
    export_systems,
    import_systems,
)

SAVE_ERRORS = (CatalogError, SystemFileError)
TRANSFER_ERRORS = (*SAVE_ERRORS, ImportFileError, ImportRejectedError, OSError)


class SystemsBrowser(QWidget):
    """The Systems tab; ``host`` is the catalog dock, whose dialog hooks it uses."""

    def __init__(self, workspace, repository, host):
        super().__init__()
        self.workspace, self.repository, self.host = workspace, repository, host
        self.model = SystemTableModel(self)
        self.proxy = SystemFilterProxy(self)
        self.proxy.setSourceModel(self.model)
        self.filter_bar = SystemFilterBar()
        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(COLUMN_INDEX["vendor"], Qt.SortOrder.AscendingOrder)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setAlternatingRowColors(True)
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setDefaultSectionSize(22)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.detail = SystemDetailView()
        self.buttons = {name: QPushButton(name) for name in ("Add…", "Duplicate…", "Edit…", "Delete")}
        self.buttons["Add…"].setToolTip("Add a system made of a catalog device")
        self.buttons["Duplicate…"].setToolTip("Copy the selected system as a user system and edit the copy")
        self.buttons["Edit…"].setToolTip("Edit the selected system (edits of shipped systems survive catalog "
                                         "updates)")
        self.buttons["Delete"].setToolTip("Delete the selected user system (shipped systems cannot be deleted)")
        self.buttons["Add…"].clicked.connect(lambda: self.add_system())
        self.buttons["Duplicate…"].clicked.connect(lambda: self.duplicate_system())
        self.buttons["Edit…"].clicked.connect(lambda: self.edit_system())
        self.buttons["Delete"].clicked.connect(lambda: self.delete_system())
        self.menu = QMenu(self)
        self.import_action = QAction("Import systems…", self)
        self.import_action.setToolTip("Add systems from a system file or a systems export (YAML or JSON)")
        self.export_action = QAction("Export the systems shown…", self)
        self.export_action.setToolTip("Write the systems the filters show to a YAML or JSON file")
        self.import_action.triggered.connect(lambda: self.import_systems())
        self.export_action.triggered.connect(lambda: self.export_systems())
        self.menu.addActions([self.import_action, self.export_action])
        self.menu_button = QToolButton()
        self.menu_button.setText("File")
        self.menu_button.setToolTip("Import or export system files")
        self.menu_button.setMenu(self.menu)
        self.menu_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)

        row = QHBoxLayout()
        for button in self.buttons.values():
            row.addWidget(button)
        row.addStretch(1)
        row.addWidget(self.menu_button)
        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addWidget(self.filter_bar)
        top_layout.addWidget(self.table)
        top_layout.addLayout(row)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(top)
        splitter.addWidget(self.detail)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(splitter)

        self.filter_bar.filter_changed.connect(self._on_filter_changed)
        self.table.selectionModel().currentRowChanged.connect(self._on_current_changed)
        self.table.doubleClicked.connect(lambda index: self.edit_system(index.data(ID_ROLE)))
        self.refresh()
        self.table.resizeColumnsToContents()
        header = self.table.horizontalHeader()  # long names are elided (in full in the tooltip and the detail)
        header.resizeSection(COLUMN_INDEX["name"], min(header.sectionSize(COLUMN_INDEX["name"]), 240))

    # ------------------------------------------------------------------------------------------- table
    def refresh(self, select: str | None = None) -> None:
        """Re-read the rows from the repository, keeping (or moving to ``select``) the current system."""
        keep = select or self.current_id()
        rows = self.repository.system_rows()
        self.model.set_rows(rows)
        self.proxy.sort(self.proxy.sortColumn(), self.proxy.sortOrder())
        self.filter_bar.set_rows(rows)
        self._update_count()
        if keep:
            self.select_system(keep)
        self._on_current_changed()

    def current_id(self) -> str | None:
        index = self.table.selectionModel().currentIndex()
        return index.data(ID_ROLE) if index.isValid() else None

    def shown_ids(self) -> tuple[str, ...]:
        return tuple(self.proxy.system_id(r) for r in range(self.proxy.rowCount()))

    def select_system(self, system_id: str) -> bool:
        """Make ``system_id`` the current row, clearing filters that hide it; False if it is not listed."""
        source_row = self.model.row_of(system_id)
        if source_row < 0:
            return False
        index = self.proxy.mapFromSource(self.model.index(source_row, 0))
        if not index.isValid():
            self.filter_bar.clear()
            index = self.proxy.mapFromSource(self.model.index(source_row, 0))
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
        system_id = self.current_id()
        row = self.model.system_row(self.model.row_of(system_id)) if system_id else None
        system = None
        if row is not None:
            try:
                system = self.repository.get_system(row.id)
            except CatalogError as exc:
                self.host.show_error("Cannot read the system", str(exc))
        self.detail.show_system(system, row is not None and row.overridden)
        for name in ("Duplicate…", "Edit…"):
            self.buttons[name].setEnabled(system is not None)
        self.buttons["Delete"].setEnabled(row is not None and row.origin == "user")

    def _changed(self, select: str | None = None) -> None:
        """After a write: the table, then the workspace's systems (the Systems panel's choices, re-analysis)."""
        self.refresh(select=select)
        self.workspace.reload_systems()

    # ----------------------------------------------------------------------------------------- editing
    def _editor(self, draft: System | None, **kwargs) -> SystemEditorDialog:
        return SystemEditorDialog(draft, devices=self.repository.ids(), parent=self, **kwargs)

    def add_system(self, draft: System | None = None, title: str = "Add system") -> System | None:
        """Edit ``draft`` (or an empty system) and add it; a refused save re-opens the editor with the edit."""
        while True:
            dialog = self._editor(draft, taken_ids=self.repository.system_ids(), title=title)
            if not self.host.exec_dialog(dialog):
                return None
            draft = dialog.system()
            try:
                self.repository.add_system(draft)
            except DuplicateSystemError as exc:
                self.host.show_error("System id taken", f"{exc}\nYour system was not saved; choose another id.")
                continue
            except SAVE_ERRORS as exc:
                self.host.show_error("Cannot add the system", f"{exc}\nNothing was saved: correct it and save again.")
                continue
            self._changed(select=draft.id)
            return draft

    def duplicate_system(self, system_id: str | None = None) -> System | None:
        system_id = system_id or self.current_id()
        if not system_id:
            return None
        source = self.repository.get_system(system_id)
        taken = set(self.repository.system_ids())
        new_id = next(c for c in (f"{system_id}-copy{n or ''}" for n in range(len(taken) + 1)) if c not in taken)
        draft = replace(source, id=new_id, name=f"{source.name} (copy)", origin="user")
        return self.add_system(draft, title=f"Duplicate {source.name}")

    def edit_system(self, system_id: str | None = None) -> System | None:
        """Edit and save a system against the version read; conflicts are resolved with the user."""
        system_id = system_id or self.current_id()
        if not system_id:
            return None
        record = self.repository.system_record(system_id)
        draft, version, ask = record.system, record.version, True
        while True:
            if ask:
                dialog = self._editor(draft, lock_id=True, title=f"Edit {draft.name}")
                if not self.host.exec_dialog(dialog):
                    return None
                draft = dialog.system()
            try:
                self.repository.update_system(draft, version)
            except ConflictError as exc:
                choice = self.host.resolve_conflict(exc)
                if choice is ConflictChoice.DISCARD:
                    self._changed(select=draft.id)
                    return None
                draft, version, ask = exc.mine, exc.theirs_version, choice is ConflictChoice.EDIT_AGAIN
                continue
            except UnknownSystemError:
                question = (f"'{draft.id}' was deleted from the catalog by someone else. Add your edited version "
                            "as a new user system?")
                if self.host.confirm("System deleted", question):
                    return self.add_system(draft, title=f"Add {draft.name}")
                self._changed()
                return None
            except SAVE_ERRORS as exc:
                self.host.show_error("Cannot save the system", f"{exc}\nYour edit is kept: correct it and save "
                                                               "again.")
                ask = True
                continue
            self._changed(select=draft.id)
            return draft

    def delete_system(self, system_id: str | None = None) -> bool:
        system_id = system_id or self.current_id()
        row_number = self.model.row_of(system_id) if system_id else -1
        if row_number < 0:
            return False
        row = self.model.system_row(row_number)
        if row.origin != "user":
            self.host.show_error("Cannot delete", f"'{row.name}' is a shipped system: duplicate it or edit it "
                                                  "instead.")
            return False
        if not self.host.confirm("Delete system", f"Delete the user system '{row.name}' ({row.id})? This cannot "
                                                  "be undone."):
            return False
        try:
            self.repository.delete_system(system_id)
        except CatalogError as exc:
            self.host.show_error("Cannot delete", str(exc))
            self.refresh()
            return False
        choice = self.workspace.state.system
        if system_id in choice.system_ids:
            ids = tuple(i for i in choice.system_ids if i != system_id)
            self.workspace.execute(SetSystem(replace(choice, system_ids=ids), text=f"stop sizing on {system_id} "
                                                                                   "(deleted)"))
        self._changed()
        return True

    # ----------------------------------------------------------------------------------- import / export
    def import_file(self, path: str | Path) -> tuple[str, ...]:
        """Import systems from a system file or systems export; returns the ids added or replaced."""
        ids = import_systems(self.repository, Path(path), confirm=self.host.confirm)
        if ids:
            self._changed(select=ids[0])
        return ids

    def export_file(self, path: str | Path, ids: tuple[str, ...] | None = None) -> int:
        """Write ``ids`` (default: the systems the filters show) to ``path``; returns the system count."""
        return export_systems(self.repository, Path(path), self.shown_ids() if ids is None else ids)

    def import_systems(self) -> tuple[str, ...]:
        """The menu's Import: pick a file and import it; problems are shown and nothing is half-imported."""
        path = self.host.choose_file("Import systems", save=False, filters=SYSTEM_FILE_FILTERS)
        if not path:
            return ()
        try:
            return self.import_file(path)
        except TRANSFER_ERRORS as exc:
            self.host.show_error("Import failed", f"Nothing was imported.\n{exc}")
            return ()

    def export_systems(self) -> int:
        """The menu's Export: write the systems the filters show to a YAML or JSON file."""
        path = self.host.choose_file(f"Export the {self.proxy.rowCount()} systems shown", save=True,
                                     filters=SYSTEM_FILE_FILTERS, name="systems.yaml")
        if not path:
            return 0
        try:
            return self.export_file(path)
        except TRANSFER_ERRORS as exc:
            self.host.show_error("Export failed", str(exc))
            return 0

