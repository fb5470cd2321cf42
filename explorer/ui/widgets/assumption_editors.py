"""The editors of the run assumptions every analysis uses: precision, the tensors' formats (a quantization
preset for weights and activations, and the KV cache's format), batch, sequence length and phase; and, in the
model settings only, how attention runs and the LM head's positions.

The toolbar (``AnalysisControls``) and the model settings show the same editors, built and bound here:
each edit is one undoable ``SetAssumptions`` command, and the editors follow the workspace when the
assumptions change elsewhere (undo, an opened project, the other set of editors) without issuing commands.
"""

from __future__ import annotations

from PySide6.QtCore import QSignalBlocker
from PySide6.QtWidgets import QComboBox, QSpinBox, QWidget

from explorer.core.analysis.evaluate import MODELS
from explorer.core.formats import PRESETS, get_format
from explorer.core.precision import BYTES_PER_ELEMENT, PRECISIONS
from explorer.core.session.commands import SetAssumptions
from explorer.core.session.workspace import PHASES, Workspace
from explorer.core.workload.layers import ATTENTION, LM_HEAD

from ..binding import bind

MAX_BATCH = 1 << 20
MAX_SEQ_LEN = 100_000_000
#: (label, weights, activations) of the quantization combo: the formats' presets, by weights and activations
QUANTIZATIONS = (("none", None, None), *((k, w, a) for k, (w, a, _) in PRESETS.items()))
KV_FORMATS = (None, "fp8", "int8", "int4")


_NONE = {"weights": "precision", "activations": "precision", "kv_cache": "precision"}


def _bits(name: str | None) -> str:
    return "precision" if name is None else f"{name} {get_format(name).bits:g} bits"


def set_assumptions(workspace: Workspace, **values) -> bool:
    """Change the assumptions in ``values`` that differ, as one undoable command named after them ("set batch
    8"); False when the workspace refused them (out of range), so that the caller shows the current ones."""
    current = workspace.assumptions
    changed = {k: v for k, v in values.items() if getattr(current, k) != v}
    if changed:
        text = ", ".join(f"{k.replace('_', ' ')} {v if v is not None else _NONE.get(k, 'model default')}"
                         for k, v in changed.items())
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
        self.quantization = QComboBox()
        for label, w, a in QUANTIZATIONS:
            full = label if w is None else f"{label} (w {_bits(w)}, a {_bits(a)})"
            self.quantization.addItem(label if compact else full)
        self.quantization.setToolTip(
            "Formats of the weights and activations (docs/formats.md): 'none' keeps them at the precision; "
            "w4a16 stores int4 weights with an FP16 scale per 128 (4.125 bits) and computes in 16-bit, "
            "dequantizing them")
        self.kv_cache = QComboBox()
        for name in KV_FORMATS:
            self.kv_cache.addItem("precision" if name is None else name if compact else _bits(name))
        self.kv_cache.setToolTip("Format of the KV cache, which decode reads every step ('precision': as the "
                                 "rest)")
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
        self.time_model = QComboBox()
        self.time_model.addItems(list(MODELS))
        self.time_model.setToolTip("The times the panels show: ideal (the roofline with efficiency factors) or "
                                   "calibrated (fitted to measured kernels where the device has a calibration; "
                                   "other devices keep the ideal times). Each panel's title says which")
        self.sync()
        # currentIndexChanged for edits by program, activated for a pick of the current item (no-op) and tests
        for combo, key, values in ((self.precision, "precision", PRECISIONS), (self.phase, "phase", PHASES),
                                   (self.attention, "attention", ATTENTION), (self.lm_head, "lm_head", LM_HEAD),
                                   (self.time_model, "time_model", MODELS)):
            for signal in (combo.currentIndexChanged, combo.activated):
                signal.connect(lambda i, key=key, values=values: i >= 0 and self._set(**{key: values[i]}))
        for signal in (self.quantization.currentIndexChanged, self.quantization.activated):
            signal.connect(self._pick_quantization)
        for signal in (self.kv_cache.currentIndexChanged, self.kv_cache.activated):
            signal.connect(lambda i: 0 <= i < len(KV_FORMATS) and self._set(kv_cache=KV_FORMATS[i]))
        self.batch.valueChanged.connect(lambda v: self._set(batch=int(v)))
        self.seq_len.valueChanged.connect(lambda v: self._set(seq_len=int(v) or None))
        bind(owner, workspace.changed, self._changed)

    def rows(self) -> list[tuple[str, QWidget]]:
        """(label, editor) in display order."""
        rows = [("Precision", self.precision), ("Quant." if self.compact else "Quantization", self.quantization),
                ("KV" if self.compact else "KV cache", self.kv_cache), ("Batch", self.batch),
                ("Seq. length" if self.compact else "Sequence length", self.seq_len), ("Phase", self.phase),
                ("Times", self.time_model)]
        return rows if self.compact else rows + [("Attention", self.attention), ("LM head", self.lm_head)]

    def _pick_quantization(self, i: int) -> None:
        if 0 <= i < len(QUANTIZATIONS):  # past them: the 'custom' entry showing formats set elsewhere
            _, w, a = QUANTIZATIONS[i]
            self._set(weights=w, activations=a)

    def _set(self, **values) -> None:
        if not set_assumptions(self.workspace, **values):
            self.sync()

    def _changed(self, changes) -> None:
        if changes & {"assumptions", "input", "model"}:
            self.sync()

    def sync(self) -> None:
        """Show the workspace's assumptions (and whether the model takes a sequence length)."""
        a, tokens = self.workspace.assumptions, self.workspace.model.input_dict.get("tokens")
        blockers = [QSignalBlocker(w) for w in (self.precision, self.quantization, self.kv_cache, self.batch,
                                                self.seq_len, self.phase, self.attention, self.lm_head,
                                                self.time_model)]
        try:
            self.precision.setCurrentIndex(PRECISIONS.index(a.precision))
            self._show_formats(a)
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
            self.time_model.setCurrentIndex(MODELS.index(a.time_model))
        finally:
            del blockers

    def _show_formats(self, a) -> None:
        """Select the preset and KV format of ``a``; formats no entry names (a project, the CLI's int4-g64)
        show as one more 'custom' entry."""
        pairs = [(w, x) for _, w, x in QUANTIZATIONS]
        for combo, known, current in ((self.quantization, pairs, (a.weights, a.activations)),
                                      (self.kv_cache, list(KV_FORMATS), a.kv_cache)):
            while combo.count() > len(known):
                combo.removeItem(combo.count() - 1)
            if current in known:
                combo.setCurrentIndex(known.index(current))
            else:
                w, x = (current, None) if isinstance(current, str) else current
                text = w if isinstance(current, str) else f"w {w or '='}, a {x or '='}"
                combo.addItem(f"custom: {text}")
                combo.setCurrentIndex(combo.count() - 1)
