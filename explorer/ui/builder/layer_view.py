"""LayerStackView: the central layer list. Drop kinds from the palette anywhere, drag rows to reorder,
select several to delete or duplicate; blocks expand into their operators. The selection follows the
workspace's focused layer both ways, so every panel highlights the same layer."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QItemSelection, QItemSelectionModel, QModelIndex, Qt
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QStyledItemDelegate, QTreeView

from explorer.core.session.commands import AddLayers, RemoveLayers
from explorer.core.session.workspace import Workspace

from ..binding import bind
from .defaults import duplicates
from .edits import add_layer
from .layer_model import (
    COL_COUNT,
    COL_KIND,
    COL_MACS,
    COL_NAME,
    COL_PARAMS,
    COL_REPEAT,
    COL_SHAPE,
    LayerStackModel,
)


class CellSizes(QStyledItemDelegate):
    """The standard delegate, keeping each layer cell's size hint while the cell shows the same values (the
    model's kept cell: ``LayerStackModel.shown_cell``): Qt measures every visible row of the columns sized to their
    contents when one of their cells changes, each cell a size hint of eight ``data`` calls. Forgotten when the
    view's font or style changes."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._sizes: dict[int, tuple[object, object]] = {}

    def clear(self) -> None:
        self._sizes.clear()

    def sizeHint(self, option, index):
        model = index.model()
        shown = getattr(model, "shown_cell", None)
        if shown is None or index.internalId() != 0:  # an operator row of a block: not kept
            return super().sizeHint(option, index)
        key = index.row() * 8 + index.column()
        hit = self._sizes.get(key)
        if hit is not None and hit[0] is shown(index.row(), index.column()):
            return hit[1]
        size = super().sizeHint(option, index)
        if len(self._sizes) > 4096:
            self._sizes.clear()
        self._sizes[key] = (shown(index.row(), index.column()), size)
        return size


EMPTY_HINT = ("Drag layer kinds here from the palette,\nor start from a template: File \u25b8 New from Template.")


class LayerStackView(QTreeView):
    def __init__(self, workspace: Workspace, parent=None):
        super().__init__(parent)
        self.ws = workspace
        self.stack_model = LayerStackModel(workspace, self)
        self.setModel(self.stack_model)
        self.sizes = CellSizes(self)
        self.setItemDelegate(self.sizes)
        self.setObjectName("LayerStackView")
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setDragEnabled(True)
        self.setAcceptDrops(True)
        self.viewport().setAcceptDrops(True)
        self.setDropIndicatorShown(True)
        self.setDragDropMode(QAbstractItemView.DragDropMode.DragDrop)
        self.setDefaultDropAction(Qt.DropAction.MoveAction)
        self.setDragDropOverwriteMode(False)
        self.setAlternatingRowColors(True)
        self.setUniformRowHeights(True)
        self.setEditTriggers(QAbstractItemView.EditTrigger.DoubleClicked | QAbstractItemView.EditTrigger.EditKeyPressed)
        header = self.header()
        header.setStretchLastSection(False)
        # fit columns to the rows on screen: measuring all of them (thousands of cells on a large model, each a
        # call into Python) on every edit took tens of milliseconds
        header.setResizeContentsPrecision(0)
        fit = QHeaderView.ResizeMode.ResizeToContents  # the model's FIT_COLUMNS (it tells which cells change size)
        for col, mode in ((COL_NAME, QHeaderView.ResizeMode.Interactive), (COL_KIND, fit), (COL_REPEAT, fit),
                          (COL_PARAMS, QHeaderView.ResizeMode.Stretch), (COL_SHAPE, QHeaderView.ResizeMode.Interactive),
                          (COL_MACS, fit), (COL_COUNT, fit)):
            header.setSectionResizeMode(col, mode)
        self.setColumnWidth(COL_NAME, 140)
        self.setColumnWidth(COL_SHAPE, 150)
        header.setTextElideMode(Qt.TextElideMode.ElideRight)
        self._expanded: set[str] = set()
        self._syncing = False
        self._pending_selection: tuple[str, ...] = ()  # names of the layers selected before a reset
        self.expanded.connect(lambda i: self._expanded.add(self._key(i)))
        self.collapsed.connect(lambda i: self._expanded.discard(self._key(i)))
        self.stack_model.modelAboutToBeReset.connect(self._remember)
        self.stack_model.modelReset.connect(self._restore)
        self.selectionModel().selectionChanged.connect(self._on_selection)
        bind(self, self.ws.layer_focused, self._on_focus)

    # -- selection
    def selected_layers(self) -> tuple[int, ...]:
        rows = {self.stack_model.layer_of(i) for i in self.selectionModel().selectedRows()}
        return tuple(sorted(r for r in rows if r >= 0))

    def select_layers(self, layers) -> None:
        selection = QItemSelection()
        for i in layers:
            index = self.stack_model.index(i, 0)
            if index.isValid():
                selection.select(index, self.stack_model.index(i, self.stack_model.columnCount() - 1))
        flags = QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
        self.selectionModel().select(selection, flags)
        if layers:
            current = self.stack_model.index(min(layers), 0)
            self.selectionModel().setCurrentIndex(current, QItemSelectionModel.SelectionFlag.NoUpdate)
            self.scrollTo(current)

    def _on_selection(self, *_):
        if self._syncing:
            return
        current = self.selectionModel().currentIndex()
        layer = self.stack_model.layer_of(current) if current.isValid() else -1
        chosen = self.selected_layers()
        if layer not in chosen:
            layer = chosen[0] if chosen else -1
        self._syncing = True
        try:
            self.ws.focus_layer(layer)
        finally:
            self._syncing = False

    def _on_focus(self, layer: int) -> None:
        if self._syncing or layer in self.selected_layers():
            return
        self._syncing = True
        try:
            self.select_layers((layer,) if layer >= 0 else ())
        finally:
            self._syncing = False

    # -- edits
    def delete_selected(self) -> bool:
        layers = self.selected_layers()
        if not layers:
            return False
        self.ws.execute(RemoveLayers(layers, text="delete layer" if len(layers) == 1 else f"delete {len(layers)} layers"))
        return True

    def duplicate_selected(self) -> bool:
        layers = self.selected_layers()
        if not layers:
            return False
        specs = duplicates([self.ws.model.layers[i] for i in layers], self.ws.model)
        at = layers[-1] + 1
        self.ws.execute(AddLayers(at, specs, text="duplicate layer" if len(specs) == 1 else f"duplicate {len(specs)} layers"))
        self.select_layers(range(at, at + len(specs)))
        return True

    def add_kind(self, kind: str) -> None:
        """Insert a layer of ``kind`` after the selection (or at the end) and select it."""
        chosen = self.selected_layers()
        at = chosen[-1] + 1 if chosen else len(self.ws.model.layers)
        self.ws.execute(add_layer(kind, at, self.stack_model.shape_at(at), self.ws.model, self.ws.context))
        self.select_layers((at,))

    # -- keep expansion and select what a drop placed across model resets
    def _key(self, index: QModelIndex) -> str:
        layer = self.stack_model.layer_of(index)
        return self.stack_model.layer_key(layer) if layer >= 0 else ""

    def _remember(self) -> None:
        self._pending_selection = tuple(self._key(self.stack_model.index(i, 0)) for i in self.selected_layers())

    def _restore(self) -> None:
        self._syncing = True
        try:
            for i in range(self.stack_model.rowCount()):
                index = self.stack_model.index(i, 0)
                if self._key(index) in self._expanded and self.stack_model.rowCount(index):
                    self.setExpanded(index, True)
            inserted, self.stack_model.last_inserted = self.stack_model.last_inserted, ()
            keep = inserted or tuple(i for i in range(self.stack_model.rowCount())
                                     if self._key(self.stack_model.index(i, 0)) in self._pending_selection)
            self.select_layers(keep)
        finally:
            self._syncing = False
        self._on_selection()
        self.viewport().update()

    def dropEvent(self, event):
        super().dropEvent(event)
        if event.isAccepted() and event.source() is self:
            # the move is already one MoveLayers command; keep Qt from also removing the dragged rows
            event.setDropAction(Qt.DropAction.CopyAction)

    def keyPressEvent(self, event):
        editing = self.state() == QAbstractItemView.State.EditingState
        if event.key() in (Qt.Key.Key_Delete, Qt.Key.Key_Backspace) and not editing and self.delete_selected():
            return
        super().keyPressEvent(event)

    def changeEvent(self, event):
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):
            self.sizes.clear()
        super().changeEvent(event)

    def paintEvent(self, event):
        super().paintEvent(event)
        if self.stack_model.rowCount() == 0:
            painter = QPainter(self.viewport())
            painter.setPen(self.palette().placeholderText().color())
            painter.drawText(self.viewport().rect(), Qt.AlignmentFlag.AlignCenter, EMPTY_HINT)
            painter.end()
