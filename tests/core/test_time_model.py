"""The ideal/calibrated switch of the session (assumptions.time_model): the analysis the panels read follows it,
undoably, and the project file keeps it (format 4)."""

import json

import numpy as np
import pytest

from explorer.core.analysis.evaluate import evaluate
from explorer.core.analysis.time_model import as_time_model, model_title
from explorer.core.session.project import FORMAT, Project, load_project, save_project
from explorer.core.session.results import Results
from explorer.core.session.state import Assumptions, State
from explorer.core.session.workspace import Workspace
from explorer.core.workload.model import Model

CAL = {"matrix": {"fp16": {"fraction": 0.5, "latency": "10 us", "sharpness": 1}},
       "vector": {"fraction": 0.5, "latency": "2 us", "sharpness": 1}}
MODEL = Model.from_dict({"format": 1, "name": "dense", "input": {"features": 2048},
                         "layers": [{"kind": "dense", "name": "fc", "in_features": 2048, "out_features": 2048,
                                     "bias": False}, {"kind": "relu", "name": "act"}]}, "m")


@pytest.fixture
def cal(make_device):
    return make_device("cal", "312 TFLOP/s", "2039 GB/s", calibration=CAL)


def test_the_calibrated_view_takes_the_calibrated_times_and_what_follows_from_them(cal, a100):
    e = evaluate(MODEL, [cal, a100], "fp16")
    assert as_time_model(e, "ideal") is e
    v = as_time_model(e, "calibrated")
    np.testing.assert_array_equal(v.time, e.calibrated_time)
    np.testing.assert_array_equal(v.totals.time, e.totals.calibrated_time)
    # by hand for the calibrated device: the dense row, 2 x 2048 x 2048 FLOP at 0.5 x 312 TFLOP/s, plus 10 us
    flops = 2 * 2048 * 2048
    work = max(flops / (312e12 * 0.5 * e.mapping_efficiency[0, 0]), e.bytes[0] / (2039e9 * 0.5))
    assert v.time[0, 0] == pytest.approx(10e-6 + work, rel=1e-9)
    assert v.totals.throughput[0] == pytest.approx(1 / v.totals.time[0])
    assert v.totals.achieved_flops[0] == pytest.approx(e.totals.flops[0] / v.totals.time[0])
    # the uncalibrated device keeps its ideal time; FLOPs, bytes, energy and ideal_time are the same in both
    assert v.time[0, 1] == e.time[0, 1] and v.totals.time[1] == e.totals.time[1]
    for name in ("flops", "bytes", "energy", "ideal_time", "calibrated_time"):
        assert getattr(v, name) is getattr(e, name)
    assert model_title("calibrated", v) == "calibrated model" and model_title("ideal") == "ideal model"
    only_ideal = evaluate(MODEL, [a100], "fp16")
    assert model_title("calibrated", only_ideal) == "calibrated model (no device calibrated: ideal times)"
    with pytest.raises(ValueError, match="time_model: expected one of ideal, calibrated"):
        as_time_model(e, "measured")


def test_the_switch_re_shows_without_re_evaluating_and_undoes(cal):
    ws = Workspace(MODEL, lookup=lambda ids: [cal] if "cal" in ids else [])
    ws.select_devices(["cal"])
    r = ws.results
    ideal, cost = r.analysis, r.cost
    ws.set_assumptions(time_model="calibrated")
    r = ws.results
    assert r.evaluation is ideal and r.computed == ["analysis"]  # the evaluation is kept: both times are in it
    assert r.analysis.totals.time[0] == pytest.approx(ideal.totals.calibrated_time[0])
    assert r.cost is not cost  # what is computed from time follows
    assert r.analysis.totals.time[0] > ideal.totals.time[0]
    ws.undo()
    assert ws.assumptions.time_model == "ideal" and ws.results.analysis.totals.time[0] == ideal.totals.time[0]
    with pytest.raises(ValueError, match="time_model: expected ideal or calibrated"):
        Assumptions(time_model="fast").checked()


def test_the_project_file_keeps_the_time_model_and_older_files_open_ideal(tmp_path):
    state = State(model=MODEL, assumptions=Assumptions(time_model="calibrated"))
    path = tmp_path / "p.hwproj"
    save_project(Project.of_state(state), path)
    data = json.loads(path.read_text())
    assert data["format"] == FORMAT == 9 and data["assumptions"]["time_model"] == "calibrated"
    assert load_project(path).assumptions.time_model == "calibrated"
    del data["assumptions"]["time_model"]
    data["format"] = 3  # written before the switch existed
    path.write_text(json.dumps(data))
    assert load_project(path).assumptions.time_model == "ideal"
    data["assumptions"]["time_model"] = "fast"
    data["format"] = 4
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="assumptions.time_model: expected ideal or calibrated"):
        load_project(path)


def test_the_reports_bundle_shows_the_analysis_it_was_given(cal):
    e = evaluate(MODEL, [cal], "fp16")
    r = Results.of_analysis(e, Assumptions())
    assert r.analysis is e and "evaluation" not in r.computed  # taken as it is, not evaluated again
