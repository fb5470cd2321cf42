"""Named calibrations kept in the catalog database, chosen by name in the project (issue 21, project format 9):
the workspace imports into the catalog and undoes it there, one step per add, remove and choice; a project names
the calibration it uses; a format-8 project that carries its calibrations whole keeps working; a name the catalog
lacks falls back to the catalog's calibration and says so."""

from __future__ import annotations

import json

import pytest

from explorer.core.hardware.device_file import device_from_dict
from explorer.core.session.named_calibrations import Calibrations
from explorer.core.session.project import FORMAT, MIGRATIONS, Project, load_project, save_project
from explorer.core.session.workspace import Assumptions, Workspace
from explorer.core.workload.templates import get_template
from explorer.store.engine import open_catalog
from tests.store.test_named_calibrations_store import DEVICE, named

A, B = named("Cluster A, 2026-11", 0.7), named("vendor datasheet fit", 0.4, "nsight")


@pytest.fixture
def db(tmp_path):
    url = f"sqlite:///{tmp_path / 'catalog.sqlite3'}"
    repo = open_catalog(url, seed=False)
    repo.add(device_from_dict(DEVICE))
    yield url, repo
    repo.close()


def workspace(repo, calibrations: Calibrations | None = None) -> Workspace:
    ws = Workspace(lookup=lambda ids: repo.devices([i for i in ids if i in repo.ids()]),
                   assumptions=Assumptions(precision="fp16", time_model="calibrated"), calibration_store=repo)
    ws.reset(get_template("gpt2").build(), ("lab-gpu",), Assumptions(precision="fp16", time_model="calibrated"),
             calibrations=calibrations)
    return ws


def total(ws) -> float:
    return float(ws.analysis.model_time("calibrated").sum())


def names(repo) -> list[str]:
    return [c.name for c in repo.calibrations("lab-gpu")]


def test_import_remove_and_choose_are_one_undo_step_each_in_the_catalog(db):
    _, repo = db
    ws = workspace(repo)
    t_catalog = total(ws)  # the device has no curves: the calibrated time is the ideal one
    ws.add_calibration("lab-gpu", A)
    assert names(repo) == [A.name] and ws.calibrations.of("lab-gpu") == ()  # kept in the catalog, not the project
    assert ws.calibrations.in_use == {"lab-gpu": A.name} and ws.used_calibration("lab-gpu") == A
    t_a = total(ws)
    ws.add_calibration("lab-gpu", B)
    t_b = total(ws)
    assert t_catalog < t_a < t_b  # fraction 0.7, then 0.4 of the peak: slower each time
    assert [(c.name, where) for c, where in ws.calibration_choices("lab-gpu")] == [(A.name, "catalog"),
                                                                                   (B.name, "catalog")]
    ws.choose_calibration("lab-gpu", A.name)
    assert total(ws) == t_a and ws.stack.undo_text == f"use calibration '{A.name}'"
    ws.remove_calibration("lab-gpu", A.name)
    assert names(repo) == [B.name] and total(ws) == t_catalog
    assert ws.stack.undo_text == f"remove calibration '{A.name}'"
    ws.undo()  # the removal: back in the catalog, and in use
    assert names(repo) == [B.name, A.name] and total(ws) == t_a
    ws.undo()  # the choice
    assert total(ws) == t_b
    ws.undo()  # the second import: deleted from the catalog
    assert names(repo) == [A.name] and total(ws) == t_a
    ws.undo()
    assert names(repo) == [] and total(ws) == t_catalog and ws.calibrations == Calibrations()
    ws.redo()
    ws.redo()
    assert names(repo) == [A.name, B.name] and total(ws) == t_b


def test_an_import_of_a_name_already_in_the_catalog_is_undone_to_the_old_one(db):
    _, repo = db
    repo.save_calibration("lab-gpu", A)
    ws = workspace(repo)
    newer = named(A.name, 0.4)
    ws.add_calibration("lab-gpu", newer)
    t_new = total(ws)
    assert repo.calibrations("lab-gpu") == (newer,)
    ws.undo()
    assert repo.calibrations("lab-gpu") == (A,) and ws.used_calibration("lab-gpu") is None
    ws.choose_calibration("lab-gpu", A.name)
    assert total(ws) < t_new


def test_a_format_9_project_names_the_calibration_and_the_catalog_holds_it(db, tmp_path, capsys, monkeypatch):
    url, repo = db
    monkeypatch.setenv("HWEXPLORER_DB", url)
    ws = workspace(repo)
    ws.add_calibration("lab-gpu", A)
    t_a = total(ws)
    path = tmp_path / "p.hwproj"
    save_project(Project.of(ws), path)
    data = json.loads(path.read_text())
    assert FORMAT == 9 and data["calibrations"] == {"lab-gpu": {"in_use": A.name, "named": []}}
    p = load_project(path)
    again = workspace(repo, p.calibrations)
    assert total(again) == t_a and again.used_calibration("lab-gpu") == A

    # the CLI reads the same name from the catalog database ($HWEXPLORER_DB) and says which calibration it used
    from explorer.__main__ import main

    def cli(model_arg):
        assert main(["analyze", model_arg, "--device", "lab-gpu", "--model", "calibrated", "--precision", "fp16",
                     "--json"]) == 0
        out = capsys.readouterr()
        return json.loads(out.out)["results"][0]["totals"]["calibrated_time_s"], out.err.strip()

    plain, _ = cli("gpt2")  # the catalog device has no curves: its calibrated time is the ideal one
    chosen, err = cli(str(path))
    assert chosen > plain and err == "hwexplorer: the project's calibration of lab-gpu is " + A.describe()

    # on a catalog without it, the catalog's calibration is used, and both the app and the CLI say so
    repo.delete_calibration("lab-gpu", A.name)
    lost = workspace(repo, p.calibrations)
    assert lost.used_calibration("lab-gpu") is None and lost.missing_calibration("lab-gpu") == A.name
    fallback, err = cli(str(path))
    assert fallback == plain and "which the catalog does not hold: its catalog calibration is used" in err


def test_a_format_8_project_with_its_own_calibrations_keeps_working(db, tmp_path):
    _, repo = db
    old = Project(get_template("gpt2").build(), ("lab-gpu",), Assumptions(precision="fp16"),
                  calibrations=Calibrations().add("lab-gpu", A).add("lab-gpu", B, use=False)).to_dict()
    old["format"] = 8
    assert MIGRATIONS[8](old) == {**old, "format": 9}  # the carried calibrations stay the project's own
    path = tmp_path / "old.hwproj"
    path.write_text(json.dumps(old))
    p = load_project(path)
    repo.save_calibration("lab-gpu", named("catalog fit", 0.5))
    ws = workspace(repo, p.calibrations)
    assert ws.used_calibration("lab-gpu") == A
    assert [(c.name, w) for c, w in ws.calibration_choices("lab-gpu")] == [("catalog fit", "catalog"),
                                                                           (A.name, "project"), (B.name, "project")]
    t_a = total(ws)
    ws.choose_calibration("lab-gpu", "catalog fit")  # a catalog one, chosen by name
    assert total(ws) > t_a and ws.calibrations.in_use == {"lab-gpu": "catalog fit"}
    ws.remove_calibration("lab-gpu", B.name)  # a project's own: removed from the project, the catalog untouched
    assert [c.name for c in ws.calibrations.of("lab-gpu")] == [A.name] and len(repo.calibrations("lab-gpu")) == 1
    ws.undo()
    ws.undo()
    assert ws.used_calibration("lab-gpu") == A and total(ws) == t_a
    assert Project.of(ws).to_dict()["calibrations"] == {k: v for k, v in old["calibrations"].items()}
