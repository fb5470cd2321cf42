"""CatalogTableModel: the device table, one frozen DeviceRow per line, with a "compare" check column.

The model holds rows, never a database session: the dock reads them from the repository and hands them
over with :meth:`CatalogTableModel.set_rows`. Checking a row runs a ``SelectDevices`` command on the
workspace, so comparing is undoable, and the check marks follow the workspace (undo unchecks).
Figures are shown in the unit named in their header; unknown figures read "—" and sort last.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt, Signal

from explorer.core.hardware.capacity import format_capacity
from explorer.core.session.commands import SelectDevices
from explorer.core.session.workspace import Workspace
from explorer.store.rows import DeviceRow

DASH = "\u2014"
SORT_ROLE = Qt.ItemDataRole.UserRole  # raw value for sorting: float (NaN = unknown) or lower-case text
ID_ROLE = Qt.ItemDataRole.UserRole + 1  # the device id of the row
Index = QModelIndex | QPersistentModelIndex
ROOT = QModelIndex()  # the invisible root of a table model


@dataclass(frozen=True)
class Column:
    key: str
    header: str  # may contain {precision}
    tooltip: str
    value: Callable[[DeviceRow, str], Any]  # (row, precision) -> SI float, text or None
    scale: float = 1.0  # displayed = SI value / scale
    numeric: bool = True
    text: Callable[[float], str] | None = None  # writes the SI value itself (capacities: "80 GB", "192 GiB")


def _text(attr: str) -> Callable[[DeviceRow, str], Any]:
    return lambda row, _p: getattr(row, attr)


def _origin(row: DeviceRow, _p: str) -> str:
    return row.origin_label


def _ridge(row: DeviceRow, precision: str) -> float:
    peak, bw = row.peak_at(precision), row.bandwidth
    return peak / bw if bw > 0 else math.nan


COLUMNS: tuple[Column, ...] = (
    Column("compare", "Compare", "Check devices to compare them in every panel and report", lambda r, p: None,
           numeric=False),
    Column("name", "Name", "Device name", _text("name"), numeric=False),
    Column("vendor", "Vendor", "Vendor", _text("vendor"), numeric=False),
    Column("kind", "Kind", "gpu, tpu, npu, cpu, mcu or other", _text("kind"), numeric=False),
    Column("tier", "Tier", "datacenter, workstation, edge, mobile or mcu", _text("tier"), numeric=False),
    Column("peak", "Peak {precision} [TFLOP/s]",
           "Dense peak throughput at the workspace precision, in TFLOP/s (TOP/s for integer precisions); "
           "1 TFLOP/s = 10^12 FLOP/s", lambda r, p: r.peak_at(p), 1e12),
    Column("bandwidth", "Bandwidth [GB/s]", "Main (off-chip) memory bandwidth in GB/s, 1 GB/s = 10^9 B/s",
           _text("bandwidth"), 1e9),
    Column("capacity", "Memory [GB | GiB]", "Off-chip memory capacity in the unit its vendor writes: GB = 10^9 B (decimal), "
           "GiB = 2^30 B (binary)", _text("capacity"), text=format_capacity),
    Column("ridge", "Ridge {precision} [FLOP/B]",
           "Roofline ridge point I_ridge = peak / bandwidth, in FLOP per byte", _ridge),
    Column("tdp", "TDP [W]", "Thermal design power in watts", _text("tdp")),
    Column("price", "Price [USD]", "Purchase price in US dollars (list, launch or street: the note says which)", _text("price")),
    Column("cloud_price", "Cloud [USD/h]", "On-demand cloud price per device, US dollars per hour",
           _text("cloud_price"), 1 / 3600),
    Column("origin", "Origin", "shipped catalog, user device, or shipped device with user edits", _origin,
           numeric=False),
)
COLUMN_INDEX = {c.key: i for i, c in enumerate(COLUMNS)}
PRECISION_COLUMNS = tuple(i for i, c in enumerate(COLUMNS) if "{precision}" in c.header)  # follow the precision


def format_number(x: float) -> str:
    """Four significant digits, no exponent for everyday magnitudes; "—" for unknown."""
    if x is None or not math.isfinite(x):
        return DASH
    if x == 0:
        return "0"
    if 1e-3 <= abs(x) < 1e7:
        digits = max(0, 3 - math.floor(math.log10(abs(x))))
        text = f"{x:,.{digits}f}"
        return text.rstrip("0").rstrip(".") if "." in text else text
    return f"{x:.3e}"


class CatalogTableModel(QAbstractTableModel):
    #: the headers of PRECISION_COLUMNS now name another precision (repaint the header)
    precision_headers_changed = Signal()

    def __init__(self, workspace: Workspace, parent: QObject | None = None):
        super().__init__(parent)
        self.workspace = workspace
        self._rows: tuple[DeviceRow, ...] = ()
        self._index: dict[str, int] = {}
        self._precision = workspace.assumptions.precision
        slot = self._on_workspace_changed
        workspace.changed.connect(slot)
        self.destroyed.connect(lambda *_: workspace.changed.disconnect(slot, missing_ok=True))

    # -- rows
    def set_rows(self, rows: Sequence[DeviceRow]) -> None:
        self.beginResetModel()
        self._rows = tuple(rows)
        self._index = {row.id: i for i, row in enumerate(self._rows)}
        self.endResetModel()

    @property
    def rows(self) -> tuple[DeviceRow, ...]:
        return self._rows

    def row_of(self, device_id: str) -> int:
        """Row number of ``device_id``, -1 when it is not in the table."""
        return self._index.get(device_id, -1)

    def device_row(self, row: int) -> DeviceRow:
        return self._rows[row]

    @property
    def precision(self) -> str:
        return self._precision

    # -- Qt model API
    def rowCount(self, parent: Index = ROOT) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: Index = ROOT) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):
        if orientation != Qt.Orientation.Horizontal or not 0 <= section < len(COLUMNS):
            return None
        column = COLUMNS[section]
        if role == Qt.ItemDataRole.DisplayRole:
            return column.header.format(precision=self._precision.upper())
        if role == Qt.ItemDataRole.ToolTipRole:
            return column.tooltip
        return None

    def flags(self, index: Index) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        base = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
        if index.column() == 0:
            base |= Qt.ItemFlag.ItemIsUserCheckable
        return base

    def value(self, row: DeviceRow, column: Column) -> Any:
        """The column's SI value (float, NaN unknown) or text (None unknown) for ``row``."""
        return column.value(row, self._precision)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        row, column = self._rows[index.row()], COLUMNS[index.column()]
        if role == ID_ROLE:
            return row.id
        if index.column() == 0:
            if role == Qt.ItemDataRole.CheckStateRole:
                selected = row.id in self.workspace.device_ids
                return Qt.CheckState.Checked if selected else Qt.CheckState.Unchecked
            if role == SORT_ROLE:
                return 0.0 if row.id in self.workspace.device_ids else 1.0
            if role == Qt.ItemDataRole.ToolTipRole:
                return column.tooltip
            return None
        raw = self.value(row, column)
        if role == SORT_ROLE:
            if column.numeric:
                return math.nan if raw is None else float(raw)
            return "" if raw is None else str(raw).lower()
        if role == Qt.ItemDataRole.DisplayRole:
            if column.numeric:
                if column.text is not None:
                    return column.text(math.nan if raw is None else raw)
                return format_number(raw / column.scale if raw is not None else math.nan)
            return DASH if raw in (None, "") else str(raw)
        if role == Qt.ItemDataRole.TextAlignmentRole and column.numeric:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ToolTipRole:
            return self._tooltip(row, column, raw)
        return None

    def _tooltip(self, row: DeviceRow, column: Column, raw: Any) -> str:
        header = column.header.format(precision=self._precision.upper())
        if not column.numeric:
            return f"{row.name} ({row.id}): {header} = {DASH if raw in (None, '') else raw}"
        if raw is None or not math.isfinite(raw):
            return f"{row.name}: {header} unknown"
        if column.text is not None:
            return f"{row.name}: {header} = {column.text(raw)} ({column.tooltip})"
        return f"{row.name}: {header} = {format_number(raw / column.scale)}"

    def setData(self, index: Index, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:
        if not index.isValid() or index.column() != 0 or role != Qt.ItemDataRole.CheckStateRole:
            return False
        device_id = self._rows[index.row()].id
        checked = Qt.CheckState(value) == Qt.CheckState.Checked if not isinstance(value, bool) else value
        self.set_compared(device_id, checked)
        return True

    def set_compared(self, device_id: str, compared: bool) -> None:
        """Add or remove one device from the workspace's selection (one undoable command)."""
        ids = list(self.workspace.device_ids)
        if compared == (device_id in ids):
            return
        ids = ids + [device_id] if compared else [i for i in ids if i != device_id]
        verb = "compare" if compared else "stop comparing"
        self.workspace.execute(SelectDevices(tuple(ids), text=f"{verb} {device_id}"))

    # -- following the workspace
    def _on_workspace_changed(self, changes: frozenset[str]) -> None:
        if "devices" in changes and self._rows:
            self.dataChanged.emit(self.index(0, 0), self.index(len(self._rows) - 1, 0),
                                  [Qt.ItemDataRole.CheckStateRole])
        if "assumptions" in changes and self.workspace.assumptions.precision != self._precision:
            self._precision = self.workspace.assumptions.precision
            for col in PRECISION_COLUMNS:  # only these change (the others would be repainted for nothing)
                if self._rows:
                    self.dataChanged.emit(self.index(0, col), self.index(len(self._rows) - 1, col))
            # Their headers name the precision. headerDataChanged would make QHeaderView re-measure itself and
            # the table re-lay out and repaint every cell; the header only needs repainting (it reads its text
            # from headerData() when it paints, and its sections keep their widths): views connect this.
            self.precision_headers_changed.emit()
