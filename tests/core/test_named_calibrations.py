"""Named calibrations inside the project (issue 21, project format 8): several fitted calibrations of a device, the
one in use, importing one from a measurement file, undo and redo through the workspace, the migration from format 7
and the round trip."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.core.analysis.evaluate import evaluate
from explorer.core.hardware.device_file import load_device_file
from explorer.core.session.named_calibrations import (
    Calibrations,
    NamedCalibration,
    apply_calibration,
    catalog_calibration_text,
    import_calibration,
    slug,
)
from explorer.core.session.project import (
    FORMAT,
    MIGRATIONS,
    Project,
    ProjectError,
    load_project,
    save_project,
)
from explorer.core.session.workspace import Assumptions, Workspace
from explorer.core.workload.templates import get_template

TRACES = Path(__file__).parents[1] / "fixtures" / "traces"
DEVICE = """format: 1
id: plain
name: Test GPU
vendor: test
kind: gpu
peak: {fp16: 312 TFLOP/s, bf16: 312 TFLOP/s}
memory:
  - {name: HBM, role: offchip, capacity: 80 GB, bandwidth: 2039 GB/s}
"""
# tests/fixtures/traces/make_calibration_traces.py made the traces' kernel times with these curves on the device
# above (312 TFLOP/s, 2039 GB/s): matrix fraction 0.7, 6 us, sharpness 1.5; vector 0.85, 4 us, sharpness 2
TRUTH = {"matrix": (0.7, 6e-6, 1.5), "vector": (0.85, 4e-6, 2.0)}


@pytest.fixture(scope="module")
def device(tmp_path_factory):
    path = tmp_path_factory.mktemp("dev") / "plain.yaml"
    path.write_text(DEVICE)
    return load_device_file(path)


@pytest.fixture(scope="module")
def from_torch(device):
    return import_calibration(TRACES / "torch_cuda_calibration_trace.json", device, "fp16", "Cluster A, 2026-11",
                              today="2026-11-27")


@pytest.fixture(scope="module")
def from_nsight(device):
    return import_calibration(TRACES / "ncu_calibration_raw.csv", device, "fp16", "vendor datasheet fit",
                              today="2026-11-26")


def _t(analysis, model: str = "calibrated") -> float:
    """The sum of the per-layer seconds of ``model`` (what moves when the calibration in use changes)."""
    return float(analysis.model_time(model).sum())


def _params(curve):
    return curve.fraction, curve.latency, curve.sharpness


def test_import_recovers_the_curves_that_made_the_trace(from_torch, from_nsight):
    cal = from_torch.calibration
    assert _params(cal.matrix["fp16"]) == pytest.approx(TRUTH["matrix"], rel=2e-3)
    assert _params(cal.vector) == pytest.approx(TRUTH["vector"], rel=2e-3)
    assert from_torch.format == "torch" and from_torch.key == "fit-cluster-a-2026-11"
    assert cal.matrix["fp16"].source == "fit-cluster-a-2026-11" and set(from_torch.mape) == {"matrix", "vector"}
    assert max(from_torch.mape.values()) < 1e-3 and from_torch.measurements > 10
    # the Nsight fixture holds element-wise kernels only: a vector curve, no matrix curve (the device had none)
    assert from_nsight.format == "nsight" and from_nsight.calibration.matrix == {}
    assert _params(from_nsight.calibration.vector) == pytest.approx(TRUTH["vector"], rel=2e-3)
    assert "kernels of torch_cuda_calibration_trace.json at fp16, 2026-11-27, MAPE matrix" in from_torch.describe()


def test_import_errors_are_one_line_naming_the_field(device, tmp_path):
    with pytest.raises(ValueError, match=r"^name: expected letters or digits"):
        import_calibration(TRACES / "ncu_calibration_raw.csv", device, "fp16", " -- ")
    with pytest.raises(ValueError, match=r"^file: no such file"):
        import_calibration(tmp_path / "nope.csv", device, "fp16", "x")
    with pytest.raises(ValueError, match=r"^precision: "):
        import_calibration(TRACES / "ncu_calibration_raw.csv", device, "fp17", "x")
    bad = tmp_path / "k.csv"
    bad.write_text("kind,m,n,k,time\ngemm,64,64,64,-3 us\n")
    with pytest.raises(ValueError) as err:
        import_calibration(bad, device, "fp16", "x")
    assert "\n" not in str(err.value) and "time" in str(err.value)


def test_choice_sets_the_calibrated_time_and_catalog_choice_gives_it_back(device, from_torch, from_nsight):
    cals = Calibrations().add("plain", from_torch).add("plain", from_nsight, use=False)
    assert cals.used("plain") is from_torch and [c.name for c in cals.of("plain")] == [from_torch.name,
                                                                                       from_nsight.name]
    applied = apply_calibration(device, cals.used("plain"))
    assert applied.calibration == from_torch.calibration and "fit-cluster-a-2026-11" in applied.sources
    # the calibrated time follows the chosen curve; the ideal time does not move
    model = get_template("gpt2").build()
    ideal, cal = evaluate(model, [device], "fp16"), evaluate(model, [applied], "fp16")
    assert _t(cal) > _t(ideal, "ideal") and _t(ideal) == _t(ideal, "ideal")  # no curves: calibrated = ideal
    assert _t(cal, "ideal") == _t(ideal, "ideal")
    other = apply_calibration(device, cals.choose("plain", "vendor datasheet fit").used("plain"))
    assert _t(evaluate(model, [other], "fp16")) != _t(cal)
    assert cals.choose("plain", None).used("plain") is None
    with pytest.raises(ValueError, match="no calibration named 'nope'"):
        cals.choose("plain", "nope")
    assert catalog_calibration_text(device).startswith("none")
    assert cals.remove("plain", from_torch.name).used("plain") is None


def test_workspace_import_and_choice_undo_and_redo(device, from_torch, from_nsight):
    ws = Workspace(get_template("gpt2").build(), lookup=lambda ids: [device] if "plain" in ids else [],
                   assumptions=Assumptions(time_model="calibrated"))
    ws.select_devices(["plain"])
    t_catalog = _t(ws.analysis)
    ws.add_calibration("plain", from_torch)
    assert ws.stack.undo_text == "import calibration 'Cluster A, 2026-11'"
    t_a = _t(ws.analysis)
    assert t_a != t_catalog and ws.devices[0].calibration == from_torch.calibration
    ws.add_calibration("plain", from_nsight)
    t_b = _t(ws.analysis)
    ws.choose_calibration("plain", from_torch.name)
    assert ws.stack.undo_text == "use calibration 'Cluster A, 2026-11'" and _t(ws.analysis) == t_a
    ws.choose_calibration("plain", None)
    assert _t(ws.analysis) == t_catalog and ws.stack.undo_text == "use the catalog's calibration"
    ws.undo()
    assert _t(ws.analysis) == t_a
    ws.undo()
    assert _t(ws.analysis) == t_b and ws.calibrations.used("plain").name == "vendor datasheet fit"
    ws.undo()  # the second import is gone
    assert [c.name for c in ws.calibrations.of("plain")] == [from_torch.name] and _t(ws.analysis) == t_a
    ws.redo()
    assert ws.calibrations.used("plain") == from_nsight and _t(ws.analysis) == t_b
    ws.undo()
    ws.undo()
    assert ws.calibrations == Calibrations() and _t(ws.analysis) == t_catalog


def test_project_round_trip_keeps_the_calibrations_and_the_choice(tmp_path, from_torch, from_nsight):
    cals = Calibrations().add("plain", from_torch).add("plain", from_nsight, use=False)
    project = Project(get_template("gpt2").build(), ("plain",), Assumptions(time_model="calibrated"),
                      calibrations=cals)
    path = tmp_path / "p.hwproj"
    save_project(project, path)
    data = json.loads(path.read_text())
    assert FORMAT == 9 and data["format"] == 9
    assert data["calibrations"]["plain"]["in_use"] == "Cluster A, 2026-11"
    assert data["calibrations"]["plain"]["named"][0]["curves"]["matrix"]["fp16"]["latency"].endswith(" us")
    back = load_project(path)
    assert back.calibrations == cals and back.state.calibrations.used("plain") == from_torch
    assert back.dumps() == project.dumps()


def test_format_7_migrates_to_no_calibrations(tmp_path):
    old = Project(get_template("gpt2").build(), ("plain",), Assumptions()).to_dict()
    old["format"] = 7
    del old["calibrations"]
    assert MIGRATIONS[7](old) == {**old, "format": 8, "calibrations": {}}
    path = tmp_path / "old.hwproj"
    path.write_text(json.dumps(old))
    assert load_project(path).calibrations == Calibrations()


@pytest.mark.parametrize("mutate, message", [
    (lambda c: c["plain"].update(in_use=""), "calibrations.plain.in_use: expected a calibration's name"),
    (lambda c: c["plain"]["named"][0].update(format="xlsx"), "calibrations.plain.named[0].format: expected"),
    (lambda c: c["plain"]["named"][0].update(measurements=0), "calibrations.plain.named[0].measurements"),
    (lambda c: c["plain"]["named"][0].pop("curves"), "calibrations.plain.named[0]: missing keys curves"),
    (lambda c: c["plain"]["named"][0]["curves"]["vector"].update(fraction="high"),
     "calibrations.plain.named[0].curves.calibration.vector.fraction: expected a number"),
    (lambda c: c["plain"]["named"].append(dict(c["plain"]["named"][0])), "is the name of another calibration"),
])
def test_bad_calibrations_refuse_the_file_in_one_line(tmp_path, from_torch, mutate, message):
    data = Project(get_template("gpt2").build(), ("plain",), Assumptions(),
                   calibrations=Calibrations().add("plain", from_torch)).to_dict()
    mutate(data["calibrations"])
    path = tmp_path / "bad.hwproj"
    path.write_text(json.dumps(data))
    with pytest.raises(ProjectError) as err:
        load_project(path)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_named_calibration_dict_round_trip_is_exact(from_torch, from_nsight):
    for cal in (from_torch, from_nsight):
        assert NamedCalibration.from_dict(cal.to_dict(), "c") == cal


def test_a_projects_calibration_in_use_feeds_the_cli(tmp_path, capsys, device, from_torch):
    """``hwexplorer analyze PROJECT --model calibrated`` uses the calibration the project chose, as the app does,
    and names it on stderr; the ideal times do not move."""
    from explorer.__main__ import main

    dev_file = tmp_path / "plain.yaml"
    dev_file.write_text(DEVICE)
    path = tmp_path / "p.hwproj"
    save_project(Project(get_template("gpt2").build(), ("plain",), Assumptions(),
                         calibrations=Calibrations().add("plain", from_torch)), path)
    args = ["--device", str(dev_file), "--precision", "fp16", "--json"]

    def totals(model_arg, time_model):
        assert main(["analyze", model_arg, "--model", time_model, *args]) == 0
        captured = capsys.readouterr()
        return json.loads(captured.out)["results"][0]["totals"]["calibrated_time_s"], captured.err

    plain, _ = totals("gpt2", "calibrated")  # the device file has no curves: its calibrated time is the ideal one
    chosen, err = totals(str(path), "calibrated")
    assert chosen > plain
    assert err.strip() == "hwexplorer: the project's calibration of plain is " + from_torch.describe()
    # the same number the workspace computes for the project's state
    ws = Workspace(lookup=lambda ids: [device] if "plain" in ids else [])
    p = load_project(path)
    ws.reset(p.model, p.device_ids, Assumptions(time_model="calibrated"), calibrations=p.calibrations)
    assert ws.devices[0].calibration == from_torch.calibration


@settings(max_examples=40, deadline=None)
@given(names=st.lists(st.text(alphabet="abcXYZ 019-,", min_size=1, max_size=12).filter(lambda t: slug(t)),
                      max_size=4, unique_by=slug),
       pick=st.integers(min_value=-1, max_value=3), devices=st.sampled_from([("plain",), ("plain", "other")]))
def test_any_set_of_named_calibrations_round_trips(from_torch, names, pick, devices):
    """Whatever names and choice, the project form gives back the same calibrations and the same one in use."""
    cals = Calibrations()
    for dev in devices:
        for n in names:
            cals = cals.add(dev, replace(from_torch, name=n), use=False)
        if 0 <= pick < len(names):
            cals = cals.choose(dev, names[pick])
    back = Calibrations.from_dict(json.loads(json.dumps(cals.to_dict())))
    assert back == cals
    for dev in devices:
        assert [c.name for c in back.of(dev)] == list(names)
        assert (back.used(dev).name if back.used(dev) else None) == (names[pick] if 0 <= pick < len(names) else None)
