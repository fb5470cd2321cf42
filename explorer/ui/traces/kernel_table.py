"""The top kernels of a trace as a Qt table model: time, share, achieved rate, bound and gap to the roof.

Each numeric column shows its unit in the header; the prefix (µs, ms, GFLOP/s...) is chosen from the
largest value in the column. ``SORT_ROLE`` gives the raw SI number for a QSortFilterProxyModel.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

from explorer.core.traces import TopKernels

_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"),
             (1e-6, "\u00b5"), (1e-9, "n"), (1e-12, "p"))
_DASH = "\u2014"


def si_prefix(values: np.ndarray) -> tuple[float, str]:
    """Scale and prefix that make the largest finite magnitude in ``values`` read between 1 and 1000."""
    finite = np.abs(np.asarray(values, dtype=float))
    finite = finite[np.isfinite(finite) & (finite > 0)]
    if finite.size == 0:
        return 1.0, ""
    top = float(finite.max())
    for scale, prefix in _PREFIXES:
        if top >= scale:
            return scale, prefix
    return _PREFIXES[-1]


@dataclass(frozen=True)
class _Column:
    title: str
    values: Callable[[TopKernels], object]
    unit: str | None = None  # SI unit whose prefix is chosen from the data; None for fixed-format columns
    fixed_scale: float = 1.0
    digits: int = 3


COLUMNS = (
    _Column("Kernel", lambda t: t.names),
    _Column("Calls", lambda t: t.count, fixed_scale=1.0, digits=0),
    _Column("Total time", lambda t: t.total_s, unit="s"),
    _Column("Mean time", lambda t: t.mean_s, unit="s"),
    _Column("Share [%]", lambda t: t.share, fixed_scale=0.01, digits=1),
    _Column("Achieved", lambda t: t.achieved_flops_per_s, unit="FLOP/s"),
    _Column("Intensity [FLOP/B]", lambda t: t.intensity, digits=4),
    _Column("Roof", lambda t: t.attainable_flops_per_s, unit="FLOP/s"),
    _Column("Efficiency [%]", lambda t: t.efficiency, fixed_scale=0.01, digits=1),
    _Column("Bound", lambda t: t.bound),
    _Column("Gap to roof [\u00d7]", lambda t: t.gap_factor, digits=3),
)


class KernelTableModel(QAbstractTableModel):
    """Rows are the groups of a :class:`TopKernels`; call :meth:`set_top_kernels` to fill it."""

    SORT_ROLE = Qt.ItemDataRole.UserRole

    def __init__(self, top: TopKernels | None = None, parent=None):
        super().__init__(parent)
        self._top: TopKernels | None = None
        self._scales: list[tuple[float, str]] = []
        if top is not None:
            self.set_top_kernels(top)

    def set_top_kernels(self, top: TopKernels | None) -> None:
        self.beginResetModel()
        self._top = top
        self._scales = []
        for column in COLUMNS:
            if top is not None and column.unit is not None:
                self._scales.append(si_prefix(column.values(top)))
            else:
                self._scales.append((column.fixed_scale, ""))
        self.endResetModel()
        self.headerDataChanged.emit(Qt.Orientation.Horizontal, 0, len(COLUMNS) - 1)

    @property
    def top(self) -> TopKernels | None:
        return self._top

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex | None = None) -> int:
        nested = parent is not None and parent.isValid()
        return 0 if nested or self._top is None else len(self._top)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex | None = None) -> int:
        return 0 if parent is not None and parent.isValid() else len(COLUMNS)

    def header_title(self, section: int) -> str:
        column = COLUMNS[section]
        if column.unit is None:
            return column.title
        _, prefix = self._scales[section] if self._scales else (1.0, "")
        return f"{column.title} [{prefix}{column.unit}]"

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):
        if orientation != Qt.Orientation.Horizontal or not 0 <= section < len(COLUMNS):
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return self.header_title(section)
        return None

    def raw(self, row: int, section: int):
        return COLUMNS[section].values(self._top)[row]

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if self._top is None or not index.isValid():
            return None
        row, section = index.row(), index.column()
        value = self.raw(row, section)
        if role == self.SORT_ROLE:
            return value if isinstance(value, str) else float(value)
        if role == Qt.ItemDataRole.ToolTipRole and section == 0:
            return value
        if role == Qt.ItemDataRole.TextAlignmentRole:
            if isinstance(value, str):
                return int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        if isinstance(value, str):
            return value
        number = float(value)
        if not math.isfinite(number):
            return _DASH
        column, (scale, _) = COLUMNS[section], self._scales[section]
        if column.digits == 0:
            return f"{number:.0f}"
        if column.unit is None and column.fixed_scale != 1.0:  # percentages: fixed decimals
            return f"{number / scale:.{column.digits}f}"
        return f"{number / scale:.{column.digits}g}"
