"""The serving part of the session: SetServing is one undoable command naming its change; the results entry reads
it, a rate edit re-runs only the estimate (the step-time surfaces are reused); the project file keeps it."""

import dataclasses
import json

import pytest

from explorer.core.serving.serve import answer, device_setup
from explorer.core.session.commands import SetServing
from explorer.core.session.project import FORMAT, Project, ProjectError, load_project, save_project
from explorer.core.session.results import DEPENDS, Results
from explorer.core.session.serving_choice import ServingChoice
from explorer.core.session.state import PARTS, State
from explorer.core.session.workspace import Workspace

IDS = ("nvidia-l4", "nvidia-h100-sxm5")


@pytest.fixture
def ws(devices, llama8b):
    w = Workspace(llama8b, lambda wanted: [devices[i] for i in wanted if i in devices])
    w.select_devices(IDS)
    return w


def test_set_serving_is_one_undo_step_naming_its_part(ws):
    assert "serving" in PARTS and SetServing(ServingChoice()).changes == frozenset({"serving"})
    assert ws.state.serving is None
    seen = []
    ws.changed.connect(seen.append)
    ws.execute(SetServing(ServingChoice(rate=7.5)))
    assert ws.state.serving.rate == 7.5 and seen[-1] == frozenset({"serving"})
    ws.undo()
    assert ws.state.serving is None
    with pytest.raises(ValueError, match="rate"):
        ws.execute(SetServing(ServingChoice(rate=0.0)))
    with pytest.raises(ValueError, match="memory_utilization"):
        ws.execute(SetServing(ServingChoice(memory_utilization=1.5)))
    assert ws.state.serving is None


def test_the_results_entry_equals_the_core_and_a_rate_edit_reuses_the_surfaces(ws, devices, llama8b):
    assert "serving.rate" in DEPENDS["serving"] and "serving_setups" in DEPENDS["serving"]
    choice = ServingChoice(rate=4.0, input_tokens=512, output_tokens=128, ttft=0.3, tpot=0.04)
    ws.execute(SetServing(choice))
    answers = ws.results.serving
    assert len(answers) == 2 and ws.results.computed.count("serving_setups") == 1
    core = answer(choice.workload, device_setup(llama8b, devices["nvidia-l4"], choice.workload, choice.policy),
                  choice.slo)
    assert answers[0].estimate.ttft.p90 == pytest.approx(core.estimate.ttft.p90, rel=1e-12)
    assert answers[0].curve.capacity == pytest.approx(core.curve.capacity, rel=1e-12)
    setups = ws.results.serving_setups
    ws.execute(SetServing(dataclasses.replace(choice, rate=9.0, tpot=0.03)))
    again = ws.results
    assert again.serving_setups is setups  # the step-time surfaces are reused
    assert again.serving[0].estimate.rate == 9.0
    assert "serving_setups" not in again.computed and "serving" in again.computed
    ws.execute(SetServing(dataclasses.replace(choice, input_tokens=2048)))
    assert ws.results.serving_setups is not setups  # a length changes the grid: rebuilt


def test_no_devices_no_answers(llama8b):
    assert Results(State(model=llama8b), []).serving == ()


def test_the_project_file_keeps_the_serving_part(tmp_path, llama8b):
    choice = ServingChoice(rate=12.0, arrival="constant", ttft=0.2, ttft_pct="p99", tpot=None, chunked=True,
                           chunk=256, memory_utilization=0.85, block_size=32)
    state = State(model=llama8b, device_ids=IDS, serving=choice)
    path = tmp_path / "p.hwproj"
    save_project(Project.of_state(state), path)
    data = json.loads(path.read_text())
    assert data["format"] == FORMAT and data["serving"]["rate"] == 12.0 and data["serving"]["tpot"] is None
    assert load_project(path).state.serving == choice
    save_project(Project.of_state(State(model=llama8b)), path)
    assert json.loads(path.read_text())["serving"] is None and load_project(path).serving is None


def test_an_older_file_opens_without_a_serving_part_and_bad_values_name_the_field(tmp_path, llama8b):
    data = Project.of_state(State(model=llama8b)).to_dict()
    data["format"] = 4
    del data["serving"]
    assert Project.from_dict(data, "old").serving is None
    for bad, field in (({"rate": -1}, "serving.rate"), ({"ttft_pct": "p95"}, "serving.ttft_pct"),
                       ({"speed": 1}, "serving: unknown keys"), ({"block_size": 0}, "serving.block_size")):
        data = {**Project.of_state(State(model=llama8b)).to_dict(), "serving": bad}
        with pytest.raises(ProjectError, match=field.replace(".", r"\.")):
            Project.from_dict(data, "f")
