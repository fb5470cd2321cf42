"""The systems of the catalog as a table: the model, its search-and-filter proxy and the filter bar above it.

Rows are the store's :class:`~explorer.store.system_repository.SystemRow`; bandwidths are per device and per
direction (a bidirectional figure is halved, a per-node one divided over the node's devices), shown in GB/s
(10^9 B/s), "—" when the system file states none. Filters are the store's own
:class:`~explorer.store.system_repository.SystemFilter`, applied in memory by :func:`system_row_matches` with the
meaning of ``CatalogRepository.system_rows(filter)`` (a test checks they agree), as the device table does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
)
from PySide6.QtWidgets import QComboBox, QWidget

from explorer.core.hardware.system import SYSTEM_KINDS
from explorer.store.rows import SystemFilter, SystemRow, origin_label
from explorer.ui.catalog.filter_bar import FilterBar, choices, one
from explorer.ui.catalog.proxy import FilterProxy

Index = QModelIndex | QPersistentModelIndex
ROOT = QModelIndex()  # the invisible root of a table model
DASH = "\u2014"
ID_ROLE = Qt.ItemDataRole.UserRole + 1
SORT_ROLE = Qt.ItemDataRole.UserRole + 2
PER_DIRECTION = ("per device and per direction (a bidirectional figure is halved; a figure per node is divided "
                 "over its devices); \u2014: the system file states none")
# (key, header, tooltip)
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("name", "Name", "The system's name"),
    ("vendor", "Vendor", "Who builds it"),
    ("kind", "Kind", "node, rack, slice or cluster"),
    ("device_id", "Device", "The catalog device it is made of"),
    ("devices", "Devices [count]", "Accelerators in the system"),
    ("node_devices", "Per node [devices]", "Accelerators per node (the host they share)"),
    ("scale_up_bandwidth", "Scale-up [GB/s]",
     "Scale-up link (NVLink, ICI, PCIe switch) in GB/s = 1e9 B/s, " + PER_DIRECTION),
    ("scale_out_bandwidth", "Scale-out [GB/s]",
     "Scale-out network (InfiniBand, Ethernet) in GB/s = 1e9 B/s, " + PER_DIRECTION),
    ("host_bandwidth", "Host link [GB/s]",
     ("Link to the host's memory (PCIe, NVLink-C2C) in GB/s = 1e9 B/s, per device and per direction; "
      "\u2014: not stated")),
    ("origin", "Origin", "shipped with the app, shipped (edited) by you, or a user system"),
)
COLUMN_INDEX = {key: i for i, (key, _, _) in enumerate(COLUMNS)}
BANDWIDTHS = ("scale_up_bandwidth", "scale_out_bandwidth", "host_bandwidth")


def gbps(value: float) -> str:
    """B/s as GB/s with up to 4 significant digits; "—" when unknown."""
    return DASH if not math.isfinite(value) else f"{value / 1e9:.4g}"


class SystemTableModel(QAbstractTableModel):
    """The rows of :meth:`CatalogRepository.system_rows`, one column per :data:`COLUMNS` entry."""

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._rows: tuple[SystemRow, ...] = ()
        self._index: dict[str, int] = {}

    def set_rows(self, rows: Sequence[SystemRow]) -> None:
        self.beginResetModel()
        self._rows = tuple(rows)
        self._index = {r.id: i for i, r in enumerate(self._rows)}
        self.endResetModel()

    def system_row(self, row: int) -> SystemRow:
        return self._rows[row]

    def row_of(self, system_id: str) -> int:
        return self._index.get(system_id, -1)

    def rowCount(self, parent: Index = ROOT) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: Index = ROOT) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation != Qt.Orientation.Horizontal or not 0 <= section < len(COLUMNS):
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section][1]
        if role == Qt.ItemDataRole.ToolTipRole:
            return COLUMNS[section][2]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row, key = self._rows[index.row()], COLUMNS[index.column()][0]
        if role == ID_ROLE:
            return row.id
        if role == SORT_ROLE:
            value = getattr(row, key) if key != "origin" else origin_label(row.origin, row.overridden)
            return value.lower() if isinstance(value, str) else value
        if role == Qt.ItemDataRole.DisplayRole:
            if key in BANDWIDTHS:
                return gbps(getattr(row, key))
            if key == "origin":
                return origin_label(row.origin, row.overridden)
            return str(getattr(row, key))
        if role == Qt.ItemDataRole.ToolTipRole:
            if key == "name":
                return f"{row.name} ({row.id})"
            if key in BANDWIDTHS:
                value = getattr(row, key)
                return (f"{gbps(value)} GB/s per device and direction" if math.isfinite(value)
                        else "not stated in the system file")
        if role == Qt.ItemDataRole.TextAlignmentRole and key in (*BANDWIDTHS, "devices", "node_devices"):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None


def system_row_matches(row: SystemRow, f: SystemFilter) -> bool:
    """True when ``row`` passes ``f`` (the in-memory twin of ``CatalogRepository.system_rows``'s conditions)."""
    text = f.text.strip().lower()
    if text and not any(text in value.lower() for value in (row.id, row.name, row.vendor, row.device_id)):
        return False
    if f.vendors and row.vendor.lower() not in {v.lower() for v in f.vendors}:
        return False
    if f.kinds and row.kind not in f.kinds:
        return False
    if f.origin is not None and row.origin != f.origin:
        return False
    return f.device is None or row.device_id == f.device


class SystemFilterProxy(FilterProxy):
    def __init__(self, parent: QObject | None = None):
        super().__init__(SystemFilter(), SORT_ROLE, parent)

    def filterAcceptsRow(self, source_row: int, source_parent: Index) -> bool:
        model = self.sourceModel()
        return not isinstance(model, SystemTableModel) or system_row_matches(model.system_row(source_row),
                                                                             self._filter)

    def system_id(self, proxy_row: int) -> str:
        return self.index(proxy_row, 0).data(ID_ROLE)


class SystemFilterBar(FilterBar):
    """The search box (id, name, vendor, device) and the vendor, kind and device filters; emits
    :attr:`filter_changed` with a :class:`SystemFilter`."""

    noun = "systems"

    def __init__(self, parent: QWidget | None = None):
        super().__init__("Search name, vendor, device, id…", parent)
        self.vendor, self.kind, self.device = QComboBox(), QComboBox(), QComboBox()
        choices(self.vendor, "All vendors", ())
        choices(self.kind, "All kinds", SYSTEM_KINDS)
        choices(self.device, "Any device", ())
        self.device.setToolTip("Only systems made of this catalog device")
        self._lay_out(self.vendor, self.kind, self.device)

    def set_rows(self, rows: Sequence[SystemRow]) -> None:
        choices(self.vendor, "All vendors", sorted({r.vendor for r in rows}, key=str.lower))
        choices(self.device, "Any device", sorted({r.device_id for r in rows}))

    def current_filter(self) -> SystemFilter:
        return SystemFilter(text=self.search.text(), vendors=one(self.vendor), kinds=one(self.kind),
                            device=self.device.currentData())
