"""Named calibrations in the catalog database (issue 21, revision 0005): saved beside their device with their
provenance, listed, replaced and removed; left alone by device edits, gone with a deleted device; carried by
``catalog export``/``import`` (YAML and JSON, exactly); a malformed one stops the import in one line, exit 2, and
changes nothing; a revision-0004 database file gains the table and keeps its devices."""

from __future__ import annotations

import copy
import json
from dataclasses import replace

import pytest
import yaml
from alembic import command
from sqlalchemy import inspect, text

from explorer.core.hardware.device_file import device_from_dict
from explorer.core.session.named_calibrations import NamedCalibration
from explorer.store.engine import (
    HEAD_REVISION,
    _alembic_config,
    create_catalog_engine,
    current_revision,
    open_catalog,
)
from explorer.store.io import CALIBRATIONS_KEY, ImportFileError, export_file, import_file

SRC = {"ds": {"title": "Datasheet, rev. 2", "url": "https://example.org/ds.pdf", "date": "2026-11-22"}}
DEVICE = {"id": "lab-gpu", "name": "Lab GPU", "vendor": "Acme", "kind": "gpu", "sources": SRC,
          "peak": {"fp16": {"value": "312 TFLOP/s", "source": "ds"}},
          "memory": [{"name": "HBM", "capacity": "80 GB", "bandwidth": {"value": "2039 GB/s", "source": "ds"}}]}


def named(name: str, fraction: float = 0.7, fmt: str = "torch") -> NamedCalibration:
    """A calibration in the project file's form (what ``import_calibration`` returns, written by hand)."""
    key = "fit-" + "-".join("".join(ch if ch.isalnum() else " " for ch in name.lower()).split())
    fit = {"data": "trace.json", "points": 8, "method": "scipy.optimize.least_squares on log(time)",
           "date": "2026-11-27", "mape": 0.041}
    return NamedCalibration.from_dict({
        "name": name, "file": "trace.json", "format": fmt, "precision": "fp16", "date": "2026-11-27",
        "measurements": 15, "mape": {"matrix": 0.041, "vector": 0.02},
        "curves": {"matrix": {"fp16": {"fraction": fraction, "latency": "6 us", "sharpness": 1.5, "source": key,
                                       "fit": fit}},
                   "vector": {"fraction": 0.85, "latency": "4 us", "sharpness": 2.0, "source": key}}}, "c")


@pytest.fixture
def repo(catalog_url):
    r = open_catalog(catalog_url, seed=False)
    r.add(device_from_dict(DEVICE))
    yield r
    r.close()


def test_save_list_replace_and_delete(repo):
    a, b = named("Cluster A, 2026-11"), named("vendor datasheet fit", 0.6, "nsight")
    assert repo.calibrations("lab-gpu") == ()
    assert repo.save_calibration("lab-gpu", a) is None and repo.save_calibration("lab-gpu", b) is None
    assert repo.calibrations("lab-gpu") == (a, b)  # in the order they were saved, every field kept
    a2 = replace(a, measurements=20)
    assert repo.save_calibration("lab-gpu", a2) == a  # same name: replaced in its place, the old one returned
    assert repo.calibrations("lab-gpu") == (a2, b)
    assert repo.all_calibrations() == {"lab-gpu": (a2, b)} and repo.all_calibrations(["other"]) == {}
    assert repo.delete_calibration("lab-gpu", "CLUSTER a 2026 11") == a2  # by name's key, as the project finds it
    assert repo.calibrations("lab-gpu") == (b,) and repo.delete_calibration("lab-gpu", "nope") is None


def test_device_edits_keep_them_and_deleting_the_device_drops_them(repo):
    cal = named("Cluster A")
    repo.save_calibration("lab-gpu", cal)
    stored = repo.record("lab-gpu")
    repo.update(replace(stored.device, name="Lab GPU (edited)"), stored.version)
    assert repo.calibrations("lab-gpu") == (cal,)
    repo.delete("lab-gpu")
    assert repo.all_calibrations() == {}
    with pytest.raises(ValueError, match="lab-gpu"):
        repo.save_calibration("lab-gpu", cal)  # no such device: nothing stored


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_export_and_import_carry_them_exactly(repo, tmp_path, suffix):
    cals = (named("Cluster A, 2026-11"), named("vendor datasheet fit", 0.6, "nsight"))
    for c in cals:
        repo.save_calibration("lab-gpu", c)
    path = tmp_path / f"export{suffix}"
    assert export_file(repo.devices(["lab-gpu"]), path, calibrations=repo.all_calibrations()) == 1
    doc = (json.loads if suffix == ".json" else yaml.safe_load)(path.read_text())
    assert [c["name"] for c in doc["devices"][0][CALIBRATIONS_KEY]] == ["Cluster A, 2026-11", "vendor datasheet fit"]
    target = open_catalog("sqlite://", seed=False)
    try:
        report = import_file(target, path)
        assert report.added == ("lab-gpu",) and report.committed
        assert target.calibrations("lab-gpu") == cals
        assert target.get("lab-gpu") == repo.get("lab-gpu")
        # re-importing over the device replaces calibrations of the same name and keeps the others
        target.save_calibration("lab-gpu", named("mine"))
        import_file(target, path, replace=True)
        assert [c.name for c in target.calibrations("lab-gpu")] == ["Cluster A, 2026-11", "vendor datasheet fit",
                                                                     "mine"]
    finally:
        target.close()


@pytest.mark.parametrize("mutate, field", [
    (lambda c: c[0].update(precision="fp7"), "named_calibrations[0].precision"),
    (lambda c: c[1].update(measurements=0), "named_calibrations[1].measurements"),
    (lambda c: c[0]["curves"]["vector"].update(fraction="high"), "named_calibrations[0].curves"),
    (lambda c: c[0].pop("file"), "named_calibrations[0]: missing keys file"),
    (lambda c: c.append(copy.deepcopy(c[0])), "named_calibrations[2].name"),
])
def test_a_malformed_calibration_changes_nothing_and_exits_2_in_one_line(tmp_path, capsys, mutate, field):
    from explorer.__main__ import main

    db = f"sqlite:///{tmp_path / 'target.sqlite3'}"
    doc = {"format": 1, "devices": [{**DEVICE, CALIBRATIONS_KEY: [named("A").to_dict(), named("B").to_dict()]},
                                    {**DEVICE, "id": "lab-gpu-2"}], "count": 2}
    mutate(doc["devices"][0][CALIBRATIONS_KEY])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ImportFileError):
        import_file(open_catalog(db, seed=False), path)
    assert main(["catalog", "import", str(path), "--db", db]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "bad.json: devices[0]: lab-gpu: " + field in err
    repo = open_catalog(db, seed=False)
    try:
        assert "lab-gpu" not in repo.ids() and "lab-gpu-2" not in repo.ids() and repo.all_calibrations() == {}
    finally:
        repo.close()


def test_the_cli_exports_them(tmp_path, capsys):
    from explorer.__main__ import main

    db = f"sqlite:///{tmp_path / 'cat.sqlite3'}"
    repo = open_catalog(db, seed=False)
    repo.add(device_from_dict(DEVICE))
    repo.save_calibration("lab-gpu", named("Cluster A"))
    repo.close()
    assert main(["catalog", "export", "-", "--format", "json", "--db", db]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["devices"][0][CALIBRATIONS_KEY] == [named("Cluster A").to_dict()]


def test_a_revision_0004_database_file_gains_the_table(tmp_path):
    url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    engine = create_catalog_engine(url)
    with engine.begin() as conn:
        command.upgrade(_alembic_config(conn), "0004")
        conn.execute(text(
            "INSERT INTO devices (id, name, vendor, kind, efficiency_compute, efficiency_memory, notes, "
            "origin, version, overrides, created_at, updated_at) VALUES ('mine', 'Mine', 'Me', 'npu', "
            "1.0, 1.0, '', 'user', 1, '[]', '2026-01-01 00:00:00', '2026-01-01 00:00:00')"))
    assert "named_calibrations" not in inspect(engine).get_table_names()
    engine.dispose()

    repo = open_catalog(url, seed=False)
    try:
        with repo.engine.connect() as conn:
            assert current_revision(conn) == HEAD_REVISION == "0005"
            assert "named_calibrations" in inspect(conn).get_table_names()
        assert repo.get("mine").name == "Mine" and repo.calibrations("mine") == ()
        repo.save_calibration("mine", named("after the upgrade"))
        assert [c.name for c in repo.calibrations("mine")] == ["after the upgrade"]
    finally:
        repo.close()
