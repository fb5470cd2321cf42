"""Systems in the catalog database, one test body on SQLite and on PostgreSQL (``catalog_url``): seeded beside the
devices with their sources, listed and filtered, edited under optimistic locking, deleted, imported all or nothing
and exported; a system whose device is not in the catalog is refused naming ``device``."""

from __future__ import annotations

import functools
from dataclasses import replace

import pytest
import yaml

from explorer.core.hardware.catalog_files import load_shipped_devices, load_shipped_systems
from explorer.core.hardware.system_file import SystemFileError, system_from_dict, system_to_dict
from explorer.store import system_repository
from explorer.store.engine import open_catalog
from explorer.store.errors import (
    ConflictError,
    DeviceInUseError,
    DuplicateSystemError,
    MissingDeviceError,
    ReadOnlyDeviceError,
    UnknownSystemError,
)
from explorer.store.io import ImportFileError
from explorer.store.resolve import resolve_system
from explorer.store.seeding import seed
from explorer.store.system_io import export_systems_file, import_systems_file
from explorer.store.system_repository import SystemFilter


@functools.cache
def shipped():
    devices = load_shipped_devices()
    return devices, load_shipped_systems(device_ids={d.id for d in devices})


@pytest.fixture
def repo(catalog_url):
    r = open_catalog(catalog_url, seed=False)
    devices, systems = shipped()
    report = seed(r.engine, devices, None, systems)
    assert report.systems.added == tuple(s.id for s in systems)
    yield r
    r.close()


def mapping(system_id="my-node", **fields) -> dict:
    """A user's system file: the shipped DGX H100 under another id, with ``fields`` changed."""
    data = system_to_dict(next(s for s in shipped()[1] if s.id == "nvidia-dgx-h100"))
    data.update(id=system_id, **fields)
    return data


def make(system_id="my-node", **fields):
    return system_from_dict(mapping(system_id, **fields))


def test_shipped_systems_are_stored_beside_the_devices_with_every_source(repo):
    _, systems = shipped()
    assert len(systems) == 11 and repo.systems() == tuple(sorted(systems, key=lambda s: s.id))
    dgx = repo.system_record("nvidia-dgx-h100")
    assert (dgx.origin, dgx.version, dgx.overrides) == ("shipped", 1, ())
    nvlink = dgx.system.domains[0].link.bandwidth
    assert (nvlink.text, nvlink.source, nvlink.value) == ("900 GB/s", "hgx", 900e9)
    assert "18 links x 25 GB/s" in nvlink.note and set(dgx.system.sources) == {"hgx", "basepod", "ds", "nccl",
                                                                                 "nvlink_blog", "twinport"}
    assert dgx.system.domains[0].link.energy.text == "1.3 pJ/bit"  # the link energy is stored with the system
    row = {r.id: r for r in repo.system_rows()}["nvidia-dgx-h100"]
    assert (row.device_id, row.devices, row.scale_up_bandwidth, row.scale_out_bandwidth) == (
        "nvidia-h100-sxm5", 8, 450e9, 50e9)  # per device and direction: 900 GB/s bidirectional; 400 Gbit/s


def test_filters_select_by_text_vendor_kind_origin_and_device(repo):
    repo.add_system(make("team-pod", vendor="nvidia", kind="cluster"))

    def ids(**f):
        return [r.id for r in repo.system_rows(SystemFilter(**f))]

    assert ids(text="NVL72") == ["nvidia-gb200-nvl72"]
    assert ids(text="h100-sxm5") == ["nvidia-dgx-h100", "team-pod"]  # the device id is searched too
    assert ids(vendors=("INTEL",)) == ["intel-gaudi3-hls3"]
    assert ids(kinds=("slice",)) == ["google-tpu-v5e-256-pod", "google-tpu-v5p-128-slice"]
    assert ids(origin="user") == ["team-pod"]
    assert ids(vendors=("NVIDIA",), origin="user", kinds=("cluster",)) == ["team-pod"]
    assert ids(device="nvidia-b200") == ["nvidia-dgx-b200", "nvidia-gb200-nvl72"]
    assert ids(text="100%") == []  # a wildcard in the search is a character, not a pattern
    with pytest.raises(ValueError, match="^kind: unknown system kind 'gpu'"):
        SystemFilter(kinds=("gpu",))


def test_add_get_update_and_a_stale_save_conflicts(repo):
    mine = make()
    assert repo.add_system(mine) == 1
    assert repo.get_system("my-node") == replace(mine, origin="user")
    with pytest.raises(DuplicateSystemError, match="^id: a system 'my-node' is already in the catalog"):
        repo.add_system(mine)
    edited = make(notes="two racks away from the switch")
    assert repo.update_system(edited, 1) == 2
    with pytest.raises(ConflictError) as exc:
        repo.update_system(make(name="Stale"), 1)
    assert str(exc.value).startswith("system 'my-node' was changed by someone else")
    assert {(f.field, f.mine, f.theirs) for f in exc.value.fields} >= {("name", "Stale", mine.name)}
    assert repo.get_system("my-node").notes == "two racks away from the switch"
    assert repo.system_record("my-node").version == 2
    with pytest.raises(UnknownSystemError, match="no system 'my-nod' in the catalog; did you mean my-node"):
        repo.get_system("my-nod")


def test_a_system_whose_device_is_not_in_the_catalog_is_refused_naming_device(repo):
    with pytest.raises(MissingDeviceError) as exc:
        repo.add_system(make(device="no-such-gpu"))
    assert str(exc.value) == ("my-node: device: 'no-such-gpu' is not a device of the catalog (add or import the "
                              "device first)")
    with pytest.raises(MissingDeviceError):
        repo.update_system(replace(repo.get_system("nvidia-dgx-h100"), device_id="no-such-gpu"), 1)
    assert "my-node" not in repo.system_ids()
    assert repo.get_system("nvidia-dgx-h100").device_id == "nvidia-h100-sxm5"


def test_an_invalid_system_is_refused_with_one_line_naming_the_field(repo):
    bad = replace(make(), devices=12)  # 12 devices: the 8-device domains no longer divide them
    with pytest.raises(SystemFileError) as exc:
        repo.add_system(bad)
    assert "\n" not in str(exc.value) and "<edit>: my-node: domains[0].size: 8 does not divide" in str(exc.value)
    assert "my-node" not in repo.system_ids()


def test_shipped_systems_cannot_be_deleted_and_used_devices_cannot_either(repo):
    with pytest.raises(ReadOnlyDeviceError, match="shipped system"):
        repo.delete_system("nvidia-dgx-h100")
    gpu = replace(repo.get("nvidia-l4"), id="my-gpu", origin="user")
    repo.add(gpu)
    repo.add_system(make(device="my-gpu"))
    with pytest.raises(DeviceInUseError, match="^'my-gpu' cannot be deleted: system\\(s\\) my-node are made of it"):
        repo.delete("my-gpu")
    repo.delete_system("my-node")
    repo.delete("my-gpu")
    assert "my-node" not in repo.system_ids() and "my-gpu" not in repo.ids()


def test_editing_a_shipped_system_marks_overrides_that_survive_a_reseed_and_revert(repo):
    devices, systems = shipped()
    dgx = repo.get_system("nvidia-dgx-h100")
    repo.update_system(replace(dgx, notes="ours"), 1)
    assert repo.system_record("nvidia-dgx-h100").overrides == ("notes",)
    assert {r.id: r.overridden for r in repo.system_rows()}["nvidia-dgx-h100"]
    newer = [replace(s, name=s.name + " (2027)") if s.id == "nvidia-dgx-h100" else s for s in systems]
    report = seed(repo.engine, devices, None, newer)
    assert report.systems.merged == ("nvidia-dgx-h100",) and report.systems.unchanged == 10
    after = repo.system_record("nvidia-dgx-h100")
    assert after.system.notes == "ours" and after.system.name.endswith("(2027)") and after.version == 3
    assert repo.revert_system("nvidia-dgx-h100", 3) == 4
    reverted = repo.system_record("nvidia-dgx-h100")
    assert reverted.system.notes == dgx.notes and reverted.overrides == ()


def test_a_user_system_with_a_newly_shipped_id_is_left_alone(repo):
    devices, systems = shipped()
    repo.add_system(make("fresh"))
    report = seed(repo.engine, devices, None, [*systems, replace(make("fresh", name="Shipped"), origin="shipped")])
    assert report.systems.skipped == ("fresh",)
    assert repo.system_record("fresh").origin == "user" and repo.get_system("fresh").name != "Shipped"
    assert "1 skipped: a system of yours has the id (fresh)" in report.summary()


def write(path, systems: list[dict], count: int | None = None):
    path.write_text(yaml.safe_dump({"format": 1, "systems": systems,
                                    "count": len(systems) if count is None else count}, sort_keys=False))
    return path


def test_a_failed_import_changes_nothing(repo, tmp_path):
    before = repo.systems()
    bad_unit = mapping("bad-unit")
    bad_unit["domains"][0]["bandwidth"]["value"] = "900 GB"
    path = write(tmp_path / "in.yaml", [mapping("ok-a"), bad_unit, mapping("no-dev", device="ghost-gpu"),
                                        mapping("nvidia-dgx-h100")])
    report = import_systems_file(repo, path)
    assert not report.committed and report.added == ()
    assert [(r.where, r.device, r.field) for r in report.rejected] == [
        ("systems[1]", "bad-unit", "domains[0].bandwidth"),
        ("systems[2]", "no-dev", "device"),
        ("systems[3]", "nvidia-dgx-h100", "id"),
    ]
    assert report.summary() == "in.yaml: nothing imported: 3 problem(s) in 3 of 4 row(s)"
    assert repo.systems() == before
    with pytest.raises(ImportFileError, match="count 5 but holds 1 system"):
        import_systems_file(repo, write(tmp_path / "cut.yaml", [mapping("ok-a")], count=5))
    assert repo.systems() == before


def test_a_failure_during_the_write_leaves_nothing_behind(repo, tmp_path, monkeypatch):
    path = write(tmp_path / "in.yaml", [mapping("nvidia-dgx-h100", notes="replaced"), mapping("new-one")])

    def explode(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(system_repository, "insert_systems", explode)  # after the replacement was written
    with pytest.raises(RuntimeError, match="disk full"):
        import_systems_file(repo, path, replace=True)
    monkeypatch.undo()
    assert "new-one" not in repo.system_ids()
    assert repo.system_record("nvidia-dgx-h100").version == 1 and repo.get_system("nvidia-dgx-h100").notes != "replaced"


def test_import_adds_and_replaces_in_one_transaction_and_dry_run_writes_nothing(repo, tmp_path):
    path = write(tmp_path / "in.yaml", [mapping("nvidia-dgx-h100", notes="ours"), mapping("new-one")])
    dry = import_systems_file(repo, path, replace=True, dry_run=True)
    assert (dry.added, dry.replaced, dry.committed) == (("new-one",), ("nvidia-dgx-h100",), False)
    assert "new-one" not in repo.system_ids()
    report = import_systems_file(repo, path, replace=True)
    assert report.lines() == ["in.yaml: imported 1 new and 1 replaced system(s)"]
    assert repo.system_record("nvidia-dgx-h100").overrides == ("notes",)  # replacing a shipped system edits it
    assert repo.system_record("new-one").origin == "user"


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_export_then_import_gives_back_identical_systems(repo, tmp_path, suffix, catalog_url):
    repo.add_system(make())
    path = tmp_path / f"systems{suffix}"
    assert export_systems_file(repo.systems(), path) == 12
    target = open_catalog(f"sqlite:///{tmp_path / 'other.sqlite3'}", seed=False)
    try:
        seed(target.engine, shipped()[0])  # the devices only
        report = import_systems_file(target, path)
        assert report.committed and len(report.added) == 12
        assert [replace(s, origin="user") for s in repo.systems()] == list(target.systems())
    finally:
        target.close()
    with pytest.raises(ImportFileError, match="not CSV"):
        export_systems_file(repo.systems(), tmp_path / "systems.csv")


def test_resolve_system_finds_imported_systems_and_files(repo, catalog_url, tmp_path):
    repo.add_system(make("team-node"))
    assert resolve_system("team-node", catalog_url).id == "team-node"
    assert resolve_system("nvidia-gb200-nvl72", catalog_url).devices == 72
    with pytest.raises(UnknownSystemError, match="no system 'team-nod' in the catalog; did you mean team-node"):
        resolve_system("team-nod", catalog_url)
    path = tmp_path / "file-node.yaml"
    path.write_text(yaml.safe_dump(mapping("file-node")))
    assert resolve_system(str(path), catalog_url).id == "file-node"


def test_a_changed_system_file_triggers_a_reseed(tmp_path):
    import shutil

    from explorer.core.hardware.catalog_files import shipped_catalog_dir

    folder = tmp_path / "catalog"
    shutil.copytree(shipped_catalog_dir(), folder)
    url = f"sqlite:///{tmp_path / 'c.sqlite3'}"
    open_catalog(url, catalog_dir=folder).close()
    path = folder / "systems" / "nvidia-dgx-h100.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("kind: node", "kind: rack"), encoding="utf-8")
    repo = open_catalog(url, catalog_dir=folder)  # only a file under systems/ changed
    try:
        assert repo.get_system("nvidia-dgx-h100").kind == "rack"
        assert repo.system_record("nvidia-dgx-h100").version == 2
        assert {r.version for r in repo.rows()} == {1}  # the devices were unchanged
    finally:
        repo.close()
