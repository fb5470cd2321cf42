"""CatalogDock: browse the device catalog, check devices to compare, and add, duplicate, edit or delete them;
its Systems tab (:mod:`.systems_browser`) does the same for the catalog's systems; what both share (the table,
the buttons, the save loops) is :class:`~explorer.ui.catalog.browser.CatalogBrowser`.

Layout: filter bar, sortable table (check = compare, through the workspace's undo stack), a detail pane
with every figure and its source, and the edit buttons. Saving goes through the repository with
optimistic locking: when someone else saved the device first (a shared PostgreSQL catalog), the conflict
is shown field by field and the user's edit is kept for a retry, never dropped. Dialogs are run through
:meth:`CatalogDock.exec_dialog`, :meth:`confirm`, :meth:`show_error` and :meth:`choose_file`, so
tests can drive them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QModelIndex
from PySide6.QtWidgets import (
    QDialog,
    QDockWidget,
    QFileDialog,
    QMessageBox,
    QTabWidget,
    QWidget,
)

from explorer.core.hardware.device import Device
from explorer.core.hardware.device_file import DeviceFileError
from explorer.core.session.commands import SelectDevices
from explorer.core.session.workspace import Workspace
from explorer.store.errors import CatalogError, ConflictError, DuplicateDeviceError, UnknownDeviceError
from explorer.store.io import ImportFileError
from explorer.store.system_io import holds_systems
from explorer.ui.catalog.browser import CatalogBrowser
from explorer.ui.catalog.conflict import ConflictChoice, ConflictDialog
from explorer.ui.catalog.detail import DeviceDetailView
from explorer.ui.catalog.editor import DeviceEditorDialog
from explorer.ui.catalog.filter_bar import CatalogFilterBar
from explorer.ui.catalog.proxy import CatalogFilterProxy
from explorer.ui.catalog.table_model import COLUMN_INDEX, ID_ROLE, CatalogTableModel
from explorer.ui.catalog.transfer import FILE_FILTERS, ImportRejectedError, export_devices, import_devices

if TYPE_CHECKING:  # imports SQLAlchemy, which the main window does not need to start
    from explorer.store.repository import CatalogRepository
    from explorer.ui.catalog.systems_browser import SystemsBrowser

SAVE_ERRORS = (CatalogError, DeviceFileError)
SYSTEMS_TIP = "Nodes, racks, slices and clusters of catalog devices, with their links"
TRANSFER_ERRORS = (*SAVE_ERRORS, ImportFileError, ImportRejectedError)


class CatalogDock(CatalogBrowser, QDockWidget):
    noun, id_column, id_role = "device", COLUMN_INDEX["name"], ID_ROLE
    save_errors = SAVE_ERRORS
    duplicate_error, unknown_error = DuplicateDeviceError, UnknownDeviceError

    def __init__(self, workspace: Workspace, repository: CatalogRepository, parent: QWidget | None = None):
        super().__init__("Device catalog", parent)
        self.setObjectName("CatalogDock")
        self.workspace = workspace
        self.repository = repository
        self.host = self
        self.model = CatalogTableModel(workspace, self)
        self.proxy = CatalogFilterProxy(self)
        self.proxy.setSourceModel(self.model)
        self.filter_bar = CatalogFilterBar()
        self.detail = DeviceDetailView()
        tips = {"Add…": "Add a custom device",
                "Duplicate…": "Copy the selected device as a user device and edit the copy",
                "Edit…": "Edit the selected device (edits of shipped devices survive catalog updates)",
                "Delete": "Delete the selected user device (shipped devices cannot be deleted)"}
        devices = self._build(COLUMN_INDEX["vendor"], tips)
        self.table.horizontalHeader().setStretchLastSection(False)
        self.model.precision_headers_changed.connect(self.table.horizontalHeader().viewport().update)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(devices, "Devices")
        # the Systems tab is built when first chosen or asked for (:attr:`systems`; issue 22: not in the first frame)
        self._systems: SystemsBrowser | None = None
        self.tabs.addTab(QWidget(), "Systems")
        self.tabs.setTabToolTip(1, SYSTEMS_TIP)
        self.tabs.currentChanged.connect(self._on_tab_changed)
        self.setWidget(self.tabs)

        self.table.doubleClicked.connect(self._on_double_clicked)
        self.table.clicked.connect(self._on_clicked)
        self._fill_when_open(COLUMN_INDEX["name"], 260)

    @property
    def systems(self) -> SystemsBrowser:
        """The Systems tab (built now when it has not been shown yet)."""
        if self._systems is None:
            from explorer.ui.catalog.systems_browser import SystemsBrowser

            self._systems = SystemsBrowser(self.workspace, self.repository, self)
            current = self.tabs.currentIndex()
            blocked = self.tabs.blockSignals(True)
            placeholder = self.tabs.widget(1)
            self.tabs.removeTab(1)
            placeholder.deleteLater()
            self.tabs.insertTab(1, self._systems, "Systems")
            self.tabs.setTabToolTip(1, SYSTEMS_TIP)
            self.tabs.setCurrentIndex(current)
            self.tabs.blockSignals(blocked)
        return self._systems

    def _on_tab_changed(self, index: int) -> None:
        if index == 1:
            self.systems  # noqa: B018 - built on first show

    # the tab's public names
    select_device = CatalogBrowser.select_item
    duplicate_device = CatalogBrowser.duplicate_item
    edit_device = CatalogBrowser.edit_item
    delete_device = CatalogBrowser.delete_item

    def add_device(self, draft: Device | None = None, title: str = "Add custom device") -> Device | None:
        return self.add_item(draft, title)

    # ------------------------------------------------------------------------------ the base's hooks
    def _rows(self):
        return self.repository.rows()

    def _row(self, number: int):
        return self.model.device_row(number)

    def _set_vendors(self, rows) -> None:
        self.filter_bar.set_vendors([row.vendor for row in rows])

    def _get(self, item_id: str) -> Device:
        return self.repository.get(item_id)

    def _record(self, item_id: str) -> tuple[Device, int]:
        record = self.repository.record(item_id)
        return record.device, record.version

    def _ids(self) -> tuple[str, ...]:
        return tuple(self.repository.ids())

    def _add(self, item: Device) -> None:
        self.repository.add(item)

    def _update(self, item: Device, version: int) -> None:
        self.repository.update(item, version)

    def _remove(self, item_id: str) -> None:
        self.repository.delete(item_id)

    def _editor(self, draft: Device | None, **kwargs) -> DeviceEditorDialog:
        return DeviceEditorDialog(draft, parent=self, **kwargs)

    def _show(self, item: Device | None, overridden: bool) -> None:
        self.detail.show_device(item, overridden)

    def _on_current_changed(self, *args) -> None:
        super()._on_current_changed(*args)
        device_id = self.current_id()
        if device_id and device_id in self.workspace.device_ids:
            self.workspace.focus_device(device_id)

    def _after_write(self, select: str | None = None, edited: bool = False) -> None:
        self.refresh(select=select)
        if edited and select:
            self._reanalyze(select)

    def _reanalyze(self, device_id: str) -> None:
        """Hand the stored device to the workspace when it is being compared, so every panel re-analyzes; its
        changed figures (peak, bandwidth, capacity, TDP, prices) also become the project's device overrides (one
        undoable step), so a catalog write of a compared device (an edit, a conflict resolved, an import) travels
        with the project file."""
        if device_id in self.workspace.device_ids:
            before = next((d for d in self.workspace.devices if d.id == device_id), None)  # as the session shows it
            stored = self.repository.get(device_id)
            self.workspace.put_devices([stored])
            if before is not None:
                self.workspace.override_device(stored, base=before)

    def _forget(self, item_id: str) -> None:
        if item_id in self.workspace.device_ids:
            remaining = tuple(i for i in self.workspace.device_ids if i != item_id)
            self.workspace.execute(SelectDevices(remaining, text=f"stop comparing {item_id} (deleted)"))

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
        return export_devices(self.repository, Path(path), self.shown_ids() if ids is None else ids)

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
