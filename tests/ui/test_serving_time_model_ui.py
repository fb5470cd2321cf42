"""The Serving panel and the planner's serving box follow the toolbar's Times switch (issue 21 in serving): the
switch is part of the serving surfaces' key, so switching re-estimates on the worker; the numbers are the core's
under that model; the title and the notes say where the times come from; switching back reuses the kept ideal
estimates."""

from __future__ import annotations

from test_panels import make, settle

from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.serving.serve import answer, device_setup
from explorer.core.session.commands import SetServing
from explorer.core.session.serving_choice import ServingChoice
from explorer.core.session.workspace import Workspace
from explorer.core.workload.templates import get_template
from explorer.ui.panels import ServingPanel
from explorer.ui.panels.serving_worker import inputs_token

DEVICES = {d.id: d for d in load_shipped_devices()}
IDS = ("nvidia-l4", "nvidia-h100-sxm5")  # the L4 has no calibration, the H100 SXM5 the catalog's
CHOICE = ServingChoice(rate=2.0, input_tokens=512, output_tokens=128, ttft=0.5, tpot=0.05)


def _ws() -> Workspace:
    ws = Workspace(get_template("llama3-8b").build(), lambda wanted: [DEVICES[i] for i in wanted if i in DEVICES])
    ws.select_devices(IDS)
    ws.execute(SetServing(CHOICE))
    return ws


def _core(ws, device_id: str, time_model: str):
    w = CHOICE.workload
    return answer(w, device_setup(ws.model, DEVICES[device_id], w, CHOICE.policy, time_model=time_model), CHOICE.slo)


def test_the_switch_re_estimates_on_the_worker_and_the_title_says_the_source(qtbot):
    ws = _ws()
    p = make(qtbot, ServingPanel, ws, (1400, 900))
    settle(qtbot, p)
    assert p.shown_title == "Serving \u2014 ideal model"
    ideal = p.answers
    token = inputs_token(ws.results)
    runs = p.estimator.runs
    ws.set_assumptions(time_model="calibrated")
    assert inputs_token(ws.results) != token  # the switch is part of the worker's key
    qtbot.waitUntil(lambda: not p.pending and len(p.answers) == 2, timeout=20000)
    assert p.estimator.runs == runs + 1  # one worker run: new surfaces for the H100, the L4's under a new key
    h100 = _core(ws, "nvidia-h100-sxm5", "calibrated")
    assert p.answers[1].estimate.tpot.mean == h100.estimate.tpot.mean > ideal[1].estimate.tpot.mean
    assert p.answers[1].curve.capacity == h100.curve.capacity < ideal[1].curve.capacity
    assert p.answers[0].estimate.tpot.mean == ideal[0].estimate.tpot.mean  # no calibration: the ideal numbers
    assert [a.setup.time_source for a in p.answers] == ["spec", "calibrated"]
    assert p.shown_title == "Serving \u2014 calibrated model (calibrated, spec)"
    assert "Times: the calibrated model (L4 24GB: spec; H100 SXM5 80GB: calibrated)." in p.message.text()
    runs = p.estimator.runs
    ws.set_assumptions(time_model="ideal")  # back: the ideal surfaces and answers are kept, no worker
    assert ws.results.serving_ready()
    settle(qtbot, p)
    assert p.estimator.runs == runs and p.shown_title == "Serving \u2014 ideal model"
    assert p.answers[1].estimate.tpot.mean == ideal[1].estimate.tpot.mean
    assert "Times: the ideal model (spec: datasheet figures)." in p.message.text()


def test_the_planner_s_serving_box_sizes_under_the_switch(qtbot):
    from explorer.core.serving.fleet import size_fleet
    from explorer.ui.planner.planner_panel import PlannerPanel
    from explorer.ui.planner.serving_fleet import _cell

    ws = _ws()
    ws.execute(SetServing(ServingChoice(rate=40.0)))
    planner = PlannerPanel(ws)
    qtbot.addWidget(planner)
    planner.resize(1200, 900)
    planner.show()
    qtbot.waitExposed(planner)
    box = planner.serving_fleet
    qtbot.waitUntil(lambda: box.table.rowCount() == 2 and not box.estimator.busy, timeout=20000)
    ideal = float(box.table.item(0, 2).text())  # the H100's rate per replica at the service levels
    assert "Times: the ideal model (spec)." in box.caption.text()
    ws.set_assumptions(time_model="calibrated")
    r = ws.results
    core = size_fleet(r.serving_choice.workload, r.serving_setups, ws.devices, r.serving_choice.slo)
    assert core[0].name == "NVIDIA H100 SXM5 80GB" and core[0].slo_rate < ideal  # slower steps: a lower rate
    qtbot.waitUntil(lambda: box.table.item(0, 2) is not None and box.table.item(0, 2).text() == _cell(core[0].slo_rate)
                    and not box.estimator.busy, timeout=20000)
    box.refresh()
    assert ("Times: the calibrated model (NVIDIA H100 SXM5 80GB: calibrated; NVIDIA L4 24GB: spec)."
            in box.caption.text())
