"""SystemEditorDialog: add, duplicate or edit a system of the catalog, with unit-aware fields.

The form is the system file (``docs/system-file.md``): id, name, vendor, kind, the catalog device and its count,
devices per node, the communication domains (:mod:`.system_domains`), the host link and host memory, notes. Every
figure is a :class:`QuantityEdit` ("900 GB/s" and "7.2 Tbit/s" both read as B/s; "900 GB" is refused with the
reason), and the whole form is checked by the system file's own reader
(:func:`~explorer.core.hardware.system_file.check_system_dict`) as you type, so the dialog and system files share
one validation: each problem is one line naming its field, and OK stays disabled while there is any. Sources,
conflicts and the notes of unchanged figures are kept from the system being edited; an edited figure drops its
source (the user's number is no longer the cited one).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from PySide6.QtWidgets import (
    QFormLayout,
    QLabel,
    QLineEdit,
    QTabWidget,
    QWidget,
)

from explorer.core.hardware.device import DIRECTIONS
from explorer.core.hardware.system import SYSTEM_KINDS, System
from explorer.core.hardware.system_file import FORMAT, SystemFileError, check_system_dict, system_to_dict
from explorer.ui.catalog.editor_base import CatalogEditor
from explorer.ui.catalog.fields import cited_text, combo, identity_problems, merge_cited, show_problems
from explorer.ui.catalog.system_domains import DomainsEditor, error_label
from explorer.ui.widgets.quantity_edit import COUNT, QuantityEdit

WHERE = "system editor"
SHOWN = 8  # problems listed under the tabs (then "… N more")


def field_problem(line: str) -> str:
    """``field: message`` from a system-file problem ``where: id: field: message``."""
    return line.split(": ", 2)[-1] if line.startswith(f"{WHERE}: ") else line


class SystemEditorDialog(CatalogEditor):
    """Edit the fields of one system; ``system`` None starts an empty one. ``devices``: the catalog's device ids
    (a system must be made of one of them)."""

    error_type = SystemFileError

    def __init__(self, system: System | None = None, *, devices: Iterable[str] = (), taken_ids: Iterable[str] = (),
                 lock_id: bool = False, title: str | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(title or ("Edit system" if system is not None else "Add system"))
        data = self._start(system, system_to_dict, taken_ids, lock_id)
        self.kind_combo = combo(SYSTEM_KINDS, data.get("kind", "node"))
        device_ids = sorted(set(devices) | ({data["device"]} if "device" in data else set()))
        self.device_combo = combo(device_ids, data.get("device"))
        self.device_combo.setToolTip("The catalog device the system is made of (add a device first if missing)")
        self.devices_edit = QuantityEdit(COUNT, "devices", str(data.get("devices", "")), required=True)
        self.node_edit = QuantityEdit(COUNT, "node_devices", str(data.get("node_devices", "")))
        self.node_edit.line_edit.setPlaceholderText("empty: the scale-up domain's size")
        host = data.get("host_link") or {}
        self.host_name = QLineEdit(str(host.get("name", "")))
        self.host_name.setPlaceholderText("e.g. PCIe Gen5 x16")
        self.host_bandwidth = QuantityEdit("bandwidth", "host_link.bandwidth", cited_text(host.get("bandwidth")),
                                           check_range=False)
        self.host_direction = combo(DIRECTIONS, host.get("direction", "per_direction"))
        self.host_memory = QuantityEdit("bytes", "host_memory", cited_text(data.get("host_memory")),
                                        check_range=False)
        self.domains_editor = DomainsEditor(list(data.get("domains") or []))

        tabs = QTabWidget()
        tabs.addTab(self._general_tab(), "General")
        tabs.addTab(self._scroll(self.domains_editor), "Domains")
        tabs.addTab(self._host_tab(), "Host")
        self.host_name.textChanged.connect(self._refresh)
        for box in (self.kind_combo, self.device_combo, self.host_direction):
            box.currentIndexChanged.connect(self._refresh)
        for edit in (self.devices_edit, self.node_edit, self.host_bandwidth, self.host_memory):
            edit.value_changed.connect(self._refresh)
        self.domains_editor.changed.connect(self._refresh)
        self._finish(tabs, error_label(), 1100, 520)

    # -- construction
    def _general_tab(self) -> QWidget:
        page = QWidget()
        form = QFormLayout(page)
        form.addRow("Id", self.id_edit)
        form.addRow("Name", self.name_edit)
        form.addRow("Vendor", self.vendor_edit)
        form.addRow("Kind", self.kind_combo)
        form.addRow("Device", self.device_combo)
        form.addRow("Devices [count]", self.devices_edit)
        form.addRow("Devices per node [count]", self.node_edit)
        form.addRow("Notes", self.notes_edit)
        return page

    def _host_tab(self) -> QWidget:
        page = QWidget()
        form = QFormLayout(page)
        form.addRow("Host link", self.host_name)
        form.addRow("Host link bandwidth [B/s]", self.host_bandwidth)
        form.addRow("Direction", self.host_direction)
        form.addRow("Host memory per node [B]", self.host_memory)
        note = QLabel("The host link is per device (PCIe, NVLink-C2C); empty = not stated.")
        note.setWordWrap(True)
        form.addRow(note)
        return page

    # -- validation
    def invalid_fields(self) -> list[str]:
        """Every problem that keeps OK disabled, one ``field: reason`` line each, in form order."""
        bad = identity_problems(self.id_edit.text().strip(), self._taken, self.name_edit.text().strip(),
                                self.vendor_edit.text().strip())
        if self.device_combo.currentData() is None:
            bad.append("device: choose a catalog device")
        bad += [f"{e.field}: {e.error()}" for e in (self.devices_edit, self.node_edit) if not e.is_valid()]
        bad += self.domains_editor.problems()
        if self.host_bandwidth.text() and not self.host_name.text().strip():
            bad.append("host_link.name: is required with a host link bandwidth")
        bad += [f"{e.field}: {e.error()}" for e in (self.host_bandwidth, self.host_memory) if not e.is_valid()]
        if not bad:  # the form reads: the system file's own checks (the hierarchy, sizes that divide...)
            _, problems = check_system_dict(self.system_dict(), WHERE)
            bad += [field_problem(p) for p in problems]
        return bad

    def _refresh(self) -> None:
        bad = self.invalid_fields()
        show_problems(self.problems_label, self.ok_button, bad, SHOWN)
        self.problems_label.setVisible(bool(bad))

    # -- result
    def system_dict(self) -> dict[str, Any]:
        """The system in system-file form: the edited system's mapping with the form's fields written over it."""
        base = self._base
        data = dict(base)
        data.update(format=FORMAT, id=self.id_edit.text().strip(), name=self.name_edit.text().strip(),
                    vendor=self.vendor_edit.text().strip(), kind=self.kind_combo.currentData(),
                    device=self.device_combo.currentData(), notes=self._notes())
        for key, edit in (("devices", self.devices_edit), ("node_devices", self.node_edit)):
            data[key] = int(edit.value()) if edit.value() is not None else None
        data["domains"] = self.domains_editor.domains()
        old_host = base.get("host_link") or {}
        bandwidth = merge_cited(old_host.get("bandwidth"), self.host_bandwidth.text())
        name = self.host_name.text().strip()
        host = {"name": name} if name else {}
        if bandwidth is not None:
            host.update(bandwidth=bandwidth, direction=self.host_direction.currentData())
        data["host_link"] = host or None
        data["host_memory"] = merge_cited(base.get("host_memory"), self.host_memory.text())
        return {k: v for k, v in data.items() if v is not None}

    def build_system(self) -> System:
        """The edited system (origin 'user'); raises SystemFileError listing every problem."""
        system, problems = check_system_dict(self.system_dict(), WHERE)
        if problems or system is None:
            raise SystemFileError(problems)
        return system

    build = build_system
    system = CatalogEditor.value
    problem_line = staticmethod(field_problem)
