"""The Systems panel's controls: which systems are compared, as how many nodes, under which layout, with which
communication options.

Two rows: a combo to add a system and a chip per chosen system (its colour in the charts; a click removes it)
(the panel puts it in its header); then the node count, the layout (the best by throughput, latency or cost per
million tokens, or tensor, pipeline, expert and data
parallelism and micro-batches by hand) and the overlap and offload options. Every change is one undoable
``SetSystem`` command; :meth:`SystemControls.sync` puts the widgets back to the state after an undo.
"""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QLabel,
    QSpinBox,
    QToolButton,
    QWidget,
)

from explorer.core.hardware.system import System
from explorer.core.parallel.layout import Layout
from explorer.core.session.commands import SetSystem
from explorer.core.session.state import SystemChoice

from ..binding import bind
from ..widgets.flow_layout import FlowLayout
from .plotting import device_color

MODES = (("throughput", "best by throughput per device"), ("latency", "best by latency"),
         ("cost", "best by cost per million tokens"), (None, "by hand"))
DEGREES = (
    ("tp", "TP", "tensor parallelism: devices that split each layer's weights"),
    ("pp", "PP", "pipeline parallelism: stages of whole blocks"),
    ("ep", "EP", "expert parallelism: devices of a TP group the experts are spread over"),
    ("dp", "DP", "data parallelism: replicas, each with its share of the batch"),
    ("microbatches", "m", "pipeline micro-batches per replica's batch"),
)
ADD = "Add a system\u2026"


def available_systems(workspace) -> tuple[System, ...]:
    """The systems one can choose: the workspace's catalog (the catalog database's in the app)."""
    return tuple(workspace.available_systems())


def short_name(system: System) -> str:
    """The name without its parenthesized details ("NVIDIA DGX H100 (HGX H100 8-GPU, ...)" -> "NVIDIA DGX H100")."""
    return system.name.split(" (")[0]


class SystemControls(QObject):
    """The widgets of a :class:`~explorer.core.session.state.SystemChoice` in two rows, ``systems_row`` (the
    systems compared) and ``options_row`` (nodes, layout, options); each edit executes a ``SetSystem``."""

    def __init__(self, workspace, systems=None, parent=None):
        super().__init__(parent)
        self.workspace = workspace
        self.systems = tuple(available_systems(workspace) if systems is None else systems)
        self.by_id = {s.id: s for s in self.systems}
        self.error = ""  # the last refused edit (shown by the panel)
        self.systems_row, self.options_row = QWidget(), QWidget()
        first, second = FlowLayout(self.systems_row), FlowLayout(self.options_row)  # wrap when narrow
        for row in (first, second):
            row.setSpacing(6)
            row.setContentsMargins(0, 0, 0, 0)
        first.addWidget(QLabel("Systems:"))
        self.add_combo = QComboBox()
        self.add_combo.setToolTip("Add a system of the catalog to the comparison")
        self.add_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.add_combo.setMinimumContentsLength(14)  # "Add a system…": 22 made the dock, with two chips, too wide
        self.add_combo.activated.connect(self._add)
        first.addWidget(self.add_combo)
        self.chip_row = FlowLayout(spacing=4)
        first.addLayout(self.chip_row)
        first.addStretch(1)
        self.chips: list[QToolButton] = []

        second.addWidget(QLabel("Nodes:"))
        self.nodes = QSpinBox()
        self.nodes.setRange(1, 4096)
        self.nodes.setKeyboardTracking(False)
        self.nodes.setToolTip("Each system as a cluster of this many nodes over its own scale-out network")
        self.nodes.valueChanged.connect(lambda n: self._set(nodes=int(n), text="set the number of nodes"))
        second.addWidget(self.nodes)
        second.addWidget(QLabel("Layout:"))
        self.mode = QComboBox()
        for _objective, label in MODES:
            self.mode.addItem(label)
        self.mode.setToolTip("The best valid layout of each system, or one layout given by hand for every system")
        # elided when narrow (the popup shows the whole text): at its full width the row made the Systems dock, and
        # with it the main window, wider than a 1600-pixel screen
        self.mode.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.mode.setMinimumContentsLength(15)
        self.mode.activated.connect(self._mode_chosen)
        second.addWidget(self.mode)
        self.degrees: dict[str, QSpinBox] = {}
        for key, label, tip in DEGREES:
            second.addWidget(QLabel(f"{label}:"))
            box = QSpinBox()
            box.setRange(1, 4096)
            box.setKeyboardTracking(False)
            box.setToolTip(f"{label}: {tip}")
            box.valueChanged.connect(self._degree_changed)
            second.addWidget(box)
            self.degrees[key] = box
        self.overlap = QCheckBox("overlap")
        self.overlap.setToolTip("Hide communication behind the stage's compute (off: every byte exposed)")
        self.overlap.toggled.connect(lambda on: self._set(overlap=bool(on), text="overlap communication"))
        self.offload = QCheckBox("offload")
        self.offload.setToolTip("Stream what does not fit in device memory from host memory over the host link")
        self.offload.toggled.connect(lambda on: self._set(offload=bool(on), text="offload to host memory"))
        second.addWidget(self.overlap)
        second.addWidget(self.offload)
        second.addStretch(1)
        if systems is None:  # the catalog's choices: read again when the catalog dock changes a system
            bind(self, workspace.systems_reloaded, self.reload)
        self.sync()

    def reload(self) -> None:
        """Read the catalog's systems again (one was added, edited, deleted or imported) and show them."""
        self.systems = available_systems(self.workspace)
        self.by_id = {s.id: s for s in self.systems}
        self.sync()

    # -- edits: one SetSystem each
    def _set(self, text: str = "choose systems", **changes) -> None:
        choice = self.workspace.state.system
        new = replace(choice, **changes)
        if new == choice:
            return
        try:
            self.workspace.execute(SetSystem(new, text=text))
            self.error = ""
        except ValueError as exc:
            self.error = f"Not applied: {exc}"
            self.sync()

    def _add(self, index: int) -> None:
        system_id = self.add_combo.itemData(index)
        if system_id:
            ids = self.workspace.state.system.system_ids
            self._set(system_ids=ids + (system_id,), text=f"add system {short_name(self.by_id[system_id])}")
        self.add_combo.setCurrentIndex(0)

    def remove(self, system_id: str) -> None:
        ids = tuple(i for i in self.workspace.state.system.system_ids if i != system_id)
        name = short_name(self.by_id[system_id]) if system_id in self.by_id else system_id
        self._set(system_ids=ids, text=f"remove system {name}")

    def _mode_chosen(self, index: int) -> None:
        objective = MODES[index][0]
        if objective is not None:
            self._set(layout=None, objective=objective, text=f"best layout by {objective}")
            return
        choice = self.workspace.state.system
        if choice.layout is None:  # start from the first system's best layout
            best = next((r.layout for r in self.workspace.results.systems if r.layout is not None), None)
            self._set(layout=best or self._spun(), text="choose the layout by hand")

    def _spun(self) -> Layout:
        return Layout(**{key: box.value() for key, box in self.degrees.items()})

    def _degree_changed(self, _value: int) -> None:
        if self.workspace.state.system.layout is not None:
            self._set(layout=self._spun(), text="set the layout")

    def choose_layout(self, layout: Layout) -> None:
        """Choose ``layout`` for every system (a click on a layout's point or row)."""
        self._set(layout=layout, text=f"choose layout {layout.label()}")

    # -- following the state
    def sync(self) -> None:
        """Show the state's choice (after any command, undo or redo)."""
        choice = self.workspace.state.system
        widgets = [self.add_combo, self.nodes, self.mode, self.overlap, self.offload, *self.degrees.values()]
        for w in widgets:
            w.blockSignals(True)
        try:
            offered = [s for s in self.systems if s.id not in choice.system_ids]
            shown = [(self.add_combo.itemData(i), self.add_combo.itemText(i)) for i in range(1, self.add_combo.count())]
            if shown != [(s.id, short_name(s)) for s in offered]:
                self.add_combo.clear()
                self.add_combo.addItem(ADD, "")
                for s in offered:
                    self.add_combo.addItem(short_name(s), s.id)
                    self.add_combo.setItemData(self.add_combo.count() - 1, s.name, Qt.ItemDataRole.ToolTipRole)
            self.add_combo.setCurrentIndex(0)
            self.nodes.setValue(choice.nodes)
            objectives = [m for m, _ in MODES]
            mode = (len(MODES) - 1 if choice.layout is not None
                    else objectives.index(choice.objective) if choice.objective in objectives else 0)
            self.mode.setCurrentIndex(mode)
            layout = choice.layout or next((r.layout for r in self.workspace.results.systems
                                            if r.layout is not None), None) or Layout()
            for key, box in self.degrees.items():
                box.setValue(getattr(layout, key))
                box.setEnabled(choice.layout is not None)
            self.overlap.setChecked(choice.overlap)
            self.offload.setChecked(choice.offload)
        finally:
            for w in widgets:
                w.blockSignals(False)
        self._sync_chips(choice.system_ids)

    def _sync_chips(self, ids: tuple[str, ...]) -> None:
        while len(self.chips) > len(ids):
            chip = self.chips.pop()
            self.chip_row.removeWidget(chip)
            chip.deleteLater()
        while len(self.chips) < len(ids):
            chip = QToolButton()
            chip.setObjectName("system_chip")
            chip.clicked.connect(lambda _c=False, b=chip: self.remove(b.property("system_id")))
            self.chip_row.addWidget(chip)
            self.chips.append(chip)
        for i, (chip, system_id) in enumerate(zip(self.chips, ids)):
            system = self.by_id.get(system_id)
            name = short_name(system) if system is not None else system_id
            chip.setProperty("system_id", system_id)
            chip.setText(f"{name}  \u2715")
            chip.setToolTip(f"{system.name if system is not None else system_id}: click to remove it")
            color = device_color(i)
            chip.setStyleSheet(f"QToolButton {{ border: 2px solid {color}; border-radius: 9px; padding: 1px 6px; "
                               f"color: {color}; font-weight: bold; }}")

