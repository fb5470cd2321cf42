"""``Results.system_plan``: the planner's fleet on the chosen systems, computed once per (layouts, requirements) and
equal to what ``plan --system`` computes; a requirement edit re-sizes without searching the layouts again."""

from __future__ import annotations

import math

import pytest

from explorer.core.analysis.procurement import Requirements
from explorer.core.hardware.catalog_files import load_shipped_devices, load_shipped_systems
from explorer.core.parallel.compare import size_on_systems
from explorer.core.parallel.sizing import size_fleet
from explorer.core.session.commands import SetRequirements, SetSystem
from explorer.core.session.state import SystemChoice
from explorer.core.session.workspace import Assumptions, Workspace
from explorer.core.workload.templates import get_template

DEVICES = {d.id: d for d in load_shipped_devices()}
SYSTEMS = {s.id: s for s in load_shipped_systems()}
DGX = "nvidia-dgx-h100"


def _workspace() -> Workspace:
    ws = Workspace(get_template("llama3-70b").build(), lambda ids: [DEVICES[i] for i in ids if i in DEVICES],
                   Assumptions(phase="decode", batch=16, seq_len=4096))
    ws.execute(SetSystem(SystemChoice(system_ids=(DGX,))))
    return ws


def test_no_systems_no_plan():
    ws = Workspace(get_template("llama3-70b").build())
    assert ws.results.system_plan == ()


def test_a_requirement_edit_re_sizes_without_searching_the_layouts_again():
    ws = _workspace()
    first = ws.results.system_plan
    assert ws.results.computed == ["systems", "system_plan"]  # the best layout's search is every layout's
    ws.execute(SetRequirements(Requirements(target=20000.0, latency=0.05)))
    plan = ws.results.system_plan
    assert ws.results.computed == ["system_plan"]
    assert first[0].replicas == 1 and plan[0].replicas == math.ceil(20000.0 / plan[0].replica_throughput)
    a = ws.assumptions
    expected = size_fleet(size_on_systems(ws.model, [(SYSTEMS[DGX], DEVICES["nvidia-h100-sxm5"])], a.precision,
                                          a.context, a.tensor_formats), 20000.0, 0.05)
    assert (plan[0].layout, plan[0].devices, plan[0].nodes) == (expected[0].layout, expected[0].devices,
                                                               expected[0].nodes)
    assert plan[0].latency == expected[0].latency and plan[0].comm_share == expected[0].comm_share


def test_a_target_in_the_other_phases_unit_is_refused_naming_the_target():
    ws = _workspace()
    ws.execute(SetRequirements(Requirements(target=500.0, target_unit="inferences/s")))
    with pytest.raises(ValueError, match=r"^target: given in inferences/s but the decode phase counts tokens/s"):
        _ = ws.results.system_plan
