"""The procurement planner's systems section (pytest-qt, offscreen): the systems chosen in the state sized with real
layouts, row for row equal to ``plan --system``'s sizing (core/parallel/sizing.py), units in every header."""

from __future__ import annotations

import math
from dataclasses import astuple

import pytest

from explorer.core.analysis.procurement import format_usd
from explorer.core.hardware.catalog_files import load_shipped_devices, load_shipped_systems
from explorer.core.parallel.compare import size_on_systems
from explorer.core.parallel.sizing import size_fleet
from explorer.core.session.commands import SetSystem
from explorer.core.session.state import SystemChoice
from explorer.core.session.workspace import Assumptions, Workspace
from explorer.core.workload.templates import get_template
from explorer.ui.planner.planner_panel import PlannerPanel
from explorer.ui.planner.systems_plan import plan_cells

DGX, L40S = "nvidia-dgx-h100", "pcie-server-8x-nvidia-l40s"
DEVICES = {d.id: d for d in load_shipped_devices()}
SYSTEMS = {s.id: s for s in load_shipped_systems()}


@pytest.fixture
def workspace():
    ws = Workspace(get_template("llama3-70b").build(), lambda ids: [DEVICES[i] for i in ids if i in DEVICES],
                   Assumptions(phase="decode", batch=16, seq_len=4096))
    ws.execute(SetSystem(SystemChoice(system_ids=(DGX, L40S))))
    return ws


@pytest.fixture
def panel(qtbot, workspace):
    widget = PlannerPanel(workspace)
    qtbot.addWidget(widget)
    widget.replan()
    return widget


def cli_sizing(workspace, target, latency, price=None):
    """What ``hwexplorer plan llama3-70b --system ... --target ... --latency ...`` computes (plan_systems.py)."""
    a = workspace.assumptions
    hardware = [(SYSTEMS[i], DEVICES[SYSTEMS[i].device_id]) for i in (DGX, L40S)]
    results = size_on_systems(workspace.model, hardware, a.precision, a.context, a.tensor_formats)
    return size_fleet(results, target, latency, price or {})


def same(plans, others) -> bool:
    """Plans equal field by field, an unknown (NaN) price or capital equal to another unknown."""
    def key(x):
        return tuple("nan" if isinstance(v, float) and math.isnan(v) else v for v in astuple(x))

    return [key(p) for p in plans] == [key(p) for p in others]


QUOTES = {"nvidia-h100-sxm5": 30000.0, "nvidia-l40s": 9000.0}  # test inputs (the catalog states no list price)


def test_the_system_rows_equal_plan_systems_sizing(panel, workspace):
    workspace.select_devices(list(QUOTES))  # a quote is entered for a selected device
    panel.target.setText("20000 tokens/s")
    panel.latency.setText("50 ms")
    for device_id, price in QUOTES.items():
        panel.set_quote(device_id, f"{price:g}")
    panel.replan()
    section = panel.systems_plan
    assert section.isVisibleTo(panel)
    expected = cli_sizing(workspace, 20000.0, 0.05, QUOTES)
    assert same(section.plans, expected)
    assert section.table.rowCount() == 2
    for row, plan in enumerate(expected):
        assert section.cells(row) == plan_cells(plan)
    dgx, l40s = expected
    # what the rows say, checked against sizing's own arithmetic
    assert dgx.feasible and dgx.layout is not None
    assert dgx.replicas == math.ceil(20000.0 / dgx.replica_throughput)
    assert dgx.devices == dgx.replicas * dgx.replica_devices == dgx.replicas * dgx.layout.tp * dgx.layout.pp
    assert dgx.nodes == math.ceil(dgx.devices / 8)
    assert dgx.latency <= 0.05 and 0 < dgx.comm_share < 1
    assert dgx.capital == dgx.devices * 30000.0 and l40s.capital == l40s.devices * 9000.0
    cells = section.cells(0)
    assert cells[0] == "NVIDIA DGX H100" and cells[1] == dgx.layout.label()  # the name without its details
    assert section.table.item(0, 0).toolTip().startswith(SYSTEMS[DGX].name)
    assert cells[7] == str(dgx.devices) and cells[8] == str(dgx.nodes) and cells[10] == format_usd(dgx.capital)
    assert cells[11] == "yes"
    assert section.cells(1)[11] == ("yes" if l40s.feasible else f"NO: {l40s.reason}")


def test_every_header_carries_its_unit_and_a_tooltip(panel):
    section = panel.systems_plan
    headers = section.headers()
    assert headers == ["System", "Layout [degrees]", "Replica [devices]", "Per replica [tokens/s]", "Latency [ms]",
                       "Comm. share [%]", "Replicas [count]", "Devices [count]", "Nodes [count]",
                       "Price/device [USD]", "Capital [USD]", "Feasible"]
    for i in range(len(headers)):
        assert section.table.horizontalHeaderItem(i).toolTip()
    panel.workspace.set_assumptions(phase="prefill")
    panel.replan()
    assert section.headers()[3] == "Per replica [inferences/s]"


def test_a_quote_for_a_selected_device_prices_its_systems(panel, workspace):
    workspace.select_devices(["nvidia-h100-sxm5"])
    panel.target.setText("20000 tokens/s")
    panel.set_quote("nvidia-h100-sxm5", "25000")
    panel.replan()
    expected = cli_sizing(workspace, 20000.0, None, {"nvidia-h100-sxm5": 25000.0})
    assert same(panel.systems_plan.plans, expected)
    assert expected[0].price_per_device == 25000.0 and expected[0].capital == expected[0].devices * 25000.0
    assert panel.systems_plan.cells(0)[9] == format_usd(25000.0)
    assert panel.systems_plan.cells(1)[9] == panel.systems_plan.cells(1)[10] == "\u2014"  # no price: unknown


def test_a_target_in_the_wrong_unit_says_so_and_no_systems_hide_the_section(panel, workspace):
    panel.target.setText("500 inferences/s")
    panel.replan()
    assert panel.systems_plan.table.rowCount() == 0
    assert panel.systems_plan.note.text().startswith("target: given in inferences/s but the decode phase counts "
                                                     "tokens/s")
    workspace.execute(SetSystem(SystemChoice(system_ids=(L40S,))))
    panel.target.setText("")
    panel.replan()
    assert panel.systems_plan.table.rowCount() == 1 and panel.systems_plan.plans[0].system_id == L40S
    assert panel.systems_plan.plans[0].replicas == 1  # without a target: one replica
    workspace.execute(SetSystem(SystemChoice()))
    panel.replan()
    assert not panel.systems_plan.isVisibleTo(panel)


def test_the_section_replans_after_an_undo(panel, workspace, qtbot):
    panel.target.setText("20000 tokens/s")
    panel.replan()
    first = panel.systems_plan.plans
    workspace.execute(SetSystem(SystemChoice(system_ids=(DGX, L40S), nodes=2)))
    qtbot.waitUntil(lambda: not panel.pending, timeout=5000)
    panel.replan()
    assert not same(panel.systems_plan.plans, first)
    assert panel.systems_plan.plans[0].name == f"2 x {SYSTEMS[DGX].name}"
    workspace.undo()
    panel.replan()
    assert same(panel.systems_plan.plans, first)


def test_the_batch_search_also_searches_each_systems_batch_and_layout(panel, workspace):
    """With "search" ticked, the system rows are the core's joint batch x layout search (as ``plan --system
    --search-batch``): the layout cell names the batch, its tooltip says why."""
    from explorer.core.parallel.batch_layout_search import search_system_batch

    panel.target.setText("20000 tokens/s")
    panel.latency.setText("50 ms")
    panel.replan()
    toolbar = panel.systems_plan.plans
    panel.search_batch.setChecked(True)  # replans
    a = workspace.assumptions
    hardware = [(SYSTEMS[i], DEVICES[SYSTEMS[i].device_id]) for i in (DGX, L40S)]
    expected = search_system_batch(workspace.model, hardware, a.precision, a.context, 20000.0, 0.05)
    section = panel.systems_plan
    assert same(section.plans, expected.result)
    for row, plan in enumerate(expected.result):
        assert section.cells(row)[1] == f"{plan.layout.label()} @ batch {plan.batch}"
        assert section.table.item(row, 1).toolTip() == expected.why[row]
        assert plan.devices <= toolbar[row].devices  # batch 16 is one of the batches searched
    assert "Hover a layout" in section.note.text()
    panel.search_batch.setChecked(False)
    assert same(section.plans, toolbar)
