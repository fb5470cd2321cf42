"""The Training panel's controls: the training run (``State.training``, a
:class:`~explorer.core.session.training_choice.TrainingChoice`) in four rows of widgets.

First row: tokens to train on, global batch, micro-batch, sequence length, devices per system, ZeRO stage and
recomputation. Second row: the layout (each system's best, or tensor, pipeline and data parallelism by hand), the
pipeline schedule and its virtual stages, context parallelism, LoRA rank and overlap. Every change is one undoable
``SetTraining`` command; a refused value leaves the state as it was and the panel says why. :meth:`sync` puts the
widgets back to the state after an undo.
"""

from __future__ import annotations

import math
from dataclasses import replace

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QCheckBox, QComboBox, QLabel, QLineEdit, QSpinBox, QWidget

from explorer.core.session.training import SetTraining
from explorer.core.training.memory import RECOMPUTE, SCHEDULES

from ..widgets.flow_layout import FlowLayout

MODES = ("best (fits, then fastest)", "by hand")
SPINS = (  # field, label, tip, minimum, maximum, row
    ("global_batch", "Global batch:", "Sequences per optimizer step", 1, 1 << 24, 0),
    ("micro_batch", "Micro-batch:", "Sequences per micro-batch (divides the global batch over DP)", 1, 1 << 16, 0),
    ("seq_len", "Sequence:", "Tokens per sequence", 1, 1 << 22, 0),
    ("devices", "Devices:", ("Each system as a cluster of this many devices (whole nodes); 0: the node count of the "
                            "Systems panel"), 0, 1 << 20, 1),
    ("virtual", "v:", "Virtual pipeline stages per device (the interleaved schedule)", 1, 64, 3),
    ("cp", "CP:", "Context parallelism: ranks that split each sequence (ring attention)", 1, 1024, 3),
    ("lora_rank", "LoRA rank:", ("0: full training; else LoRA fine-tuning with adapters of this rank on q, k, v, o "
                                "(frozen base weights)"), 0, 4096, 3),
)
DEGREES = (("tp", "TP", "tensor parallelism (with sequence parallelism)"), ("pp", "PP", "pipeline stages"),
           ("dp", "DP", "data-parallel replicas"))


def parse_tokens(text: str) -> float:
    """``"2e12"``, ``"2,000,000,000,000"`` or ``"15.6T"`` tokens; ValueError naming the field."""
    t = text.strip().replace(",", "").replace("_", "")
    scale = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}.get(t[-1:].lower(), 1.0) if t else 1.0
    try:
        value = float(t[:-1] if scale != 1.0 else t) * scale
    except ValueError:
        raise ValueError(f"tokens: expected a number of tokens such as 2e12 or 15.6T, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"tokens: must be a positive number of tokens, got {text!r}")
    return value


class TrainingControls(QObject):
    """The widgets of the state's training part in ``rows`` (four QWidgets); each edit executes a SetTraining."""

    def __init__(self, workspace, parent=None):
        super().__init__(parent)
        self.workspace = workspace
        self.error = ""  # the last refused edit (the panel shows it)
        self.refused = lambda: None  # called after a refused edit (the panel redraws its note)
        self.rows = (QWidget(), QWidget(), QWidget(), QWidget())  # four short rows: the panel fits a 1600 px window
        lines = [FlowLayout(w) for w in self.rows]  # each wraps when the dock is narrow
        for line in lines:
            line.setSpacing(6)
            line.setContentsMargins(0, 0, 0, 0)
        lines[0].addWidget(QLabel("Tokens:"))
        self.tokens = QLineEdit()
        self.tokens.setMaximumWidth(90)
        self.tokens.setToolTip("Tokens to train on (e.g. 2e12 or 15.6T): the time and cost to train follow")
        self.tokens.editingFinished.connect(self._tokens_edited)
        lines[0].addWidget(self.tokens)
        self.spins: dict[str, QSpinBox] = {}
        for name, label, tip, lo, hi, row in SPINS:
            if name == "virtual":
                self._layout_widgets(lines[2])
            box = QSpinBox()
            box.setRange(lo, hi)
            box.setKeyboardTracking(False)  # one command per value, not per keystroke
            box.setToolTip(tip)
            if name == "devices":
                box.setSpecialValueText("nodes")
            box.valueChanged.connect(lambda v, n=name: self._set(f"set {n.replace('_', ' ')}", **{n: int(v)}))
            lines[row].addWidget(QLabel(label))
            lines[row].addWidget(box)
            self.spins[name] = box
        self.zero = self._combo(lines[1], "ZeRO:", [f"{z}" for z in range(4)], "ZeRO stage: 0 none, 1 optimizer "
                                "states, 2 and gradients, 3 and weights (FSDP) partitioned over DP",
                                lambda i: self._set("set the ZeRO stage", zero=i))
        self.recompute = self._combo(lines[1], "Recompute:", list(RECOMPUTE), "Activation recomputation: none, "
                                     "selective (the attention core) or full (each layer's forward again)",
                                     lambda i: self._set("set recomputation", recompute=RECOMPUTE[i]))
        self.overlap = QCheckBox("overlap")
        self.overlap.setToolTip("Hide the DP reduction behind the backward and TP/CP communication behind compute "
                                "(off: every byte exposed)")
        self.overlap.toggled.connect(lambda on: self._set("overlap communication", overlap=bool(on)))
        lines[3].addWidget(self.overlap)
        for line in lines:
            line.addStretch(1)
        self.sync()

    def _combo(self, line, label, items, tip, slot) -> QComboBox:
        box = QComboBox()
        box.addItems(items)
        box.setToolTip(tip)
        box.activated.connect(slot)
        line.addWidget(QLabel(label))
        line.addWidget(box)
        return box

    def _layout_widgets(self, line) -> None:
        self.mode = self._combo(line, "Layout:", list(MODES), "Each system's best valid training layout, or one "
                                "layout by hand for every system", self._mode_chosen)
        self.degrees: dict[str, QSpinBox] = {}
        for key, label, tip in DEGREES:
            box = QSpinBox()
            box.setRange(1, 1 << 20)
            box.setKeyboardTracking(False)
            box.setToolTip(f"{label}: {tip}")
            box.valueChanged.connect(self._degree_changed)
            line.addWidget(QLabel(f"{label}:"))
            line.addWidget(box)
            self.degrees[key] = box
        self.schedule = self._combo(line, "Schedule:", list(SCHEDULES), "Pipeline schedule: GPipe, 1F1B or "
                                    "interleaved 1F1B with v virtual stages",
                                    lambda i: self._set("set the pipeline schedule", schedule=SCHEDULES[i],
                                                        **({} if SCHEDULES[i] == "interleaved" else {"virtual": 1})))

    # -- edits: one SetTraining each
    def _set(self, text: str, **changes) -> None:
        choice = self.workspace.state.training
        try:
            new = replace(choice, **changes)
            if new == choice:
                return
            self.workspace.execute(SetTraining(new, text=text))
            self.error = ""
        except ValueError as exc:
            self.error = f"Not applied: {exc}"
            self.sync()
            self.refused()

    def _tokens_edited(self) -> None:
        try:
            tokens = parse_tokens(self.tokens.text())
        except ValueError as exc:
            self.error = f"Not applied: {exc}"
            self.sync()
            self.refused()
            return
        self._set("set the tokens to train on", tokens=tokens)

    def _mode_chosen(self, index: int) -> None:
        if index == 0:
            self._set("best training layout", layout=None)
            return
        if self.workspace.state.training.layout is None:  # start from the first system's best layout
            best = next((r.layout for r in self.workspace.results.training if r.layout is not None), None)
            spun = tuple(box.value() for box in self.degrees.values())
            self._set("choose the training layout by hand",
                      layout=(best.tp, best.pp, best.dp) if best is not None else spun)

    def _degree_changed(self, _value: int) -> None:
        if self.workspace.state.training.layout is not None:
            self._set("set the training layout", layout=tuple(box.value() for box in self.degrees.values()))

    def choose_layout(self, layout) -> None:
        """Choose a training layout (tp, pp, dp of ``layout``) for every system: a double-click on a row."""
        self._set(f"choose layout {layout.label()}", layout=(layout.tp, layout.pp, layout.dp))

    # -- following the state
    def sync(self) -> None:
        """Show the state's training part (after any command, undo or redo)."""
        choice = self.workspace.state.training
        widgets = [self.tokens, self.zero, self.recompute, self.overlap, self.mode, self.schedule,
                   *self.spins.values(), *self.degrees.values()]
        for w in widgets:
            w.blockSignals(True)
        try:
            self.tokens.setText(f"{choice.tokens:.4g}")
            for name, box in self.spins.items():
                box.setValue(getattr(choice, name))
            self.spins["virtual"].setEnabled(choice.schedule == "interleaved")
            self.zero.setCurrentIndex(choice.zero)
            self.recompute.setCurrentIndex(RECOMPUTE.index(choice.recompute))
            self.schedule.setCurrentIndex(SCHEDULES.index(choice.schedule))
            self.overlap.setChecked(choice.overlap)
            self.mode.setCurrentIndex(0 if choice.layout is None else 1)
            shown = choice.layout
            if shown is None:
                best = next((r.layout for r in self.workspace.results.training if r.layout is not None), None)
                shown = (best.tp, best.pp, best.dp) if best is not None else (1, 1, 1)
            for box, v in zip(self.degrees.values(), shown):
                box.setValue(v)
                box.setEnabled(choice.layout is not None)
        finally:
            for w in widgets:
                w.blockSignals(False)
