"""The frozen session state: pure commands, undo by whole states, the results bundle's reuse, project format 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from explorer.core.analysis.procurement import Requirements, plan
from explorer.core.parallel.layout import Layout
from explorer.core.session.commands import (
    AddLayers,
    SetAssumptions,
    SetModel,
    SetRequirements,
    SetSystem,
    SetTrace,
)
from explorer.core.session.project import FORMAT, Project, ProjectError, load_project, save_project
from explorer.core.session.results import DEPENDS
from explorer.core.session.state import State, SystemChoice
from explorer.core.session.workspace import Workspace
from explorer.core.traces import load_trace
from explorer.core.traces.model import trace_from_dict, trace_to_dict
from explorer.core.workload.model import LayerSpec, Model, load_model_file

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "traces"


@pytest.fixture
def ws(a100, h100):
    known = {d.id: d for d in (a100, h100)}
    w = Workspace(load_model_file(FIXTURES / "smallnet.json"),
                  lookup=lambda ids: [known[i] for i in ids if i in known])
    w.select_devices(["a100", "h100"])
    return w


@pytest.fixture
def trace():
    return load_trace(FIXTURES / "torch_cpu_trace.json")


def test_commands_are_pure_maps_of_frozen_states():
    state = State(model=Model.make("m", {"features": 8}))
    dense = LayerSpec.make("dense", "a", in_features=8, out_features=8)
    after = AddLayers(5, (dense,)).apply(state)  # an index past the end appends
    assert state.model.layers == () and after.model.layers == (dense,)
    assert after.assumptions is state.assumptions and after.requirements is state.requirements
    with pytest.raises(ValueError, match="batch: must be a whole number >= 1"):
        SetAssumptions({"batch": 0}).apply(after)
    with pytest.raises(AttributeError):
        after.model = state.model  # frozen


def test_undo_and_redo_swap_whole_states(ws, trace):
    start = ws.state
    ws.execute(SetTrace(trace, text="load torch_cpu_trace.json"))
    assert ws.trace is trace and ws.stack.undo_text == "load torch_cpu_trace.json"
    req = Requirements(target=2000.0, latency=0.05, price={"a100": 15000.0})
    ws.execute(SetRequirements(req))
    loaded = ws.state
    ws.undo()
    ws.undo()
    assert ws.state is start and ws.trace is None and ws.requirements == Requirements()
    ws.redo()
    ws.redo()
    assert ws.state is loaded and ws.requirements.price["a100"] == 15000.0


def test_edits_of_one_field_merge_into_one_undo_step(ws):
    for text in ("2", "20", "200"):
        ws.execute(SetRequirements(Requirements(target=float(text)), text="edit target",
                                   merge_key="requirements.target"))
    ws.execute(SetRequirements(Requirements(target=200.0, latency=0.01), text="edit latency",
                               merge_key="requirements.latency"))
    ws.undo()
    assert ws.requirements.target == 200.0 and ws.requirements.latency is None
    ws.undo()
    assert ws.requirements == Requirements() and ws.stack.undo_text == "select devices"
    ws.redo()
    ws.mark_clean()  # a save: the next edit starts a new step, so undo returns to the saved state
    ws.execute(SetRequirements(Requirements(target=300.0), text="edit target", merge_key="requirements.target"))
    ws.undo()
    assert ws.requirements.target == 200.0 and not ws.is_dirty


def test_an_edit_recomputes_only_what_depends_on_it(ws, trace):
    r = ws.results
    analysis, cost = r.analysis, r.cost
    roof = r.roofline(0)
    assert r.computed == ["arrays", "evaluation", "analysis", "cost", "roofline"]
    ws.execute(SetTrace(trace))
    r = ws.results
    assert r.analysis is analysis and r.cost is cost and r.roofline(0) is roof
    assert r.measured(0) is not None and r.computed == ["measured"]
    ws.set_assumptions(electricity_usd_per_kwh=0.30)  # re-costs, does not re-evaluate
    r = ws.results
    assert r.analysis is analysis and r.measured(0) is not None and r.cost is not cost
    assert r.computed == ["cost"]
    ws.execute(SetRequirements(Requirements(latency=0.05)))
    r = ws.results
    assert r.plan.ranked and r.computed == ["plan"]
    assert r.plan.ranked[0].id == plan(analysis, Requirements(latency=0.05), ws.assumptions).ranked[0].id
    ws.set_assumptions(precision="fp32")  # new device arrays, new analysis, and everything after it
    r = ws.results
    assert r.analysis is not analysis and r.computed[:3] == ["arrays", "evaluation", "analysis"]
    ws.undo()  # the fp16 state again: same inputs, but the bundle keeps one entry per result
    assert ws.results.analysis is not analysis and ws.results.analysis.devices.precision == "fp16"


def test_every_result_names_its_inputs():
    state_parts = {"model", "devices", "assumptions", "trace", "requirements", "system", "training", "serving"}
    for name, inputs in DEPENDS.items():
        for dep in inputs:
            assert dep in ("args", "hardware") or dep in DEPENDS or dep.split(".")[0] in state_parts, (name, dep)


def test_trace_round_trips_through_json(trace):
    again = trace_from_dict(json.loads(json.dumps(trace_to_dict(trace))))
    assert again == trace and len(again.events) == 150
    data = trace_to_dict(trace)
    data["events"]["duration_s"][3] = -1.0
    with pytest.raises(ValueError, match="duration_s must be finite and >= 0"):
        trace_from_dict(data)
    data = trace_to_dict(trace)
    del data["events"]["lane"]
    with pytest.raises(ValueError, match="trace.events: expected the columns"):
        trace_from_dict(data)


def test_project_keeps_trace_and_requirements(ws, trace, tmp_path):
    req = Requirements(target=2000.0, target_unit="tokens/s", latency=0.05, budget=1e6, years=4.0,
                       price={"a100": 15000.0}, cloud_price={"h100": 4.1 / 3600})
    ws.execute(SetTrace(trace))
    ws.execute(SetRequirements(req))
    path = tmp_path / "p.hwproj"
    save_project(Project.of(ws), path)
    data = json.loads(path.read_text())
    assert data["format"] == FORMAT == 9
    assert data["requirements"] == {"target": 2000.0, "latency": 0.05, "budget": 1e6, "years": 4.0,
                                    "price": {"a100": 15000.0}, "cloud_price": {"h100": 4.1 / 3600}}
    loaded = load_project(path)
    assert loaded.trace == trace and loaded.requirements == req
    assert loaded.state == ws.state


def test_a_format_1_project_is_migrated(tmp_path):
    path = tmp_path / "old.hwproj"
    path.write_text(json.dumps({"format": 1, "kind": "hwexplorer-project", "devices": ["a100"],
                                "model": {"format": 1, "name": "m", "input": {"features": 4}, "layers": []},
                                "assumptions": {"batch": 4}}))
    p = load_project(path)
    assert p.trace is None and p.requirements == Requirements() and p.assumptions.batch == 4


def test_project_keeps_the_system_choice_and_migrates_format_2(ws, tmp_path):
    choice = SystemChoice(system_ids=("nvidia-dgx-h100", "pcie-server-8x-nvidia-l40s"), nodes=2,
                          layout=Layout(tp=8, dp=2), objective="latency", overlap=True, collective="ring", skew=0.5)
    ws.execute(SetSystem(choice))
    assert ws.state.system == choice
    path = tmp_path / "s.hwproj"
    save_project(Project.of(ws), path)
    data = json.loads(path.read_text())
    assert data["system"] == {"system_ids": ["nvidia-dgx-h100", "pcie-server-8x-nvidia-l40s"], "nodes": 2,
                              "layout": {"tp": 8, "pp": 1, "ep": 1, "dp": 2, "microbatches": 1},
                              "objective": "latency", "overlap": True, "offload": False, "collective": "ring",
                              "skew": 0.5}
    assert load_project(path).state == ws.state
    ws.undo()
    assert ws.state.system == SystemChoice()
    del data["system"]
    data["format"] = 2
    path.write_text(json.dumps(data))
    assert load_project(path).system == SystemChoice()  # format 2 had no systems


@pytest.mark.parametrize("patch, message", [
    ({"system": {"nodes": 0}}, "system.nodes: must be a whole number >= 1"),
    ({"system": {"system_ids": "dgx"}}, "system.system_ids: expected a list"),
    ({"system": {"layout": {"tp": 2, "colour": 1}}}, "system.layout: expected an object"),
    ({"system": {"layout": {"tp": -2}}}, "system.layout.tp: must be a whole number >= 1"),
    ({"system": {"collective": "butterfly"}}, "system.collective"),
    ({"system": {"speed": 1}}, "system: unknown keys speed"),
    ({"system": 5}, "system: expected an object"),
    ({"requirements": {"target": "fast"}}, "requirements.target: expected a number or null"),
    ({"requirements": {"colour": 1}}, "requirements: unknown keys colour"),
    ({"requirements": {"price": {"a100": -5}}}, "price\\[a100\\]"),
    ({"trace": {"source_format": "chrome"}}, "trace.events: expected the columns"),
    ({"trace": {"source_format": "vcd", "lanes": [], "events": {k: [] for k in (
        "name", "lane", "start_s", "duration_s", "category", "flops", "bytes", "location")}}}, "source_format"),
])
def test_a_bad_field_names_itself_and_opens_nothing(patch, message, tmp_path):
    data = {"format": 3, "kind": "hwexplorer-project", "devices": [], "trace": None, "requirements": {},
            "model": {"format": 1, "name": "m", "input": {"features": 4}, "layers": []}, "assumptions": {}}
    path = tmp_path / "bad.hwproj"
    path.write_text(json.dumps({**data, **patch}))
    with pytest.raises(ProjectError, match=message):
        load_project(path)


def test_set_model_keeps_trace_and_requirements(ws, trace):
    ws.execute(SetTrace(trace))
    ws.execute(SetRequirements(Requirements(latency=0.01)))
    ws.execute(SetModel(Model.make("n", {"features": 8})))
    assert ws.trace is trace and ws.requirements.latency == 0.01


@pytest.mark.parametrize("patch, message", [
    ({"format": True}, "format: expected a whole number, got True"),
    ({"format": "2"}, "format: expected a whole number"),
    ({"assumptions": 5}, "assumptions: expected an object, got 5"),
    ({"assumptions": [1, 2]}, "assumptions: expected an object"),
])
def test_a_wrong_type_is_a_project_error_not_a_traceback(patch, message, tmp_path):
    """Issue 24's fuzzing found these escaping as TypeError, or accepted (format true read as 1)."""
    data = {"format": 3, "kind": "hwexplorer-project", "devices": [], "trace": None, "requirements": {},
            "model": {"format": 1, "name": "m", "input": {"features": 4}, "layers": []}, "assumptions": {}}
    path = tmp_path / "bad.hwproj"
    path.write_text(json.dumps({**data, **patch}))
    with pytest.raises(ProjectError, match=message):
        load_project(path)
