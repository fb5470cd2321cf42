"""The training part of the session: the SetTraining command (one undo step, a bad value refused naming its
field), the ``training`` results entry (what it depends on and what it does not), its numbers against the training
core called directly, and the project file's ``training`` key (round trip, format 3 migrated, bad values named)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.core.hardware.catalog_files import load_shipped_devices, load_shipped_systems
from explorer.core.session.commands import SetSystem
from explorer.core.session.project import FORMAT, Project, ProjectError, load_project, save_project
from explorer.core.session.state import SystemChoice
from explorer.core.session.training import SetTraining, cost_assumptions
from explorer.core.session.training_choice import TrainingChoice
from explorer.core.session.workspace import Workspace
from explorer.core.training.compare import train_on_system
from explorer.core.training.layout import TrainingLayout
from explorer.core.workload.templates import get_template

DGX, TPU = "nvidia-dgx-h100", "google-tpu-v5p-128-slice"
DEVICES = {d.id: d for d in load_shipped_devices()}
SYSTEMS = {s.id: s for s in load_shipped_systems()}


def _ws(*ids, nodes=1, model="llama3-8b") -> Workspace:
    ws = Workspace(get_template(model).build(), lambda wanted: [DEVICES[i] for i in wanted if i in DEVICES])
    if ids:
        ws.execute(SetSystem(SystemChoice(system_ids=ids, nodes=nodes)))
    return ws


def test_set_training_is_one_undoable_step_naming_its_change():
    ws = _ws(DGX)
    before = ws.state
    changes = []
    ws.changed.connect(changes.append)
    ws.execute(SetTraining(replace(ws.state.training, zero=3), text="set the ZeRO stage"))
    assert ws.state.training.zero == 3 and changes == [frozenset({"training"})]
    assert ws.stack.undo_text == "set the ZeRO stage"
    ws.undo()
    assert ws.state is before


@pytest.mark.parametrize("change, field", [
    ({"zero": 4}, "zero"), ({"tokens": 0.0}, "tokens"), ({"tokens": float("nan")}, "tokens"),
    ({"global_batch": 1000, "micro_batch": 3}, "global_batch"), ({"recompute": "some"}, "recompute"),
    ({"virtual": 2}, "virtual"), ({"cp": 0}, "cp"), ({"lora_rank": -1}, "lora_rank"),
    ({"layout": (8, 0, 1)}, "layout.pp"), ({"devices": -8}, "devices"), ({"schedule": "zb"}, "schedule"),
])
def test_a_bad_value_is_refused_naming_its_field_and_changes_nothing(change, field):
    ws = _ws()
    before = ws.state
    with pytest.raises(ValueError, match=f"^{field}"):
        ws.execute(SetTraining(replace(ws.state.training, **change)))
    assert ws.state is before and not ws.stack.can_undo


def test_the_results_are_the_training_core_s_numbers():
    ws = _ws(DGX, TPU)
    ws.execute(SetTraining(TrainingChoice(tokens=2e12, global_batch=512, seq_len=4096, zero=1)))
    got = ws.results.training
    assert [r.system.id for r in got] == [DGX, TPU]
    choice = ws.state.training
    for r in got:
        want = train_on_system(ws.model, SYSTEMS[r.system.id], DEVICES[r.system.device_id], choice.setup,
                               2e12, assumptions=cost_assumptions(ws.assumptions))
        assert r.layout == want.layout and r.error is None
        np.testing.assert_array_equal(r.order, want.order)
        np.testing.assert_allclose(r.analysis.step_time, want.analysis.step_time, rtol=1e-12)
        np.testing.assert_allclose(r.cost.time_s, want.cost.time_s, rtol=1e-12)
        # days to train = tokens / (global batch x sequence) steps x the step time, by hand
        k = r.chosen
        assert r.cost.time_s[k] == pytest.approx(2e12 / (512 * 4096) * r.analysis.step_time[k], rel=1e-12)


def test_what_the_training_entry_depends_on():
    ws = _ws(DGX)
    first = ws.results.training
    assert ws.results.computed == ["training_runs", "training"]
    ws.set_assumptions(batch=8, phase="decode", precision="int8")  # inference assumptions: nothing of training
    assert ws.results.training is first and "training_runs" not in ws.results.computed
    ws.set_assumptions(electricity_usd_per_kwh=0.24)  # a price re-costs, never re-analyses
    again = ws.results.training
    assert ws.results.computed == ["training"] and again[0].analysis is first[0].analysis
    k = again[0].chosen
    assert again[0].cost.electricity_usd[k] == pytest.approx(2 * first[0].cost.electricity_usd[k], rel=1e-12)
    ws.execute(SetTraining(replace(ws.state.training, tokens=4e12)))  # so do the tokens
    assert ws.results.training[0].cost.tokens == 4e12 and ws.results.computed == ["training"]
    ws.execute(SetTraining(replace(ws.state.training, zero=2)))
    assert ws.results.training[0].analysis.setup.zero == 2 and ws.results.computed == ["training_runs", "training"]
    ws.execute(SetSystem(replace(ws.state.system, nodes=2)))
    assert ws.results.training[0].system.devices == 16


def test_no_systems_no_training_and_a_model_without_blocks_says_why():
    assert _ws().results.training == ()
    ws = Workspace(get_template("resnet50").build(), lambda wanted: [DEVICES[i] for i in wanted if i in DEVICES])
    ws.execute(SetSystem(SystemChoice(system_ids=(DGX,))))
    (r,) = ws.results.training
    assert r.analysis is None and "no valid training layout" in r.error


def test_devices_makes_each_system_a_cluster_of_whole_nodes():
    ws = _ws(DGX, TPU, nodes=3)
    ws.execute(SetTraining(replace(ws.state.training, devices=64)))
    dgx, tpu = ws.results.training
    assert (dgx.system.devices, tpu.system.devices) == (64, 64)  # 8 DGX nodes; one 64-chip v5p-128 slice
    assert dgx.system.nodes == 8 and tpu.error is None
    ws.execute(SetTraining(replace(ws.state.training, devices=60)))
    assert all(r.error.startswith("devices: 60 is not a whole number") for r in ws.results.training)


def test_a_layout_by_hand_is_chosen_and_the_others_still_ranked():
    ws = _ws(DGX, nodes=2)
    ws.execute(SetTraining(replace(ws.state.training, layout=(8, 1, 2))))
    (r,) = ws.results.training
    assert r.layout == TrainingLayout(8, 1, 2) and r.chosen == 0
    assert len(r.order) > 3 and sorted(r.order.tolist()) == list(range(len(r.analysis)))
    ws.execute(SetTraining(replace(ws.state.training, layout=(8, 1, 4))))  # 32 devices on 16
    (r,) = ws.results.training
    assert r.analysis is None and r.error.startswith("dp: tp x cp x pp x dp")


def test_the_project_file_round_trip_and_its_migration(tmp_path):
    ws = _ws(DGX)
    choice = TrainingChoice(tokens=1.5e12, global_batch=256, micro_batch=2, seq_len=8192, zero=3,
                            recompute="full", schedule="interleaved", virtual=2, cp=2, lora_rank=16,
                            layout=(4, 2, 1), overlap=True, devices=64)
    ws.execute(SetTraining(choice))
    path = tmp_path / "p.hwproj"
    save_project(Project.of(ws), path)
    data = json.loads(path.read_text())
    assert data["format"] == FORMAT and data["training"]["layout"] == {"tp": 4, "pp": 2, "dp": 1}
    assert load_project(path).state.training == choice
    old = {k: v for k, v in data.items() if k != "training"}  # a format-3 file had no training
    path.write_text(json.dumps({**old, "format": 3}))
    assert load_project(path).training == TrainingChoice()


@pytest.mark.parametrize("training, message", [
    ({"zero": 4}, "training.zero: expected a ZeRO stage"),
    ({"speed": 1}, "training: unknown keys speed"),
    ({"layout": {"tp": 2}}, "training.layout: expected an object with tp, pp and dp"),
    ([], "training: expected an object"),
])
def test_a_bad_training_key_names_its_field(training, message, tmp_path):
    data = Project.of(_ws()).to_dict()
    path = tmp_path / "bad.hwproj"
    path.write_text(json.dumps({**data, "training": training}))
    with pytest.raises(ProjectError, match=message):
        load_project(path)



@st.composite
def choices(draw):
    micro = draw(st.integers(1, 8))
    schedule = draw(st.sampled_from(("gpipe", "1f1b", "interleaved")))
    return TrainingChoice(
        tokens=draw(st.floats(1.0, 1e15, allow_nan=False)), global_batch=micro * draw(st.integers(1, 512)),
        micro_batch=micro, seq_len=draw(st.integers(1, 1 << 17)), zero=draw(st.integers(0, 3)),
        recompute=draw(st.sampled_from(("none", "selective", "full"))), schedule=schedule,
        virtual=draw(st.integers(1, 4)) if schedule == "interleaved" else 1, cp=draw(st.integers(1, 16)),
        lora_rank=draw(st.integers(0, 64)),
        layout=draw(st.none() | st.tuples(st.integers(1, 64), st.integers(1, 64), st.integers(1, 64))),
        overlap=draw(st.booleans()), devices=draw(st.integers(0, 4096)))


@settings(max_examples=60, deadline=None)
@given(choice=choices())
def test_every_valid_choice_survives_the_project_file(choice):
    """JSON and back gives the same choice (the layout's tuple, the tokens' float)."""
    assert TrainingChoice.from_dict(json.loads(json.dumps(choice.to_dict()))) == choice


def test_the_training_results_follow_the_times_switch():
    """The Times switch re-analyses the training run (the DGX H100's device has fitted curves: the calibrated step
    is longer) and leaves a system whose device has none as it was (the TPU v5p slice)."""
    ws = _ws(DGX, TPU)
    ideal = [r.analysis.step_time[r.chosen] for r in ws.results.training]
    ws.set_assumptions(time_model="calibrated")
    runs = ws.results.training
    assert runs[0].analysis.setup.time_model == "calibrated"
    cal = [r.analysis.step_time[r.chosen] for r in runs]
    assert cal[0] > ideal[0] and cal[1] == ideal[1]


def test_the_train_phase_leaves_systems_to_the_training_results():
    """In the train phase the Systems view (inference layouts) is empty and the training run on the same systems
    is what answers; the single-device analysis is the training step's rows."""
    ws = _ws(DGX)
    assert ws.results.systems
    ws.set_assumptions(phase="train")
    assert ws.results.systems == () and ws.results.system_layouts == ()
    assert ws.results.training[0].analysis is not None
    ws.select_devices(["nvidia-h100-sxm5"])
    kinds = ws.results.evaluation.table.kinds
    assert "optimizer" in kinds and ws.results.evaluation.totals.throughput_unit == "sequences/s"
