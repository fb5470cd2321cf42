"""``hwexplorer catalog ...`` subcommands and device resolution for ``analyze --device``."""

from __future__ import annotations

import json

import pytest
import yaml

from explorer.cli.catalog_cmd import run
from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.hardware.device_file import DeviceFileError, device_to_dict
from explorer.store.engine import open_catalog
from explorer.store.errors import UnknownDeviceError
from explorer.store.resolve import resolve_device


@pytest.fixture
def db(tmp_path):
    return f"sqlite:///{tmp_path / 'catalog.sqlite3'}"


def test_list_json_holds_the_shipped_devices_in_si_units(db, capsys):
    assert run(["catalog", "list", "--db", db, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    shipped = {d.id: d for d in load_shipped_devices()}
    assert {r["id"] for r in rows} == set(shipped)
    for r in rows:
        device = shipped[r["id"]]
        assert r["origin"] == "shipped" and r["version"] == 1
        assert r["peak_flop_per_s"] == {p: c.value for p, c in device.peak.items()}
        if device.bandwidth == device.bandwidth:  # known
            assert r["bandwidth_byte_per_s"] == device.bandwidth


def test_list_filters_and_table(db, capsys):
    assert (
        run(["catalog", "list", "--db", db, "--json", "--precision", "fp8", "--min-bandwidth", "3 TB/s"]) == 0
    )
    rows = json.loads(capsys.readouterr().out)
    expected = {d.id for d in load_shipped_devices() if "fp8" in d.peak and d.bandwidth >= 3e12}
    assert {r["id"] for r in rows} == expected
    assert run(["catalog", "list", "--db", db, "--kind", "gpu"]) == 0
    out = capsys.readouterr().out.splitlines()
    gpus = [d for d in load_shipped_devices() if d.kind == "gpu"]
    assert out[0].startswith("ID") and out[-1] == f"{len(gpus)} device(s)"
    mi300x = next(line for line in out if line.startswith("amd-mi300x"))
    assert " 192 GiB " in mi300x and "206" not in mi300x  # as AMD writes it, not converted to decimal GB
    assert "GiB = 2^30 B" in out[-2]


def test_list_rejects_a_wrong_unit_with_exit_2(db, capsys):
    assert run(["catalog", "list", "--db", db, "--min-bandwidth", "3 kg"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hwexplorer: error: --min-bandwidth:") and len(err.strip().splitlines()) == 1


def test_show_prints_the_device_file_and_bookkeeping(db, capsys):
    device = load_shipped_devices()[0]
    assert run(["catalog", "show", device.id, "--db", db]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"# {device.id}: shipped device, version 1")
    assert yaml.safe_load(out) == device_to_dict(device)
    assert run(["catalog", "show", device.id, "--db", db, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["device"] == device_to_dict(device) and data["overrides"] == []
    assert run(["catalog", "show", "no-such-thing", "--db", db]) == 2
    assert "no device 'no-such-thing'" in capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["yaml", "json", "csv"])
def test_export_then_import_into_another_database(tmp_path, db, capsys, monkeypatch, fmt):
    out_file = tmp_path / f"nvidia.{fmt}"
    assert run(["catalog", "export", str(out_file), "--db", db, "--vendor", "NVIDIA"]) == 0
    nvidia = sorted(d.id for d in load_shipped_devices() if d.vendor == "NVIDIA")
    assert capsys.readouterr().out.strip() == f"wrote {len(nvidia)} device(s) to {out_file}"
    other = f"sqlite:///{tmp_path / 'other.sqlite3'}"
    monkeypatch.setenv("HWEXPLORER_CATALOG_DIR", str(tmp_path / "no-shipped-data"))  # a catalog without seeds
    assert run(["catalog", "import", str(out_file), "--db", other, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["committed"] and sorted(report["added"]) == nvidia and report["rejected"] == []
    # importing again is rejected row by row, exit 1, nothing changes
    assert run(["catalog", "import", str(out_file), "--db", other]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(nvidia) + 1 and "nothing imported" in lines[-1]


def test_export_to_stdout_needs_a_format(db, capsys):
    assert run(["catalog", "export", "-", "--db", db]) == 2
    assert "--format" in capsys.readouterr().err
    assert run(["catalog", "export", "-", "--format", "json", "--db", db, "--kind", "tpu"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["count"] == len(doc["devices"]) == sum(d.kind == "tpu" for d in load_shipped_devices())


def test_import_of_a_truncated_file_is_one_line_exit_2(tmp_path, db, capsys):
    path = tmp_path / "cut.json"
    path.write_text('{"format": 1, "devices": [{"id": "a", "name": "A"', encoding="utf-8")
    assert run(["catalog", "import", str(path), "--db", db]) == 2
    err = capsys.readouterr().err.strip()
    assert "truncated" in err and len(err.splitlines()) == 1


SRC = {"ds": {"title": "Datasheet", "url": "https://example.org/ds.pdf", "date": "2026-11-22"}}


def curated(folder, device_id: str, **fields) -> None:
    data = {
        "format": 1,
        "id": device_id,
        "name": device_id.upper(),
        "vendor": "Acme",
        "kind": "gpu",
        "sources": SRC,
        "tdp": {"value": "300 W", "source": "ds"},
    }
    data.update(fields)
    folder.mkdir(exist_ok=True)
    (folder / f"{device_id}.yaml").write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def test_validate_clean_catalog_exits_0(tmp_path, capsys):
    curated(tmp_path / "cat", "gpu-one")
    curated(tmp_path / "cat", "gpu-two")
    assert run(["catalog", "validate", str(tmp_path / "cat")]) == 0
    assert capsys.readouterr().out.strip().splitlines() == ["2 file(s), 2 valid device(s), 0 problem(s)"]


def test_validate_names_file_device_and_field(tmp_path, capsys):
    folder = tmp_path / "cat"
    curated(folder, "gpu-one")
    curated(folder, "gpu-two", tdp={"value": "400 kg", "source": "ds"}, clock="1 GHz")
    curated(folder, "gpu-three", id="gpu-one")
    assert run(["catalog", "validate", str(folder)]) == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert out[:-1] == [
        "gpu-three.yaml: gpu-one: id: duplicate of the id in gpu-one.yaml",
        "gpu-two.yaml: gpu-two: clock: has no source (every figure in the catalog must cite one)",
        "gpu-two.yaml: gpu-two: tdp: '400 kg' is a quantity of dimension [mass], not a power "
        "(expected units like '400 W')",
    ]
    assert out[-1] == "3 file(s), 1 valid device(s), 3 problem(s)"


def test_the_shipped_catalog_validates(capsys):
    code = run(["catalog", "validate"])
    out = capsys.readouterr().out
    assert code == 0, out


def test_validate_with_db_checks_the_stored_devices_too(db, capsys):
    assert run(["catalog", "validate", "--db", db]) == 0
    n = len(load_shipped_devices())
    assert capsys.readouterr().out.strip().endswith(f"{n} database device(s), 11 database system(s), 0 problem(s)")


def test_a_database_password_never_reaches_the_output(capsys):
    code = run(
        ["catalog", "list", "--db", "postgresql://dana:TopSecret-42@127.0.0.1:1/cat?connect_timeout=2"]
    )
    captured = capsys.readouterr()
    assert code == 2
    assert "TopSecret-42" not in captured.err + captured.out
    assert "dana:***@127.0.0.1:1/cat" in captured.err


# ----------------------------------------------------------------------------------------------- resolve
def test_resolve_device_by_id_path_and_unknown(tmp_path, monkeypatch):
    monkeypatch.setenv("HWEXPLORER_DB", f"sqlite:///{tmp_path / 'default.sqlite3'}")
    shipped = load_shipped_devices()[0]
    assert resolve_device(shipped.id) == shipped
    path = tmp_path / "mine.yaml"
    path.write_text(
        yaml.safe_dump({"id": "mine", "name": "Mine", "vendor": "Me", "kind": "cpu"}), encoding="utf-8"
    )
    assert resolve_device(str(path)).id == "mine"
    with pytest.raises(DeviceFileError):
        resolve_device(str(tmp_path / "missing.yaml"))
    prefix = shipped.id.split("-")[1]
    with pytest.raises(UnknownDeviceError) as exc:
        resolve_device(prefix + "x")
    assert isinstance(exc.value, ValueError) and "catalog list" in str(exc.value)
    with pytest.raises(UnknownDeviceError) as exc:
        resolve_device(prefix)
    assert shipped.id in exc.value.close_matches or exc.value.close_matches


def test_resolve_device_uses_the_given_database(tmp_path):
    url = f"sqlite:///{tmp_path / 'team.sqlite3'}"
    with open_catalog(url) as repo:
        repo.duplicate(repo.ids()[0], "team-special")
    assert resolve_device("team-special", url).origin == "user"


def test_list_names_the_precision_of_the_best_peak_and_counts_integer_ops_as_ops(db, capsys):
    """Issue 24: an int8 TOP/s peak was printed under a TFLOP/s heading (Apple's ANE: 38 TOPS, int8)."""
    assert run(["catalog", "list", "--db", db]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:-1]}
    assert "38 TOP/s int8" in lines["apple-ane-m4"] and "FLOP/s" not in lines["apple-ane-m4"]
    assert "1.979 PFLOP/s fp8" in lines["nvidia-h100-sxm5"]
