"""The planner's "Search the batch" switch (issue 23): plan each device at the power of two up to a cap that
meets the latency limit at the lowest cost (explorer.core.analysis.batch_search) instead of the toolbar's batch;
each device's reason then ends with the batch chosen and why."""

from __future__ import annotations

from PySide6.QtWidgets import QCheckBox

from explorer.core.analysis.batch_search import DEFAULT_CAP, search_batch
from explorer.core.analysis.procurement import PlanResult

TIP = (f"Plan each device at the batch (1, 2, 4 ... {DEFAULT_CAP}) that meets the latency limit at the lowest cost "
       "on the ranking's basis, instead of the toolbar's batch; the reason says which batch and why. The ideal "
       "time model is used for every batch.")


class BatchSearchChoice(QCheckBox):
    def __init__(self, parent=None):
        super().__init__(f"search 1-{DEFAULT_CAP}", parent)
        self.setToolTip(TIP)


def searched_plan(workspace) -> PlanResult:
    """The workspace's plan with each device at its searched batch (ValueError as the plan raises it)."""
    a = workspace.analysis
    return search_batch(a.model, a.devices, a.precision, a.ctx, workspace.requirements,
                        workspace.assumptions).result
