import pytest

from explorer.core.session.commands import AddLayers, MoveLayers, RemoveLayers, ReplaceLayer, SetModel
from explorer.core.session.project import Project, ProjectError, load_project, save_project
from explorer.core.session.workspace import Assumptions, Workspace
from explorer.core.workload.model import LayerSpec, Model


@pytest.fixture
def ws(a100, h100):
    known = {d.id: d for d in (a100, h100)}
    return Workspace(Model.make("m", {"features": 64}), lookup=lambda ids: [known[i] for i in ids if i in known])


def names(ws):
    return [layer.name for layer in ws.model.layers]


def test_every_edit_undoes_and_redoes(ws):
    events = []
    ws.analysis_updated.connect(events.append)
    ws.execute(AddLayers(0, (LayerSpec.make("dense", "a", in_features=64, out_features=64),
                             LayerSpec.make("relu", "b"), LayerSpec.make("dense", "c", in_features=64, out_features=8))))
    ws.execute(MoveLayers((2,), 0))
    assert names(ws) == ["c", "a", "b"]
    ws.execute(RemoveLayers((0, 2)))
    assert names(ws) == ["a"]
    ws.execute(ReplaceLayer(0, ws.model.layers[0].with_params(out_features=32)))
    ws.select_devices(["a100", "h100"])
    ws.set_assumptions(batch=16, precision="fp16")
    assert len(events) == 6 and events[-1].totals.time.shape == (2,)
    for _ in range(6):
        ws.undo()
    assert names(ws) == [] and ws.device_ids == () and ws.assumptions.batch == 1 and not ws.is_dirty
    for _ in range(6):
        ws.redo()
    assert names(ws) == ["a"] and ws.model.layers[0].params["out_features"] == 32
    assert ws.device_ids == ("a100", "h100") and ws.assumptions.batch == 16


def test_one_analysis_per_change_shared(ws):
    ws.select_devices(["a100"])
    first = ws.analysis
    assert ws.analysis is first  # cached until the next change
    ws.execute(SetModel(Model.make("n", {"features": 8}, [LayerSpec.make("dense", in_features=8, out_features=8)])))
    assert ws.analysis is not first


def test_bad_assumption_is_rejected_and_state_kept(ws):
    with pytest.raises(ValueError, match="batch: must be a whole number >= 1"):
        ws.set_assumptions(batch=0)
    assert ws.assumptions.batch == 1 and not ws.stack.can_undo


def test_project_round_trip_and_atomic_save(ws, tmp_path, monkeypatch):
    ws.execute(AddLayers(0, (LayerSpec.make("dense", "a", in_features=64, out_features=64),)))
    ws.select_devices(["a100"])
    path = tmp_path / "p.hwx.json"
    save_project(Project.of(ws), path)
    loaded = load_project(path)
    assert loaded == Project.of(ws)
    before = path.read_text()

    def crash(*args):
        raise OSError("disk died")

    monkeypatch.setattr("os.replace", crash)
    ws.set_assumptions(batch=4)
    with pytest.raises(OSError):
        save_project(Project.of(ws), path)
    assert path.read_text() == before and list(tmp_path.iterdir()) == [path]


@pytest.mark.parametrize("content, fragment", [
    ("{not json", "line 1, column 2: invalid JSON"),
    ('{"kind": "hwexplorer-project", "format": 10}', "newer Hardware Explorer"),
    ('{"kind": "something-else"}', "not a Hardware Explorer project"),
    ('{"kind": "hwexplorer-project", "format": 1, "model": {"format": 1, "name": "m", "input": {"features": 4},'
     ' "layers": []}, "assumptions": {"batch": -1}}', "assumptions.batch: must be a whole number"),
])
def test_corrupt_projects(tmp_path, content, fragment):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ProjectError) as err:
        load_project(path)
    assert fragment in str(err.value)


def test_assumptions_round_trip():
    a = Assumptions(precision="bf16", batch=8, seq_len=2048, phase="decode")
    assert Assumptions.from_dict(a.to_dict()) == a
