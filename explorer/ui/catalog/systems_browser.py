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

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu, QToolButton, QVBoxLayout, QWidget

from explorer.core.hardware.system import System
from explorer.core.hardware.system_file import SystemFileError
from explorer.core.session.commands import SetSystem
from explorer.store.errors import CatalogError, DuplicateSystemError, UnknownSystemError
from explorer.store.io import ImportFileError
from explorer.ui.catalog.browser import CatalogBrowser
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


class SystemsBrowser(CatalogBrowser, QWidget):
    """The Systems tab; ``host`` is the catalog dock, whose dialog hooks it uses."""

    noun, id_role = "system", ID_ROLE
    save_errors = SAVE_ERRORS
    duplicate_error, unknown_error = DuplicateSystemError, UnknownSystemError

    def __init__(self, workspace, repository, host):
        super().__init__()
        self.workspace, self.repository, self.host = workspace, repository, host
        self.model = SystemTableModel(self)
        self.proxy = SystemFilterProxy(self)
        self.proxy.setSourceModel(self.model)
        self.filter_bar = SystemFilterBar()
        self.detail = SystemDetailView()
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
        tips = {"Add…": "Add a system made of a catalog device",
                "Duplicate…": "Copy the selected system as a user system and edit the copy",
                "Edit…": "Edit the selected system (edits of shipped systems survive catalog updates)",
                "Delete": "Delete the selected user system (shipped systems cannot be deleted)"}
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self._build(COLUMN_INDEX["vendor"], tips, extra=self.menu_button))
        self.table.doubleClicked.connect(lambda index: self.edit_system(index.data(ID_ROLE)))
        self._fill_when_open(COLUMN_INDEX["name"], 240)

    # the tab's public names
    select_system = CatalogBrowser.select_item
    add_system = CatalogBrowser.add_item
    duplicate_system = CatalogBrowser.duplicate_item
    edit_system = CatalogBrowser.edit_item
    delete_system = CatalogBrowser.delete_item

    # ------------------------------------------------------------------------------ the base's hooks
    def _rows(self):
        return self.repository.system_rows()

    def _row(self, number: int):
        return self.model.system_row(number)

    def _set_vendors(self, rows) -> None:
        self.filter_bar.set_rows(rows)

    def _get(self, item_id: str) -> System:
        return self.repository.get_system(item_id)

    def _record(self, item_id: str) -> tuple[System, int]:
        record = self.repository.system_record(item_id)
        return record.system, record.version

    def _ids(self) -> tuple[str, ...]:
        return tuple(self.repository.system_ids())

    def _add(self, item: System) -> None:
        self.repository.add_system(item)

    def _update(self, item: System, version: int) -> None:
        self.repository.update_system(item, version)

    def _remove(self, item_id: str) -> None:
        self.repository.delete_system(item_id)

    def _editor(self, draft: System | None, **kwargs) -> SystemEditorDialog:
        return SystemEditorDialog(draft, devices=self.repository.ids(), parent=self, **kwargs)

    def _show(self, item: System | None, overridden: bool) -> None:
        self.detail.show_system(item, overridden)

    def _after_write(self, select: str | None = None, edited: bool = False) -> None:
        """After a write: the table, then the workspace's systems (the Systems panel's choices, re-analysis)."""
        self.refresh(select=select)
        self.workspace.reload_systems()

    def _forget(self, item_id: str) -> None:
        choice = self.workspace.state.system
        if item_id in choice.system_ids:
            ids = tuple(i for i in choice.system_ids if i != item_id)
            self.workspace.execute(SetSystem(replace(choice, system_ids=ids),
                                             text=f"stop sizing on {item_id} (deleted)"))

    # ----------------------------------------------------------------------------------- import / export
    def import_file(self, path: str | Path) -> tuple[str, ...]:
        """Import systems from a system file or systems export; returns the ids added or replaced."""
        ids = import_systems(self.repository, Path(path), confirm=self.host.confirm)
        if ids:
            self._after_write(select=ids[0])
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

