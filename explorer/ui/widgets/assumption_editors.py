"""The editors of the four run assumptions every analysis uses: precision, batch, sequence length and phase; and, in
the model settings only, how attention runs and the LM head's positions.

The toolbar (``AnalysisControls``) and the model settings show the same four editors, built and bound here:
each edit is one undoable ``SetAssumptions`` command, and the editors follow the workspace when the
assumptions change elsewhere (undo, an opened project, the other set of editors) without issuing commands.
"""

from __future__ import annotations

from PySide6.QtCore import QSignalBlocker
from PySide6.QtWidgets import QComboBox, QSpinBox, QWidget

from explorer.core.precision import BYTES_PER_ELEMENT, PRECISIONS
from explorer.core.session.commands import SetAssumptions
from explorer.core.session.workspace import PHASES, Workspace
from explorer.core.workload.layers import ATTENTION, LM_HEAD

from ..binding import bind

MAX_BATCH = 1 << 20
MAX_SEQ_LEN = 100_000_000


def set_assumptions(workspace: Workspace, **values) -> bool:
    """Change the assumptions in ``values`` that differ, as one undoable command named after them ("set batch
    8"); False when the workspace refused them (out of range), so that the caller shows the current ones."""
    current = workspace.assumptions
    changed = {k: v for k, v in values.items() if getattr(current, k) != v}
    if changed:
        text = ", ".join(f"{k.replace('_', ' ')} {v if v is not None else 'model default'}" for k, v in changed.items())
        try:
            workspace.execute(SetAssumptions(changed, text=f"set {text}"))
        except ValueError:
            return False
    return True


def _spin(minimum: int, maximum: int, tip: str) -> QSpinBox:
    spin = QSpinBox(minimum=minimum, maximum=maximum, keyboardTracking=False)  # one command per finished entry
    spin.setGroupSeparatorShown(True)
    spin.setToolTip(tip)
    return spin


class AssumptionEditors:
    """``precision``, ``batch``, ``seq_len`` (0 = the model's own) and ``phase`` editors bound to ``workspace``
    until ``owner`` is destroyed. ``compact`` (the toolbar): precisions by name only, and the model's sequence
    length reads "model's" rather than its value."""

    def __init__(self, workspace: Workspace, owner: QWidget, compact: bool = False):
        self.workspace, self.compact = workspace, compact
        self.precision = QComboBox()
        for name in PRECISIONS:
            self.precision.addItem(name if compact else f"{name} ({BYTES_PER_ELEMENT[name]:g} B/element)", name)
        self.precision.setToolTip("Numeric precision of the analysis: picks each device's peak and the bytes per "
                                  "element of weights and activations")
        self.batch = _spin(1, MAX_BATCH, "Batch size: samples (sequences) processed together")
        self.seq_len = _spin(0, MAX_SEQ_LEN, "Sequence length for token models (in decode: the KV-cache length each "
                                             "new token attends to); 0 = the model's own")
        if compact:
            self.seq_len.setSuffix(" tokens")
        self.phase = QComboBox()
        self.phase.addItems(PHASES)
        self.phase.setToolTip("prefill: the whole sequence at once; decode: one new token per sequence (KV cache)")
        self.attention = QComboBox()
        self.attention.addItems(["naive (scores through memory)", "fused (FlashAttention)"])
        self.attention.setToolTip("naive: the S x S attention scores are written to memory and read back; fused: they "
                                  "stay on chip and K, V are re-read once per query block (on-chip memory sized)")
        self.lm_head = QComboBox()
        self.lm_head.addItems(["every position", "last position"])
        self.lm_head.setToolTip("The positions whose logits the LM head computes in prefill: every one (training, "
                                "scoring) or each sequence's last (serving)")
        self.sync()
        # currentIndexChanged for edits by program, activated for a pick of the current item (no-op) and tests
        for combo, key, values in ((self.precision, "precision", PRECISIONS), (self.phase, "phase", PHASES),
                                   (self.attention, "attention", ATTENTION), (self.lm_head, "lm_head", LM_HEAD)):
            for signal in (combo.currentIndexChanged, combo.activated):
                signal.connect(lambda i, key=key, values=values: i >= 0 and self._set(**{key: values[i]}))
        self.batch.valueChanged.connect(lambda v: self._set(batch=int(v)))
        self.seq_len.valueChanged.connect(lambda v: self._set(seq_len=int(v) or None))
        bind(owner, workspace.changed, self._changed)

    def rows(self) -> list[tuple[str, QWidget]]:
        """(label, editor) in display order."""
        rows = [("Precision", self.precision), ("Batch", self.batch),
                ("Seq. length" if self.compact else "Sequence length", self.seq_len), ("Phase", self.phase)]
        return rows if self.compact else rows + [("Attention", self.attention), ("LM head", self.lm_head)]

    def _set(self, **values) -> None:
        if not set_assumptions(self.workspace, **values):
            self.sync()

    def _changed(self, changes) -> None:
        if changes & {"assumptions", "input", "model"}:
            self.sync()

    def sync(self) -> None:
        """Show the workspace's assumptions (and whether the model takes a sequence length)."""
        a, tokens = self.workspace.assumptions, self.workspace.model.input_dict.get("tokens")
        blockers = [QSignalBlocker(w) for w in (self.precision, self.batch, self.seq_len, self.phase, self.attention,
                                                self.lm_head)]
        try:
            self.precision.setCurrentIndex(PRECISIONS.index(a.precision))
            self.batch.setValue(a.batch)
            self.seq_len.setEnabled(tokens is not None)
            if self.compact:
                self.seq_len.setSpecialValueText("model's")
            else:
                self.seq_len.setSpecialValueText(f"model ({tokens})" if tokens else "\u2014")
            self.seq_len.setValue(a.seq_len or 0)
            self.phase.setCurrentIndex(PHASES.index(a.phase))
            self.attention.setCurrentIndex(ATTENTION.index(a.attention))
            self.lm_head.setCurrentIndex(LM_HEAD.index(a.lm_head))
        finally:
            del blockers
