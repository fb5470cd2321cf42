"""The palette: every registered layer kind, grouped, with icons and tooltips; drag a kind into the layer
stack (the drag carries ``application/x-hwexplorer-layer-kind``) or double-click it to append it."""

from __future__ import annotations

from PySide6.QtCore import QMimeData, Qt, Signal
from PySide6.QtWidgets import QAbstractItemView, QLineEdit, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from explorer.core.workload.layers import GROUPS, REGISTRY, LayerKind

from ..icons import group_icon
from . import mime

KIND_ROLE = Qt.ItemDataRole.UserRole


def kind_tooltip(kind: LayerKind) -> str:
    lines = [f"<b>{kind.kind}</b> <i>({kind.group})</i>", kind.summary]
    if kind.params:
        lines.append("Parameters:")
        for p in kind.params:
            default = "required" if p.required else f"default {p.default}"
            extra = f": {p.help}" if p.help else ""
            lines.append(f"&nbsp;&nbsp;{p.name} ({p.type.__name__}, {default}){extra}")
    lines.append("<i>Drag into the layer stack, or double-click to append.</i>")
    return "<br>".join(lines)


class PaletteTree(QTreeWidget):
    """Groups as top-level items, kinds as draggable children."""

    kind_activated = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setHeaderHidden(True)
        self.setRootIsDecorated(True)
        self.setDragEnabled(True)
        self.setDragDropMode(QAbstractItemView.DragDropMode.DragOnly)
        self.setDefaultDropAction(Qt.DropAction.CopyAction)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setUniformRowHeights(True)
        self._populate()
        self.itemActivated.connect(self._on_activated)

    def _populate(self) -> None:
        by_group: dict[str, list[LayerKind]] = {g: [] for g in GROUPS}
        for kind in REGISTRY.values():
            by_group.setdefault(kind.group, []).append(kind)
        for group, kinds in by_group.items():
            if not kinds:
                continue
            top = QTreeWidgetItem(self, [group.capitalize()])
            top.setIcon(0, group_icon(group))
            top.setFlags(Qt.ItemFlag.ItemIsEnabled)
            top.setToolTip(0, f"{group}: {len(kinds)} layer kinds")
            for kind in sorted(kinds, key=lambda k: k.kind):
                item = QTreeWidgetItem(top, [kind.kind])
                item.setData(0, KIND_ROLE, kind.kind)
                item.setIcon(0, group_icon(group))
                item.setToolTip(0, kind_tooltip(kind))
                item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsDragEnabled)
        self.expandAll()

    def kinds(self) -> list[str]:
        out = []
        for g in range(self.topLevelItemCount()):
            top = self.topLevelItem(g)
            out += [top.child(i).data(0, KIND_ROLE) for i in range(top.childCount())]
        return out

    def item_for(self, kind: str) -> QTreeWidgetItem | None:
        for g in range(self.topLevelItemCount()):
            top = self.topLevelItem(g)
            for i in range(top.childCount()):
                if top.child(i).data(0, KIND_ROLE) == kind:
                    return top.child(i)
        return None

    # -- drag
    def mimeTypes(self):
        return [mime.LAYER_KIND]

    def mimeData(self, items):
        kinds = [it.data(0, KIND_ROLE) for it in items if it.data(0, KIND_ROLE)]
        return mime.encode_kind(kinds[0]) if kinds else QMimeData()

    def supportedDropActions(self):
        return Qt.DropAction.CopyAction

    def _on_activated(self, item: QTreeWidgetItem, column: int) -> None:
        kind = item.data(0, KIND_ROLE)
        if kind:
            self.kind_activated.emit(kind)

    def filter(self, text: str) -> None:
        """Show the kinds whose name, group or summary contains ``text``."""
        needle = text.strip().lower()
        for g in range(self.topLevelItemCount()):
            top = self.topLevelItem(g)
            visible = 0
            for i in range(top.childCount()):
                item = top.child(i)
                kind = REGISTRY[item.data(0, KIND_ROLE)]
                hit = not needle or needle in kind.kind or needle in kind.group or needle in kind.summary.lower()
                item.setHidden(not hit)
                visible += hit
            top.setHidden(visible == 0)


class LayerPalette(QWidget):
    """The palette with a filter box above it."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.search = QLineEdit(placeholderText="Filter layer kinds\u2026", clearButtonEnabled=True)
        self.tree = PaletteTree(self)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.search)
        layout.addWidget(self.tree)
        self.search.textChanged.connect(self.tree.filter)
        self.kind_activated = self.tree.kind_activated
