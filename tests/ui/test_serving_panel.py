"""The Serving panel through its widgets: a control edit is one undo step; the curves are the core's numbers; hover
shows a tooltip with units; Simulate fills the histograms from a worker thread; the empty state; the project file
round trip keeps the serving part."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from test_chart_mouse import hover
from test_panels import make, settle

from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.serving.serve import answer, device_setup
from explorer.core.session.commands import SetServing
from explorer.core.session.project import Project, load_project, save_project
from explorer.core.session.serving_choice import ServingChoice
from explorer.core.session.workspace import Workspace
from explorer.core.workload.templates import get_template
from explorer.ui.panels import PANELS, ServingPanel
from explorer.ui.panels.serving import EMPTY

DEVICES = {d.id: d for d in load_shipped_devices()}
IDS = ("nvidia-l4", "nvidia-h100-sxm5")
CHOICE = ServingChoice(rate=2.0, input_tokens=512, output_tokens=128, ttft=0.5, tpot=0.05)


def _ws(*ids) -> Workspace:
    ws = Workspace(get_template("llama3-8b").build(), lambda wanted: [DEVICES[i] for i in wanted if i in DEVICES])
    if ids:
        ws.select_devices(ids)
        ws.execute(SetServing(CHOICE))
    return ws


@pytest.fixture
def panel(qtbot):
    p = make(qtbot, ServingPanel, _ws(*IDS), (1500, 900))
    gc.collect()
    return p


def test_listed_last_and_the_empty_state_says_why(qtbot):
    assert PANELS[-1] is ServingPanel
    p = make(qtbot, ServingPanel, _ws(), (900, 600))
    assert p.message.text() == EMPTY and "Select one or more devices" in EMPTY
    assert p.table.rowCount() == 0 and p.csv_text().count("\n") == 1
    assert not p.simulate.isEnabled()


def test_a_control_edit_is_one_undo_step(qtbot, panel):
    ws = panel.workspace
    depth = len(ws.stack._done)
    box = panel.controls.numbers["rate"]
    box.setValue(3.5)  # a committed value, as Enter or the arrows do
    settle(qtbot, panel)
    assert ws.state.serving.rate == 3.5 and len(ws.stack._done) == depth + 1
    assert panel.answers[0].estimate.rate == 3.5
    ttft_box, _pct = panel.controls.slos["ttft"]
    ttft_box.setValue(250.0)
    assert ws.state.serving.ttft == pytest.approx(0.25) and len(ws.stack._done) == depth + 2
    ws.undo()
    settle(qtbot, panel)
    assert ws.state.serving.ttft == 0.5 and ttft_box.value() == 500.0
    ws.undo()
    settle(qtbot, panel)
    assert ws.state.serving.rate == 2.0 and box.value() == 2.0


def test_the_curves_are_the_cores_numbers(qtbot, panel):
    model = panel.workspace.model
    for i, device_id in enumerate(IDS):
        core = answer(CHOICE.workload, device_setup(model, DEVICES[device_id], CHOICE.workload, CHOICE.policy),
                      CHOICE.slo)
        ok = core.curve.stable
        x, y = panel.lines["curve"][i].getData()
        np.testing.assert_allclose(x, core.curve.per_user[ok], rtol=1e-12)
        np.testing.assert_allclose(y, core.curve.throughput_per_device[ok], rtol=1e-12)
        _rx, ry = panel.lines["ttft"][i].getData()
        np.testing.assert_allclose(ry, core.curve.ttft[ok] * 1e3, rtol=1e-12)
        row = panel.table.item(i, 2).text().replace(",", "")
        assert float(row) == pytest.approx(core.curve.capacity, rel=1e-3)
    assert panel.slo_lines["ttft"].value() == pytest.approx(500.0)
    assert panel.slo_lines["tpot"].value() == pytest.approx(50.0)
    header, rows = panel.csv_table()
    assert "capacity (req/s)" in header and "cost (USD/M tokens)" in header and len(rows) == 2


def test_hover_shows_a_tooltip_with_units(qtbot, panel):
    pts, xy = panel._points["curve"]
    j = next(j for j, p in enumerate(pts) if p[1] == "op")
    tip = hover(panel, panel.curve, *xy[j])
    assert tip == panel.describe("curve", j)
    assert "requests/s" in tip and "tokens/s per device" in tip and " ms" in tip


def test_simulate_fills_the_histograms_and_a_stale_run_is_dropped(qtbot, panel):
    panel.simulator.n = 400
    panel.simulate.click()
    assert panel.progress.isVisible() or panel.simulated
    qtbot.waitUntil(lambda: len(panel.simulated) == 2, timeout=30000)
    settle(qtbot, panel)
    x, share = panel.lines["hist_ttft"][0].getData()
    assert share.sum() > 99.0 and len(x) == len(share) + 1  # the whole distribution, in percent
    assert panel.table.rowCount() == 4 and panel.table.item(1, 1).text() == "simulation"
    assert not panel.progress.isVisible()
    panel.simulate.click()
    panel.controls.numbers["rate"].setValue(1.0)  # an edit while it runs: the result is stale
    settle(qtbot, panel)
    assert panel.simulated == ()
    qtbot.wait(1500)
    settle(qtbot, panel)
    assert panel.simulated == () and panel.table.rowCount() == 2
    panel.simulator.pool.waitForDone(30000)


def test_the_project_round_trip_keeps_the_serving_part(qtbot, tmp_path):
    ws = _ws(*IDS)
    path = tmp_path / "s.hwproj"
    save_project(Project.of(ws), path)
    other = _ws()
    p = load_project(path)
    other.reset(p.model, p.device_ids, p.assumptions, p.trace, p.requirements, p.system, serving=p.serving)
    assert other.state.serving == CHOICE



def test_the_apps_report_export_has_the_serving_section(qtbot, tmp_path):
    from explorer.ui.report_export import start_export

    ws = _ws("nvidia-h100-sxm5")
    out = tmp_path / "r.csv"
    job = start_export(ws, out)
    qtbot.waitUntil(lambda: job.done, timeout=60000)
    assert job.error is None and (tmp_path / "r-serving.csv").exists()
    assert "analytic at knee" in (tmp_path / "r-serving.csv").read_text()


def test_the_planner_sizes_a_serving_fleet_per_device(qtbot):
    from explorer.core.serving.fleet import size_fleet
    from explorer.ui.planner.planner_panel import PlannerPanel

    ws = _ws("nvidia-l4", "nvidia-h100-sxm5")
    ws.execute(SetServing(ServingChoice(rate=40.0)))
    planner = PlannerPanel(ws)
    qtbot.addWidget(planner)
    planner.resize(1200, 900)
    planner.show()
    qtbot.waitExposed(planner)
    box = planner.serving_fleet
    qtbot.waitUntil(lambda: box.table.rowCount() == 2, timeout=20000)
    r = ws.results
    core = size_fleet(r.serving_choice.workload, r.serving_setups, ws.devices, r.serving_choice.slo)
    assert box.table.item(0, 0).text() == core[0].name == "NVIDIA H100 SXM5 80GB"
    assert int(box.table.item(0, 3).text()) == core[0].replicas >= 2
    assert box.table.item(0, 1).text() == "1 device" and int(box.table.item(0, 4).text()) == core[0].replicas
    assert box.table.item(1, 2).text() == "none" and "service levels" in box.table.item(1, 10).text()
    assert "USD/M tokens" in box.table.horizontalHeaderItem(8).text() and "40 requests/s" in box.caption.text()
    ws.execute(SetServing(ServingChoice(rate=80.0)))
    qtbot.waitUntil(lambda: box.table.item(0, 3) is not None and
                    int(box.table.item(0, 3).text()) == size_fleet(ws.results.serving_choice.workload,
                                                                   ws.results.serving_setups, ws.devices,
                                                                   ws.results.serving_choice.slo)[0].replicas,
                    timeout=20000)


def test_a_model_that_leaves_no_kv_cache_says_so(qtbot):
    ws = Workspace(get_template("llama3-70b").build(), lambda wanted: [DEVICES[i] for i in wanted if i in DEVICES])
    ws.select_devices(("nvidia-l4",))
    p = make(qtbot, ServingPanel, ws, (1200, 800))
    assert p.workspace.results.serving[0].setup.memory.blocks < 1
    assert "L4 24GB: no stable load (the weights leave no room for a KV cache)" in p.message.text()
