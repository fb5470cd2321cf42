"""DeviceEditorDialog: add a custom device, or edit a duplicated one, with unit-aware fields.

Every numeric field is a :class:`QuantityEdit` ("3.35 TB/s" and "3350 GB/s" both read as 3.35e12 B/s;
"3.35 kg" is refused inline with the reason), and OK stays disabled while any field is invalid. The result
is built with :func:`explorer.core.hardware.device_file.device_from_dict`, so the dialog and device files share
one validation. Fields the form does not show (sources, interconnects, MAC energies, tiles...) are kept
from the device being edited; a figure whose text is unchanged keeps its source and note, an edited one
drops them (the user's number is no longer the cited one).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QFormLayout,
    QGridLayout,
    QLabel,
    QLineEdit,
    QTabWidget,
    QWidget,
)

from explorer.core.hardware.device import DATAFLOWS, ENGINE_TYPES, KINDS, TIERS, Device
from explorer.core.hardware.device_file import DeviceFileError, device_from_dict, device_to_dict
from explorer.core.precision import PRECISIONS
from explorer.ui.catalog.editor_base import CatalogEditor
from explorer.ui.catalog.fields import cited_text, combo, identity_problems, merge_cited, show_problems
from explorer.ui.catalog.memory_levels import MemoryLevelsEditor
from explorer.ui.widgets.quantity_edit import COUNT, QuantityEdit

SCALAR_FIELDS = (  # (key in the device file, unit kind, label with the unit family)
    ("clock", "frequency", "Clock (boost) [Hz]"),
    ("tdp", "power", "TDP [W]"),
    ("price", "money", "Purchase price [USD]"),
    ("cloud_price", "money_rate", "Cloud price [USD/h]"),
)
ENGINE_COUNTS = (("rows", "Array rows"), ("cols", "Array columns"), ("units", "Units (cores / arrays)"),
                 ("sm_count", "SM count"))


class DeviceEditorDialog(CatalogEditor):
    """Edit the fields of one device. ``device`` None starts an empty custom device."""

    error_type = DeviceFileError

    def __init__(self, device: Device | None = None, *, taken_ids: Iterable[str] = (), lock_id: bool = False,
                 title: str | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(title or ("Edit device" if device is not None else "Add custom device"))
        self.quantity_edits: dict[str, QuantityEdit] = {}
        data = self._start(device, device_to_dict, taken_ids, lock_id)
        self.id_error = QLabel()
        self.id_error.setStyleSheet("color: #b00020;")
        self.kind_combo = combo(KINDS, data.get("kind", "gpu"))
        self.tier_combo = combo(TIERS, data.get("tier"), allow_none=True)
        self.family_edit = QLineEdit(str(data.get("family", "")))

        tabs = QTabWidget()
        tabs.addTab(self._general_tab(), "General")
        tabs.addTab(self._scroll(self._peaks_tab()), "Peak throughput")
        self.memory_editor = MemoryLevelsEditor(data.get("memory") or [])
        self.memory_editor.changed.connect(self._refresh)
        tabs.addTab(self._scroll(self.memory_editor), "Memory")
        tabs.addTab(self._engine_tab(), "Matrix engine")
        problems = QLabel()
        problems.setStyleSheet("color: #b00020;")
        problems.setWordWrap(True)
        problems.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._finish(tabs, problems, 720, 560)

    # -- construction
    def _quantity(self, key: str, kind: str, raw: Any) -> QuantityEdit:
        edit = QuantityEdit(kind, key, cited_text(raw))
        edit.value_changed.connect(self._refresh)
        self.quantity_edits[key] = edit
        return edit

    def _general_tab(self) -> QWidget:
        page = QWidget()
        form = QFormLayout(page)
        form.addRow("Id", self.id_edit)
        form.addRow("", self.id_error)
        form.addRow("Name", self.name_edit)
        form.addRow("Vendor", self.vendor_edit)
        form.addRow("Kind", self.kind_combo)
        form.addRow("Tier", self.tier_combo)
        form.addRow("Family", self.family_edit)
        for key, kind, label in SCALAR_FIELDS:
            form.addRow(label, self._quantity(key, kind, self._base.get(key)))
        form.addRow("Notes", self.notes_edit)
        return page

    def _peaks_tab(self) -> QWidget:
        page = QWidget()
        grid = QGridLayout(page)
        grid.addWidget(QLabel("<b>Precision</b>"), 0, 0)
        grid.addWidget(QLabel("<b>Dense peak [FLOP/s or OP/s]</b>"), 0, 1)
        grid.addWidget(QLabel("<b>Sparse (2:4) peak [FLOP/s or OP/s]</b>"), 0, 2)
        dense, sparse = self._base.get("peak") or {}, self._base.get("peak_sparse") or {}
        for row, precision in enumerate(PRECISIONS, start=1):
            grid.addWidget(QLabel(precision), row, 0, Qt.AlignmentFlag.AlignTop)
            for column, (table, values) in enumerate((("peak", dense), ("peak_sparse", sparse)), start=1):
                edit = self._quantity(f"{table}.{precision}", "throughput", values.get(precision))
                grid.addWidget(edit, row, column)
        grid.setColumnStretch(1, 1)
        grid.setColumnStretch(2, 1)
        grid.setRowStretch(len(PRECISIONS) + 1, 1)
        return page

    def _engine_tab(self) -> QWidget:
        engine = self._base.get("matrix_engine") or {}
        page = QWidget()
        form = QFormLayout(page)
        self.engine_combo = combo(ENGINE_TYPES, engine.get("type"), allow_none=True)
        self.dataflow_combo = combo(DATAFLOWS, engine.get("dataflow"), allow_none=True)
        form.addRow("Type", self.engine_combo)
        form.addRow("Dataflow (systolic)", self.dataflow_combo)
        for key, label in ENGINE_COUNTS:
            form.addRow(label, self._quantity(f"matrix_engine.{key}", COUNT, engine.get(key)))
        note = QLabel("Tensor-core tiles and thread-block tiles are kept from the device file.")
        note.setWordWrap(True)
        form.addRow(note)
        return page

    # -- validation
    def invalid_fields(self) -> list[str]:
        """Every problem that keeps OK disabled, as ``field: reason`` in form order."""
        bad = identity_problems(self.id_edit.text().strip(), self._taken, self.name_edit.text().strip(),
                                self.vendor_edit.text().strip())
        bad += [f"{key}: {edit.error()}" for key, edit in self.quantity_edits.items() if not edit.is_valid()]
        bad += self.memory_editor.problems()
        return bad

    def _refresh(self) -> None:
        bad = self.invalid_fields()
        id_problem = next((b for b in bad if b.startswith("id:")), "")
        self.id_error.setText(id_problem[4:])
        self.id_error.setVisible(bool(id_problem))
        show_problems(self.problems_label, self.ok_button, bad)

    # -- result
    def device_dict(self) -> dict:
        """The device in device-file form: the edited device's dict with the form's fields written over it."""
        base = self._base
        data = dict(base)
        data.update(id=self.id_edit.text().strip(), name=self.name_edit.text().strip(),
                    vendor=self.vendor_edit.text().strip(), kind=self.kind_combo.currentData(),
                    tier=self.tier_combo.currentData(), family=self.family_edit.text().strip() or None,
                    notes=self._notes())
        for key, _kind, _label in SCALAR_FIELDS:
            data[key] = merge_cited(base.get(key), self.quantity_edits[key].text())
        if isinstance(base.get("price"), dict) and "date" in base["price"] and isinstance(data["price"], str):
            data["price"] = {"value": data["price"], "date": base["price"]["date"]}
        for table in ("peak", "peak_sparse"):
            old = base.get(table) or {}
            merged = {p: merge_cited(old.get(p), self.quantity_edits[f"{table}.{p}"].text())
                      for p in PRECISIONS}
            data[table] = {p: v for p, v in merged.items() if v is not None}
        data["memory"] = self.memory_editor.levels()
        data["matrix_engine"] = self._engine_dict()
        return {k: v for k, v in data.items() if v is not None}

    def _engine_dict(self) -> dict | None:
        etype = self.engine_combo.currentData()
        if etype is None:
            return None
        old = self._base.get("matrix_engine") or {}
        engine = {k: v for k, v in old.items() if k in ("tile", "block_tile")}
        engine["type"] = etype
        if self.dataflow_combo.currentData() is not None:
            engine["dataflow"] = self.dataflow_combo.currentData()
        for key, _label in ENGINE_COUNTS:
            value = merge_cited(old.get(key), self.quantity_edits[f"matrix_engine.{key}"].text(), count=True)
            if value is not None:
                engine[key] = value
        return engine

    def build_device(self) -> Device:
        """The edited device (origin 'user'); raises DeviceFileError listing every problem."""
        return device_from_dict(self.device_dict(), where="device editor")

    build = build_device
    device = CatalogEditor.value

    def problem_line(self, problem: str) -> str:
        return problem.split(": ", 2)[-1] if problem.startswith("device editor") else problem
