"""The layer stack as a Qt item model over the workspace: one top-level row per layer, and for blocks one
child row per operator the block runs. Read-only except through workspace commands (drops, repeat edits).

Columns: layer, kind, repeat, key parameters, output shape, work (MAC), parameters (count). Work and
parameter counts include the batch and the block's repeat, so a block's children add up to the block.
A layer whose shape does not fit keeps its row, tinted, with the reason in the output column and tooltip.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from PySide6.QtCore import QAbstractItemModel, QMimeData, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QBrush, QColor

from explorer.core.session.commands import MoveLayers, ReplaceLayer
from explorer.core.session.workspace import Workspace
from explorer.core.units import format_si
from explorer.core.workload.layers import REGISTRY, format_shape
from explorer.core.workload.seq_diff import changed_span

from ..binding import bind
from ..icons import group_icon, warning_icon
from . import mime
from .defaults import key_parameters
from .edits import add_layer

COLUMNS = ("Layer", "Kind", "Repeat", "Key parameters", "Output shape", "Work (MAC)", "Params (count)")
COL_NAME, COL_KIND, COL_REPEAT, COL_PARAMS, COL_SHAPE, COL_MACS, COL_COUNT = range(len(COLUMNS))
HEADER_TIPS = {
    COL_REPEAT: "How many times a block runs in sequence (blocks only; double-click to edit)",
    COL_SHAPE: "Output tensor shape per sample (batch excluded)",
    COL_MACS: "Multiply-accumulates for one inference (or one decode step), batch and repeat included",
    COL_COUNT: "Stored parameters (weights and biases), repeat included",
}
ROOT = QModelIndex()  # the invisible root (the parent of top-level rows)
ROOT_ID = 0  # internal id of top-level rows; a child of layer i has internal id i + 1
#: the columns the view sizes to their contents: Qt measures every visible row of these four columns when any of
#: their cells changes size, so an edit says which cells changed and how (``_emit_changed``)
FIT_COLUMNS = frozenset({COL_KIND, COL_REPEAT, COL_MACS, COL_COUNT})
_R = Qt.ItemDataRole
#: the roles a layer row answers (a cell keeps them, ``_cell``) and those whose change can change a cell's size
ROLES = tuple(int(r) for r in (_R.DisplayRole, _R.EditRole, _R.DecorationRole, _R.ToolTipRole, _R.BackgroundRole,
                               _R.ForegroundRole, _R.TextAlignmentRole, _R.UserRole))
SIZE_ROLES = frozenset(int(r) for r in (_R.DisplayRole, _R.DecorationRole))
DIFF_ROWS = 32  # more rows changed than this (a new batch changes every layer's work): one range, no cell diffs
MAX_CELLS = 4096  # layer cells kept (the rows on screen and some); past it the cells are dropped and made again
ERROR_BRUSH = QBrush(QColor(255, 220, 220))
ERROR_TEXT = QBrush(QColor(150, 0, 0))


def _count(x: float) -> str:
    return "0" if x == 0 else format_si(x, "").strip()


class LayerStackModel(QAbstractItemModel):
    """Tree model: layers (draggable, reorderable, drop target for palette kinds) and block operators."""

    def __init__(self, workspace: Workspace, parent=None):
        super().__init__(parent)
        self.ws = workspace
        self.last_inserted: tuple[int, ...] = ()  # rows placed by the last drop (the view selects them)
        # what each layer cell shows, by row * 8 + column: {role: value}, made when the view first asks (the rows on
        # screen); an edit compares a changed row's cells with them to tell the view what changed
        self._cells: dict[int, dict[int, object]] = {}
        self._refresh_cache()
        bind(self, self.ws.changed, self._on_changed)

    # -- cache of what the rows show
    def _refresh_cache(self, rows: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        self._layers = self.ws.model.layers
        self._table = self.ws.table
        self._first, self._n_rows = self._rows_of(self._table) if rows is None else rows
        count = self._table.columns["count"]
        self._row_macs = self._table.columns["macs"] * count
        self._row_params = self._table.columns["params"] * count
        self._sums = self._layer_sums()

    def _on_changed(self, changes) -> None:
        if not changes & {"layers", "input", "model", "assumptions"}:
            return
        new_table = self.ws.table
        if new_table is self._table and self.ws.model.layers is self._layers:
            return  # e.g. another precision or device: the rows show the same shapes, work and parameters
        old_layers, old_status, old_sums = self._layers, self._table.status, self._sums
        old_first, old_n = self._first, self._n_rows
        if len(self.ws.model.layers) != len(old_layers) or len(new_table.status) != len(old_status):
            self._reset()
            return
        edited = self._edited(old_layers, self.ws.model.layers)
        if len(edited) > 1:
            self._reset()  # moved or several layers: the structure is rebuilt
            return
        status = new_table.status
        # the layers whose status differs (a patched table keeps the other layers' status objects)
        restated = self._edited(old_status, status)
        if len(restated) <= DIFF_ROWS:  # the others' rows are where they were: check these layers' only
            rows = (old_first, old_n)
            same = all(status[i].first_row == old_first[i] and status[i].n_rows == old_n[i] for i in restated)
        else:
            rows = self._rows_of(new_table)
            same = np.array_equal(old_first, rows[0]) and np.array_equal(old_n, rows[1])
        if not same:
            self._reset()  # the rows of a layer changed: the structure is rebuilt
            return
        self._refresh_cache(rows)
        # only the rows whose figures changed (one edited layer repaints one row, a new batch all of them): the
        # spec, the fit and shapes, the summed work
        changed = set(edited) | {i for i in restated
                                 if (old_status[i].error, old_status[i].in_shape, old_status[i].out_shape)
                                 != (status[i].error, status[i].in_shape, status[i].out_shape)}
        changed.update(np.flatnonzero((old_sums[0] != self._sums[0]) | (old_sums[1] != self._sums[1])).tolist())
        self._emit_changed(sorted(changed))

    def _emit_changed(self, rows: list[int]) -> None:
        """Tell the view which layer rows changed (their cells are made again), and how: a cell whose text or icon
        changed in a column sized to its contents makes Qt measure every visible row of those columns (~350 calls
        of :meth:`data` per change on a 1,000 px window), so those changes go in one ``dataChanged``; the other
        changed cells (a new name, a tooltip) each in their own, which only repaints them. Many rows: one range."""
        last = len(COLUMNS) - 1
        blocks = [i for i in rows if self.rowCount(self.index(i, 0))]
        if len(rows) > DIFF_ROWS:
            self._cells.clear()
            if len(blocks) > DIFF_ROWS:  # the children of many blocks: one relayout rather than a range per block
                self.layoutAboutToBeChanged.emit()
                self.layoutChanged.emit()
                return
            self.dataChanged.emit(self.index(rows[0], 0), self.index(rows[-1], last))
        else:
            sized: list[tuple[int, int]] = []  # (row, column) of cells of FIT_COLUMNS whose size may change
            sized_roles: set[int] | None = set()  # None: not known (a cell not shown before)
            for i in rows:
                for col in range(len(COLUMNS)):
                    old = self._cells.pop(i * 8 + col, None)
                    roles = None if old is None else [r for r, v in self._cell(i, col).items() if old.get(r) != v]
                    if old is not None:
                        roles += [r for r in old if r not in self._cells[i * 8 + col]]
                        if not roles:
                            self._cells[i * 8 + col] = old  # the same object: the view's size hint for it holds
                            continue
                    if col in FIT_COLUMNS and (roles is None or SIZE_ROLES.intersection(roles)):
                        sized.append((i, col))
                        sized_roles = None if roles is None or sized_roles is None else sized_roles | set(roles)
                    else:
                        self.dataChanged.emit(self.index(i, col), self.index(i, col), roles or [])
            if sized:
                rows_, cols = [r for r, _ in sized], [c for _, c in sized]
                self.dataChanged.emit(self.index(min(rows_), min(cols)), self.index(max(rows_), max(cols)),
                                      sorted(sized_roles) if sized_roles else [])
        for i in blocks:
            parent = self.index(i, 0)
            self.dataChanged.emit(self.index(0, 0, parent), self.index(self.rowCount(parent) - 1, last, parent))

    def _reset(self) -> None:
        self.beginResetModel()
        self._cells.clear()
        self._refresh_cache()
        self.endResetModel()

    def _layer_sums(self) -> tuple[np.ndarray, np.ndarray]:
        """Per layer, the work and parameter counts of its operator rows (one reduceat each)."""
        out = []
        filled = self._n_rows > 0
        for per_row in (self._row_macs, self._row_params):
            total = np.zeros(len(self._first))
            if filled.any():  # the layers' rows follow each other in order: one reduceat sums each layer's
                total[filled] = np.add.reduceat(per_row, self._first[filled])
            out.append(total)
        return out[0], out[1]

    @staticmethod
    def _rows_of(table) -> tuple[np.ndarray, np.ndarray]:
        """Per layer, its first operator row and its number of rows."""
        return table.layer_rows

    @staticmethod
    def _edited(old, new) -> list[int]:
        """Indices where two equally long sequences hold different items: the run between their common prefix and
        suffix (tuple comparisons in C: an edit keeps every other layer's spec object, a patched table every other
        layer's status), then identity and equality within it."""
        start, stop, _ = changed_span(old, new)
        return [i for i in range(start, stop) if old[i] is not new[i] and old[i] != new[i]]

    # -- structure
    def index(self, row, column, parent=ROOT):
        if column < 0 or column >= len(COLUMNS) or row < 0:
            return QModelIndex()
        if not parent.isValid():
            return self.createIndex(row, column, ROOT_ID) if row < len(self._layers) else QModelIndex()
        if parent.internalId() != ROOT_ID:
            return QModelIndex()
        if row >= self._child_count(parent.row()):
            return QModelIndex()
        return self.createIndex(row, column, parent.row() + 1)

    def parent(self, index=ROOT):
        if not index.isValid() or index.internalId() == ROOT_ID:
            return QModelIndex()
        return self.createIndex(index.internalId() - 1, 0, ROOT_ID)

    def rowCount(self, parent=ROOT):
        if not parent.isValid():
            return len(self._layers)
        if parent.internalId() != ROOT_ID or parent.column() != 0:
            return 0
        return self._child_count(parent.row())

    def columnCount(self, parent=ROOT):
        return len(COLUMNS)

    def _child_count(self, layer: int) -> int:
        if layer >= len(self._layers) or not REGISTRY[self._layers[layer].kind].is_block:
            return 0
        return self._table.status[layer].n_rows

    def _layer_name(self, i: int) -> str:
        spec = self._layers[i]
        return spec.name or f"{spec.kind}{i}"  # the name build_table gives an unnamed layer

    def layer_key(self, layer: int) -> str:
        """The name a layer row shows (what the view keeps its expanded and selected rows by)."""
        return self._layer_name(layer)

    def layer_of(self, index: QModelIndex) -> int:
        """Top-level layer index of a row (a child maps to its block), -1 for none."""
        if not index.isValid():
            return -1
        return index.row() if index.internalId() == ROOT_ID else index.internalId() - 1

    # -- data
    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation != Qt.Orientation.Horizontal:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        if role == Qt.ItemDataRole.ToolTipRole:
            return HEADER_TIPS.get(section)
        return None

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        if index.internalId() == ROOT_ID:
            row, col = index.row(), index.column()
            cell = self._cells.get(row * 8 + col)
            return (self._cell(row, col) if cell is None else cell).get(role)
        return self._operator_data(index.internalId() - 1, index.row(), index.column(), role)

    def shown_cell(self, row: int, col: int) -> dict[int, object] | None:
        """Layer ``row``'s cell ``col`` as kept (a new object once it changes), None when not kept."""
        return self._cells.get(row * 8 + col)

    def _cell(self, i: int, col: int) -> dict[int, object]:
        """What layer ``i``'s cell ``col`` shows, by role, kept until the row changes."""
        if len(self._cells) >= MAX_CELLS:
            self._cells.clear()
        cell = {}
        for role in ROLES:
            value = self._layer_data(i, col, role)
            if value is not None:
                cell[role] = value
        self._cells[i * 8 + col] = cell
        return cell

    def _layer_data(self, i: int, col: int, role):
        spec = self._layers[i]
        kind = REGISTRY[spec.kind]
        status = self._table.status[i]
        rows = slice(status.first_row, status.first_row + status.n_rows)
        if role == Qt.ItemDataRole.DisplayRole:
            if col == COL_NAME:
                return self._layer_name(i)
            if col == COL_KIND:
                return spec.kind
            if col == COL_REPEAT:
                return f"\u00d7{spec.repeat}" if kind.is_block else ""
            if col == COL_PARAMS:
                return key_parameters(spec)
            if col == COL_SHAPE:
                return f"\u26a0 {status.error}" if status.error else format_shape(status.out_shape)
            if col == COL_MACS:
                return "\u2014" if status.error else _count(float(np.sum(self._row_macs[rows])))
            if col == COL_COUNT:
                return "\u2014" if status.error else _count(float(np.sum(self._row_params[rows])))
        elif role == Qt.ItemDataRole.EditRole and col == COL_REPEAT:
            return spec.repeat
        elif role == Qt.ItemDataRole.DecorationRole and col == COL_NAME:
            return warning_icon() if status.error else group_icon(kind.group)
        elif role == Qt.ItemDataRole.ToolTipRole:
            if col == COL_PARAMS and spec.items:
                return "\n".join(f"{k} = {v}" for k, v in spec.items)
            if status.error:
                return f"{spec.kind}: does not fit: {status.error}\ninput {format_shape(status.in_shape)}"
            return (f"{spec.kind} ({kind.group}): {kind.summary}\n"
                    f"{format_shape(status.in_shape)} \u2192 {format_shape(status.out_shape)}")
        elif role == Qt.ItemDataRole.BackgroundRole and status.error:
            return ERROR_BRUSH
        elif role == Qt.ItemDataRole.ForegroundRole and status.error:
            return ERROR_TEXT
        elif role == Qt.ItemDataRole.TextAlignmentRole and col in (COL_MACS, COL_COUNT, COL_REPEAT):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        elif role == Qt.ItemDataRole.UserRole:
            return i
        return None

    def _operator_data(self, layer: int, child: int, col: int, role):
        r = self._table.status[layer].first_row + child
        if role == Qt.ItemDataRole.DisplayRole:
            if col == COL_NAME:
                prefix = self._layer_name(layer) + "."
                name = self._table.names[r]
                return name.removeprefix(prefix)
            if col == COL_KIND:
                return self._table.kinds[r]
            if col == COL_SHAPE:
                return format_shape(self._table.out_shapes[r])
            if col == COL_MACS:
                return _count(float(self._row_macs[r]))
            if col == COL_COUNT:
                return _count(float(self._row_params[r]))
            return ""
        if role == Qt.ItemDataRole.ForegroundRole:
            return QBrush(QColor(90, 90, 90))
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{self._table.names[r]}: one operator of the block (figures include the repeat)"
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (COL_MACS, COL_COUNT):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.UserRole:
            return layer
        return None

    def flags(self, index):
        if not index.isValid():
            return Qt.ItemFlag.ItemIsDropEnabled  # drops go between top-level rows
        base = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
        if index.internalId() != ROOT_ID:
            return base
        flags = base | Qt.ItemFlag.ItemIsDragEnabled
        if index.column() == COL_REPEAT and REGISTRY[self._layers[index.row()].kind].is_block:
            flags |= Qt.ItemFlag.ItemIsEditable
        return flags

    def setData(self, index, value, role=Qt.ItemDataRole.EditRole):
        if role != Qt.ItemDataRole.EditRole or index.column() != COL_REPEAT or index.internalId() != ROOT_ID:
            return False
        try:
            repeat = int(value)
        except (TypeError, ValueError):
            return False
        spec = self._layers[index.row()]
        if repeat < 1 or repeat == spec.repeat or not REGISTRY[spec.kind].is_block:
            return False
        self.ws.execute(ReplaceLayer(index.row(), replace(spec, repeat=repeat), text=f"repeat {spec.name} \u00d7{repeat}"))
        return True

    # -- drag and drop
    def mimeTypes(self):
        return [mime.LAYER_KIND, mime.LAYER_ROWS]

    def supportedDropActions(self):
        return Qt.DropAction.CopyAction | Qt.DropAction.MoveAction

    def supportedDragActions(self):
        return Qt.DropAction.MoveAction

    def mimeData(self, indexes):
        rows = sorted({i.row() for i in indexes if i.isValid() and i.internalId() == ROOT_ID})
        return mime.encode_rows(rows) if rows else QMimeData()

    def canDropMimeData(self, data, action, row, column, parent):
        if mime.decode_kind(data) is not None:
            return action in (Qt.DropAction.CopyAction, Qt.DropAction.MoveAction)
        rows = mime.decode_rows(data)
        return rows is not None and action == Qt.DropAction.MoveAction and max(rows) < len(self._layers)

    def drop_position(self, row: int, parent: QModelIndex) -> int:
        """Top-level insertion index for a drop at (row, parent): on or inside a layer means after it."""
        if parent.isValid():
            return self.layer_of(parent) + 1
        return len(self._layers) if row < 0 else min(row, len(self._layers))

    def dropMimeData(self, data, action, row, column, parent):
        if not self.canDropMimeData(data, action, row, column, parent):
            return False
        dest = self.drop_position(row, parent)
        kind = mime.decode_kind(data)
        if kind is not None:
            command = add_layer(kind, dest, self.shape_at(dest), self.ws.model, self.ws.context)
            self.last_inserted = (dest,)  # read by the view when the command resets the model
            try:
                self.ws.execute(command)
            finally:
                self.last_inserted = ()
            return True
        rows = tuple(sorted(set(mime.decode_rows(data))))
        if moved_order(len(self._layers), rows, dest) == list(range(len(self._layers))):
            return False  # dropped where it already is: nothing to undo
        first = moved_order(len(self._layers), rows, dest).index(rows[0])
        self.last_inserted = tuple(range(first, first + len(rows)))
        try:
            self.ws.execute(MoveLayers(rows, dest, text="move layers" if len(rows) > 1 else "move layer"))
        finally:
            self.last_inserted = ()
        return True

    def removeRows(self, row, count, parent=ROOT):
        return False  # a move is one MoveLayers command built by the drop; the view never removes rows itself

    def shape_at(self, position: int):
        """The tensor shape a layer inserted at ``position`` would receive."""
        status = self._table.status
        if position < len(status):
            return status[position].in_shape
        if status:
            return status[-1].out_shape
        return self.ws.model.input_shape(self.ws.context)

    def persistent(self, layer: int) -> QPersistentModelIndex:
        return QPersistentModelIndex(self.index(layer, 0))


def moved_order(n: int, rows, dest: int) -> list[int]:
    """The old indices in their new order after moving ``rows`` before ``dest`` (as MoveLayers does)."""
    chosen = sorted(set(rows))
    rest = [i for i in range(n) if i not in set(chosen)]
    at = max(0, min(dest - sum(1 for i in chosen if i < dest), len(rest)))
    return rest[:at] + chosen + rest[at:]
