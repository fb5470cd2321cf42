"""CatalogDock: browse the device catalog, check devices to compare, and add, duplicate, edit or delete them;
its Systems tab (:mod:`.systems_browser`) does the same for the catalog's systems.

Layout: filter bar, sortable table (check = compare, through the workspace's undo stack), a detail pane
with every figure and its source, and the edit buttons. Saving goes through the repository with
optimistic locking: when someone else saved the device first (a shared PostgreSQL catalog), the conflict
is shown field by field and the user's edit is kept for a retry, never dropped. Dialogs are run through
:meth:`CatalogDock.exec_dialog`, :meth:`confirm`, :meth:`show_error` and :meth:`choose_file`, so
tests can drive them.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QItemSelectionModel, QModelIndex, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDockWidget,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QMessageBox,
    QPushButton,
    QSplitter,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from explorer.core.hardware.device import Device
from explorer.core.hardware.device_file import DeviceFileError
from explorer.core.session.commands import SelectDevices
from explorer.core.session.workspace import Workspace
from explorer.store.errors import CatalogError, ConflictError, DuplicateDeviceError, UnknownDeviceError
from explorer.store.io import ImportFileError
from explorer.store.repository import CatalogRepository
from explorer.store.system_io import holds_systems
from explorer.ui.catalog.conflict import ConflictChoice, ConflictDialog
from explorer.ui.catalog.detail import DeviceDetailView
from explorer.ui.catalog.editor import DeviceEditorDialog
from explorer.ui.catalog.filter_bar import CatalogFilterBar
from explorer.ui.catalog.proxy import CatalogFilterProxy
from explorer.ui.catalog.systems_browser import SystemsBrowser
from explorer.ui.catalog.table_model import COLUMN_INDEX, ID_ROLE, CatalogTableModel
from explorer.ui.catalog.transfer import FILE_FILTERS, ImportRejectedError, export_devices, import_devices

SAVE_ERRORS = (CatalogError, DeviceFileError)
TRANSFER_ERRORS = (*SAVE_ERRORS, ImportFileError, ImportRejectedError)


class CatalogDock(QDockWidget):
    def __init__(self, workspace: Workspace, repository: CatalogRepository, parent: QWidget | None = None):
        super().__init__("Device catalog", parent)
        self.setObjectName("CatalogDock")
        self.workspace = workspace
        self.repository = repository
        self.model = CatalogTableModel(workspace, self)
        self.proxy = CatalogFilterProxy(self)
        self.proxy.setSourceModel(self.model)
        self.filter_bar = CatalogFilterBar()
        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(COLUMN_INDEX["vendor"], Qt.SortOrder.AscendingOrder)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setAlternatingRowColors(True)
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setDefaultSectionSize(22)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(False)
        self.model.precision_headers_changed.connect(header.viewport().update)
        self.detail = DeviceDetailView()
        self.buttons = {name: QPushButton(name) for name in ("Add…", "Duplicate…", "Edit…", "Delete")}
        self.buttons["Add…"].setToolTip("Add a custom device")
        self.buttons["Duplicate…"].setToolTip("Copy the selected device as a user device and edit the copy")
        self.buttons["Edit…"].setToolTip("Edit the selected device (edits of shipped devices survive "
                                         "catalog updates)")
        self.buttons["Delete"].setToolTip("Delete the selected user device (shipped devices cannot be "
                                          "deleted)")
        self.buttons["Add…"].clicked.connect(lambda: self.add_device())
        self.buttons["Duplicate…"].clicked.connect(lambda: self.duplicate_device())
        self.buttons["Edit…"].clicked.connect(lambda: self.edit_device())
        self.buttons["Delete"].clicked.connect(lambda: self.delete_device())

        button_row = QHBoxLayout()
        for button in self.buttons.values():
            button_row.addWidget(button)
        button_row.addStretch(1)
        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addWidget(self.filter_bar)
        top_layout.addWidget(self.table)
        top_layout.addLayout(button_row)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(top)
        splitter.addWidget(self.detail)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        self.systems = SystemsBrowser(workspace, repository, self)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(splitter, "Devices")
        self.tabs.addTab(self.systems, "Systems")
        self.tabs.setTabToolTip(1, "Nodes, racks, slices and clusters of catalog devices, with their links")
        self.setWidget(self.tabs)

        self.filter_bar.filter_changed.connect(self._on_filter_changed)
        self.table.selectionModel().currentRowChanged.connect(self._on_current_changed)
        self.table.doubleClicked.connect(self._on_double_clicked)
        self.table.clicked.connect(self._on_clicked)
        self.refresh()
        self.table.resizeColumnsToContents()
        header.resizeSection(COLUMN_INDEX["name"], min(header.sectionSize(COLUMN_INDEX["name"]), 260))

    # ------------------------------------------------------------------------------------ table state
    def refresh(self, select: str | None = None) -> None:
        """Re-read the rows from the repository, keeping (or moving to ``select``) the current device."""
        keep = select or self.current_id()
        rows = self.repository.rows()
        self.model.set_rows(rows)
        self.proxy.sort(self.proxy.sortColumn(), self.proxy.sortOrder())
        self.filter_bar.set_vendors([row.vendor for row in rows])
        self._update_count()
        if keep:
            self.select_device(keep)
        self._on_current_changed()

    def current_id(self) -> str | None:
        index = self.table.selectionModel().currentIndex()
        return index.data(ID_ROLE) if index.isValid() else None

    def select_device(self, device_id: str) -> bool:
        """Make ``device_id`` the current row, clearing filters that hide it; False if it is not listed."""
        source_row = self.model.row_of(device_id)
        if source_row < 0:
            return False
        index = self.proxy.mapFromSource(self.model.index(source_row, 1))
        if not index.isValid():
            self.filter_bar.search.clear()
            for box in (self.filter_bar.vendor, self.filter_bar.kind, self.filter_bar.tier,
                        self.filter_bar.precision):
                box.setCurrentIndex(0)
            index = self.proxy.mapFromSource(self.model.index(source_row, 1))
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
        device_id = self.current_id()
        row = self.model.device_row(self.model.row_of(device_id)) if device_id else None
        device = None
        if row is not None:
            try:
                device = self.repository.get(row.id)
            except CatalogError as exc:
                self.show_error("Cannot read the device", str(exc))
        self.detail.show_device(device, row is not None and row.overridden)
        for name in ("Duplicate…", "Edit…"):
            self.buttons[name].setEnabled(device is not None)
        self.buttons["Delete"].setEnabled(row is not None and row.origin == "user")
        if device_id and device_id in self.workspace.device_ids:
            self.workspace.focus_device(device_id)

    def _on_clicked(self, index: QModelIndex) -> None:
        """A tick in the compare column also makes that device the one the detail pane shows (a click on the box
        alone did not move the current row)."""
        if index.column() == COLUMN_INDEX["compare"] and index.data(ID_ROLE) != self.current_id():
            self.select_device(index.data(ID_ROLE))

    def _on_double_clicked(self, index: QModelIndex) -> None:
        if index.column() != COLUMN_INDEX["compare"]:
            self.edit_device(index.data(ID_ROLE))

    # ------------------------------------------------------------------------------ dialogs (test hooks)
    def exec_dialog(self, dialog: QDialog) -> bool:
        """Run a modal dialog; True when it was accepted."""
        return dialog.exec() == QDialog.DialogCode.Accepted

    def confirm(self, title: str, question: str) -> bool:
        answer = QMessageBox.question(self, title, question)
        return answer == QMessageBox.StandardButton.Yes

    def show_error(self, title: str, message: str) -> None:
        QMessageBox.warning(self, title, message)

    def resolve_conflict(self, error: ConflictError) -> ConflictChoice:
        dialog = ConflictDialog(error, self)
        self.exec_dialog(dialog)
        return dialog.choice

    # ------------------------------------------------------------------------------------------ editing
    def add_device(self, draft: Device | None = None, title: str = "Add custom device") -> Device | None:
        """Edit ``draft`` (or an empty device) and add it; a taken id re-opens the editor with the edit."""
        while True:
            dialog = DeviceEditorDialog(draft, taken_ids=self.repository.ids(), title=title, parent=self)
            if not self.exec_dialog(dialog):
                return None
            draft = dialog.device()
            try:
                self.repository.add(draft)
            except DuplicateDeviceError as exc:  # someone added the id since the dialog opened
                self.show_error("Device id taken", f"{exc}\nYour device was not saved; choose another id.")
                continue
            except SAVE_ERRORS as exc:
                self.show_error("Cannot add the device", str(exc))
                continue
            self.refresh(select=draft.id)
            return draft

    def duplicate_device(self, device_id: str | None = None) -> Device | None:
        device_id = device_id or self.current_id()
        if not device_id:
            return None
        source = self.repository.get(device_id)
        taken = set(self.repository.ids())
        candidates = (f"{device_id}-copy{n or ''}" for n in range(len(taken) + 1))
        new_id = next(c for c in candidates if c not in taken)
        draft = replace(source, id=new_id, name=f"{source.name} (copy)", origin="user")
        return self.add_device(draft, title=f"Duplicate {source.name}")

    def edit_device(self, device_id: str | None = None) -> Device | None:
        """Edit and save a device against the version read; conflicts are resolved with the user."""
        device_id = device_id or self.current_id()
        if not device_id:
            return None
        record = self.repository.record(device_id)
        return self._save_loop(record.device, record.version)

    def _save_loop(self, draft: Device, version: int) -> Device | None:
        ask = True
        while True:
            if ask:
                dialog = DeviceEditorDialog(draft, lock_id=True, title=f"Edit {draft.name}", parent=self)
                if not self.exec_dialog(dialog):
                    return None
                draft = dialog.device()
            try:
                self.repository.update(draft, version)
            except ConflictError as exc:
                choice = self.resolve_conflict(exc)
                if choice is ConflictChoice.DISCARD:
                    self.refresh(select=draft.id)
                    self._reanalyze(draft.id, edited=False)
                    return None
                draft, version, ask = exc.mine, exc.theirs_version, choice is ConflictChoice.EDIT_AGAIN
                continue
            except UnknownDeviceError:
                question = (f"'{draft.id}' was deleted from the catalog by someone else. "
                            "Add your edited version as a new user device?")
                if self.confirm("Device deleted", question):
                    return self.add_device(draft, title=f"Add {draft.name}")
                self.refresh()
                return None
            except SAVE_ERRORS as exc:
                self.show_error("Cannot save the device",
                                f"{exc}\nYour edit is kept: correct it and save again.")
                ask = True
                continue
            self.refresh(select=draft.id)
            self._reanalyze(draft.id)
            return draft

    def _reanalyze(self, device_id: str, edited: bool = True) -> None:
        """Hand the stored device to the workspace when it is being compared, so every panel re-analyzes; an
        ``edited`` device's changed figures (peak, bandwidth, capacity, TDP, prices) also become the project's
        device overrides (one undoable step), so the edit travels with the project file."""
        if device_id in self.workspace.device_ids:
            before = next((d for d in self.workspace.devices if d.id == device_id), None)  # as the session shows it
            stored = self.repository.get(device_id)
            self.workspace.put_devices([stored])
            if edited and before is not None:
                self.workspace.override_device(stored, base=before)

    def delete_device(self, device_id: str | None = None) -> bool:
        device_id = device_id or self.current_id()
        row_number = self.model.row_of(device_id) if device_id else -1
        if row_number < 0:
            return False
        row = self.model.device_row(row_number)
        if row.origin != "user":
            self.show_error("Cannot delete",
                            f"'{row.name}' is a shipped device: duplicate it or edit it instead.")
            return False
        question = f"Delete the user device '{row.name}' ({row.id})? This cannot be undone."
        if not self.confirm("Delete device", question):
            return False
        try:
            self.repository.delete(device_id)
        except CatalogError as exc:
            self.show_error("Cannot delete", str(exc))
            self.refresh()
            return False
        if device_id in self.workspace.device_ids:
            remaining = tuple(i for i in self.workspace.device_ids if i != device_id)
            self.workspace.execute(SelectDevices(remaining, text=f"stop comparing {device_id} (deleted)"))
        self.refresh()
        return True

    # ----------------------------------------------------------------------------------- import / export
    def import_file(self, path: str | Path) -> tuple[str, ...]:
        """Import devices from a device file or catalog export (or systems, from a system file or systems export:
        the Systems tab imports those); returns the ids added or replaced."""
        if holds_systems(path):
            self.tabs.setCurrentWidget(self.systems)
            return self.systems.import_file(path)
        ids = import_devices(self.repository, Path(path), confirm=self.confirm)
        self.refresh(select=ids[0] if ids else None)
        for device_id in ids:
            self._reanalyze(device_id)
        return ids

    def export_file(self, path: str | Path, ids: tuple[str, ...] | None = None) -> int:
        """Write ``ids`` (default: the devices the filters show) to ``path``; returns the device count."""
        if ids is None:
            ids = tuple(self.proxy.device_id(r) for r in range(self.proxy.rowCount()))
        return export_devices(self.repository, Path(path), ids)

    def import_catalog(self) -> tuple[str, ...]:
        """File > Import: pick a file and import it; problems are shown and nothing is half-imported."""
        path = self.choose_file("Import devices", save=False)
        if not path:
            return ()
        try:
            return self.import_file(path)
        except TRANSFER_ERRORS as exc:
            self.show_error("Import failed", f"Nothing was imported.\n{exc}")
            return ()

    def export_catalog(self) -> int:
        """File > Export: write the devices the filters show to a YAML, JSON or CSV file."""
        path = self.choose_file(f"Export the {self.proxy.rowCount()} devices shown", save=True)
        if not path:
            return 0
        try:
            return self.export_file(path)
        except TRANSFER_ERRORS as exc:
            self.show_error("Export failed", str(exc))
            return 0

    def choose_file(self, title: str, save: bool, filters: str = FILE_FILTERS, name: str = "devices.yaml") -> str:
        """Ask for a file path ('' when cancelled)."""
        if save:
            path, _ = QFileDialog.getSaveFileName(self, title, name, filters)
        else:
            path, _ = QFileDialog.getOpenFileName(self, title, "", filters)
        return path
