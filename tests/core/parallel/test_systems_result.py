"""The session's Systems result: the workspace resolves the chosen systems; an edit recomputes what it touches."""

import pytest

from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.parallel.layout import Layout
from explorer.core.session.commands import SetAssumptions, SetSystem
from explorer.core.session.state import Assumptions, SystemChoice
from explorer.core.session.workspace import Workspace
from explorer.core.workload.templates import get_template

DEVICES = {d.id: d for d in load_shipped_devices()}


def lookup(ids):
    return tuple(DEVICES[i] for i in ids if i in DEVICES)


@pytest.fixture()
def ws():
    w = Workspace(get_template("llama3-70b").build(), lookup,
                  Assumptions(phase="decode", batch=16, seq_len=4096))
    w.execute(SetSystem(SystemChoice(system_ids=("nvidia-dgx-h100", "pcie-server-8x-nvidia-l40s"))))
    return w


def test_both_systems_are_sized_and_the_nvlink_node_wins(ws):
    dgx, l40s = ws.results.systems
    assert dgx.system.id == "nvidia-dgx-h100" and dgx.device.id == "nvidia-h100-sxm5"
    assert l40s.system.id == "pcie-server-8x-nvidia-l40s" and l40s.device.id == "nvidia-l40s"
    assert dgx.error is None and l40s.error is None
    a, b = dgx.analysis, l40s.analysis
    assert a.fits[dgx.chosen] and b.fits[l40s.chosen]
    # same layout on both: the PCIe server's communication takes longer (32 vs 450 GB/s per direction, NCCL's 1.0 vs
    # 0.6 us a step). Its share of the step is not larger: decode's small all-reduces are latency-bound and the L40S's
    # step is ~5.7x longer (3.7 vs 0.78 ms of communication, 9.1 vs 10.8 %)
    k_a = a.layouts.index(Layout(tp=8))
    k_b = b.layouts.index(Layout(tp=8))
    assert b.comm_time[k_b] > 4 * a.comm_time[k_a]
    assert a.throughput_per_device[dgx.chosen] > b.throughput_per_device[l40s.chosen]


def test_an_edit_recomputes_only_what_it_touches(ws):
    first = ws.results.systems
    ws.execute(SetAssumptions({"electricity_usd_per_kwh": 0.2}))
    assert ws.results.systems is first and "systems" not in ws.results.computed
    ws.execute(SetSystem(SystemChoice(system_ids=("nvidia-dgx-h100",), layout=Layout(tp=4, dp=2))))
    (only,) = ws.results.systems
    assert only.layout == Layout(tp=4, dp=2) and only.objective is None
    ws.execute(SetSystem(SystemChoice(system_ids=("nvidia-dgx-h100",), nodes=2)))
    (two,) = ws.results.systems
    assert two.system.devices == 16 and two.analysis.layouts[two.chosen].devices == 16


def test_a_layout_that_does_not_divide_is_an_error_not_a_crash(ws):
    ws.execute(SetSystem(SystemChoice(system_ids=("nvidia-dgx-h100",), layout=Layout(tp=3))))
    (r,) = ws.results.systems
    assert r.analysis is None and r.error.startswith("tp x pp x dp: 3 x 1 x 1 = 3 devices")


def test_no_systems_no_result():
    assert Workspace(get_template("gpt2").build(), lookup).results.systems == ()


def test_nodes_of_a_system_without_a_network_say_so(ws):
    ws.execute(SetSystem(SystemChoice(system_ids=("nvidia-dgx-h100", "pcie-server-8x-nvidia-l40s"), nodes=2)))
    dgx, l40s = ws.results.systems
    assert dgx.system.devices == 16 and dgx.error is None
    assert l40s.analysis is None and "states no scale-out network" in l40s.error


def test_the_step_parts_add_up_to_the_step(ws):
    from explorer.core.parallel.system_pass import STEP_PARTS

    for r in ws.results.systems:
        a = r.analysis
        parts = a.step_parts
        assert parts.shape == (len(a), len(STEP_PARTS))
        assert parts.sum(axis=1) == pytest.approx(a.step_time, rel=1e-12)
        m = [lay.microbatches for lay in a.layouts]
        assert parts[:, 0] == pytest.approx(a.compute_time * m) and parts[:, 2] == pytest.approx(a.bubble_time)


def test_the_bandwidth_ladder_runs_from_on_chip_to_scale_out(ws):
    from explorer.core.parallel.compare import bandwidth_ladder

    dgx, l40s = ws.results.systems
    rungs = bandwidth_ladder(dgx)
    assert [r.tier for r in rungs] == ["on-chip", "on-chip", "device memory", "scale-up", "scale-out"]
    hbm, nvlink = rungs[2], rungs[3]
    k = dgx.chosen
    assert hbm.name == "HBM3" and hbm.bandwidth == 3.35e12
    assert hbm.nbytes == dgx.analysis.memory_traffic[k][0] and hbm.seconds == hbm.nbytes / 3.35e12
    assert nvlink.nbytes == dgx.analysis.level_bytes[k, 0] and nvlink.bandwidth == 450e9  # per direction
    assert [r.tier for r in bandwidth_ladder(l40s)] == ["on-chip", "device memory", "scale-up"]


def test_every_layout_is_kept_when_one_is_chosen_by_hand(ws):
    best = ws.results.system_layouts
    assert best is ws.results.systems
    ws.execute(SetSystem(SystemChoice(system_ids=ws.state.system.system_ids, layout=Layout(tp=4, dp=2))))
    chosen, every = ws.results.systems, ws.results.system_layouts
    assert len(chosen[0].analysis) == 1 and len(every[0].analysis) == len(best[0].analysis)
    ws.execute(SetSystem(SystemChoice(system_ids=ws.state.system.system_ids, layout=Layout(tp=2, dp=4))))
    assert ws.results.system_layouts is every and "system_layouts" not in ws.results.computed


def test_no_valid_layout_says_why():
    """A model without attention heads or repeated blocks at batch 1 on 8 devices: every simple layout is refused,
    and the result names the reasons (it said only 'dp must divide the batch')."""
    from explorer.core.workload.model import LayerSpec, Model

    empty = Model.make("mlp", {"tokens": 16, "hidden": 64}, [LayerSpec.make("dense", "fc", in_features=64,
                                                                             out_features=64)])
    w = Workspace(empty, lookup, Assumptions(batch=1))
    w.execute(SetSystem(SystemChoice(system_ids=("nvidia-dgx-h100",))))
    (r,) = w.results.systems
    assert r.analysis is None
    assert "dp: 8 replicas do not divide the batch of 1" in r.error
    assert "tp: the model has no attention heads to split" in r.error
    assert "pp: 8 stages but the model has 0 repeated blocks" in r.error
