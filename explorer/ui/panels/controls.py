"""The global analysis controls for the toolbar: precision, batch, sequence length and phase.

Each change is one ``SetAssumptions`` command (undoable); the widgets follow the workspace when the
assumptions change elsewhere (undo, an opened project), without issuing commands of their own.
"""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSpinBox, QWidget

from explorer.core.precision import PRECISIONS
from explorer.core.session.workspace import PHASES

from ..binding import bind


class AnalysisControls(QWidget):
    """Precision, batch, sequence length (0 = the model's own) and phase, bound to
    ``workspace.set_assumptions``."""

    def __init__(self, workspace, parent=None):
        super().__init__(parent)
        self.workspace = workspace
        layout = QHBoxLayout(self)
        layout.setContentsMargins(2, 0, 2, 0)
        self.precision = QComboBox()
        self.precision.addItems(PRECISIONS)
        self.precision.setToolTip(
            "Numeric precision of the analysis: picks each device's peak and the bytes per element"
        )
        self.batch = QSpinBox()
        self.batch.setRange(1, 1 << 20)
        self.batch.setToolTip("Batch size (samples, or sequences in decode)")
        self.seq_len = QSpinBox()
        self.seq_len.setRange(0, 1 << 22)
        self.seq_len.setSpecialValueText("model's")
        self.seq_len.setSuffix(" tokens")
        self.seq_len.setToolTip(
            "Sequence length for token models (in decode: the KV-cache length); 0 = the model's own"
        )
        self.phase = QComboBox()
        self.phase.addItems(PHASES)
        self.phase.setToolTip("prefill: the whole sequence at once; decode: one new token per sequence")
        for box in (self.batch, self.seq_len):
            box.setKeyboardTracking(False)  # one command per finished entry, not per keystroke
        for label, widget in (
            ("Precision", self.precision),
            ("Batch", self.batch),
            ("Seq. length", self.seq_len),
            ("Phase", self.phase),
        ):
            layout.addWidget(QLabel(f"{label}:"))
            layout.addWidget(widget)
        self.sync()
        self.precision.currentTextChanged.connect(lambda text: self._set(precision=text))
        self.batch.valueChanged.connect(lambda value: self._set(batch=int(value)))
        self.seq_len.valueChanged.connect(lambda value: self._set(seq_len=int(value) or None))
        self.phase.currentTextChanged.connect(lambda text: self._set(phase=text))
        bind(self, workspace.changed, self._changed)

    def _set(self, **values) -> None:
        a = self.workspace.assumptions
        if all(getattr(a, k) == v for k, v in values.items()):
            return
        self.workspace.set_assumptions(**values)

    def _changed(self, changes) -> None:
        if "assumptions" in changes:
            self.sync()

    def sync(self) -> None:
        a = self.workspace.assumptions
        for widget, setter, value in (
            (self.precision, self.precision.setCurrentText, a.precision),
            (self.batch, self.batch.setValue, a.batch),
            (self.seq_len, self.seq_len.setValue, a.seq_len or 0),
            (self.phase, self.phase.setCurrentText, a.phase),
        ):
            widget.blockSignals(True)
            setter(value)
            widget.blockSignals(False)
