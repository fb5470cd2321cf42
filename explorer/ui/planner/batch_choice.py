"""The planner's "Search the batch" switch (issue 23): plan each device at the power of two up to a cap that
meets the latency limit at the lowest cost (explorer.core.analysis.batch_search) instead of the toolbar's batch;
each device's reason then ends with the batch chosen and why. The systems' rows search the batch and the layout
together (explorer.core.parallel.batch_layout_search, as ``hwexplorer plan --system --search-batch``)."""

from __future__ import annotations

from PySide6.QtWidgets import QCheckBox

from explorer.core.analysis.batch_search import DEFAULT_CAP, search_batch
from explorer.core.analysis.procurement import PlanResult
from explorer.core.parallel.batch_layout_search import SystemBatchSearch, search_system_batch
from explorer.core.parallel.system_pass import Options

TIP = (f"Plan each device at the batch (1, 2, 4 ... {DEFAULT_CAP}) that meets the latency limit at the lowest cost "
       "on the ranking's basis, instead of the toolbar's batch; the reason says which batch and why. Each system "
       "gets the batch and layout that need the fewest devices. Every batch is timed with the toolbar's Times "
       "model (ideal, or calibrated where a device has curves).")


class BatchSearchChoice(QCheckBox):
    def __init__(self, parent=None):
        super().__init__(f"search 1-{DEFAULT_CAP}", parent)
        self.setToolTip(TIP)


def searched_plan(workspace) -> PlanResult:
    """The workspace's plan with each device at its searched batch (ValueError as the plan raises it)."""
    a = workspace.analysis
    return search_batch(a.model, a.devices, a.precision, a.ctx, workspace.requirements,
                        workspace.assumptions, time_model=workspace.assumptions.time_model).result


def searched_system_plan(workspace) -> SystemBatchSearch | None:
    """The systems' fleet with each system at its searched batch and layout (None without systems; ValueError as
    ``results.system_plan`` raises it: the target in the other phase's unit)."""
    if not workspace.results.system_plan:  # also checks the target's unit, as the rows without the search do
        return None
    st = workspace.state
    a, choice, req = st.assumptions, st.system, st.requirements
    options = Options(overlap=choice.overlap, algorithm=choice.collective, skew=choice.skew, offload=choice.offload,
                      time_model=a.time_model)
    return search_system_batch(st.model, workspace.hardware, a.precision, a.context, req.target, req.latency,
                               req.price, a.tensor_formats, choice.objective, options, choice.nodes)
