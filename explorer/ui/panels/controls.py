"""The global analysis controls for the toolbar: precision, batch, sequence length and phase.

The editors are the model settings' (:class:`~explorer.ui.widgets.assumption_editors.AssumptionEditors`), in a
row: each change is one undoable ``SetAssumptions`` command, and they follow the workspace.
"""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel, QWidget

from ..widgets.assumption_editors import AssumptionEditors


class AnalysisControls(QWidget):
    """Precision, batch, sequence length (0 = the model's own) and phase, in a row for the toolbar."""

    def __init__(self, workspace, parent=None):
        super().__init__(parent)
        self.workspace = workspace
        self.editors = AssumptionEditors(workspace, self, compact=True)
        self.precision, self.batch = self.editors.precision, self.editors.batch
        self.seq_len, self.phase = self.editors.seq_len, self.editors.phase
        layout = QHBoxLayout(self)
        layout.setContentsMargins(2, 0, 2, 0)
        for label, widget in self.editors.rows():
            layout.addWidget(QLabel(f"{label}:"))
            layout.addWidget(widget)
