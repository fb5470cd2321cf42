"""The planner's "Rank by" choice (issue 23): buy TCO, rent cost or the cheaper of the two per device. It reads
and writes ``rank_by`` of the one store (the workspace's requirements), as one undoable edit."""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtWidgets import QComboBox

from explorer.core.analysis.procurement import RANK_BASES
from explorer.core.session.commands import SetRequirements
from explorer.ui.binding import bind

LABELS = {"buy": "buy (TCO)", "rent": "rent", "cheaper": "cheaper of the two"}
TIP = ("What the ranking compares over the horizon, for the units the plan sizes: buy = purchase price + "
       "electricity; rent = the same units rented around the clock (cloud price per unit-hour); cheaper = the "
       "lower of the two for each device, so a rent-only device (a TPU) is ranked by its rent. A device without "
       "the price its ranking needs is listed as not costed, naming the price it lacks.")


class RankChoice(QComboBox):
    def __init__(self, workspace, parent=None):
        super().__init__(parent)
        self.workspace = workspace
        for basis in RANK_BASES:
            self.addItem(LABELS[basis], basis)
        self.setToolTip(TIP)
        self._sync()
        self.activated.connect(self._chosen)
        bind(self, workspace.changed, lambda changes: self._sync() if "requirements" in changes else None)

    def basis(self) -> str:
        return self.currentData()

    def _sync(self) -> None:
        index = self.findData(self.workspace.requirements.rank_by)
        if index != self.currentIndex():
            self.blockSignals(True)
            self.setCurrentIndex(index)
            self.blockSignals(False)

    def _chosen(self, index: int) -> None:
        basis = self.itemData(index)
        req = self.workspace.requirements
        if basis != req.rank_by:
            self.workspace.execute(SetRequirements(replace(req, rank_by=basis), text=f"rank by {basis}"))
