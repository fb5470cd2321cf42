"""Import and export: exact round-trips in YAML, JSON and CSV; malformed files rejected with a full report."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.hardware.device_file import device_from_dict, device_to_dict
from explorer.core.precision import PRECISIONS
from explorer.store import repository as repository_module
from explorer.store.engine import open_catalog
from explorer.store.io import ImportFileError, export_file, export_text, import_file, read_import

FORMATS = ("yaml", "json", "csv")
SRC = {"ds": {"title": "Datasheet, rev. 2", "url": "https://example.org/ds.pdf", "date": "2026-11-22"}}


@pytest.fixture
def repo():
    r = open_catalog("sqlite://", seed=False)
    yield r
    r.close()


def good(device_id: str, **fields) -> dict:
    data = {
        "id": device_id,
        "name": f"Device {device_id}",
        "vendor": "Acme",
        "kind": "npu",
        "sources": SRC,
        "peak": {"int8": {"value": "26 TOP/s", "source": "ds"}},
        "memory": [
            {"name": "LPDDR4", "capacity": "8 GB", "bandwidth": {"value": "25.6 GB/s", "source": "ds"}}
        ],
    }
    data.update(fields)
    return data


def write(tmp_path, name: str, devices: list[dict]) -> str:
    """Write device mappings in the format of ``name``'s suffix, like an export does."""
    path = tmp_path / name
    suffix = path.suffix
    if suffix == ".csv":
        from explorer.store.csv_columns import devices_to_csv

        path.write_text(devices_to_csv(devices), encoding="utf-8")
    else:
        doc = {"format": 1, "devices": devices, "count": len(devices)}
        path.write_text(
            json.dumps(doc) if suffix == ".json" else yaml.safe_dump(doc, sort_keys=False), encoding="utf-8"
        )
    return str(path)


# ------------------------------------------------------------------------------------------- round trips
@pytest.mark.parametrize("fmt", FORMATS)
def test_shipped_catalog_export_import_round_trips_exactly(tmp_path, fmt):
    source = open_catalog("sqlite://")
    devices = source.devices()
    path = tmp_path / f"catalog.{fmt}"
    assert export_file(devices, path) == len(devices)
    target = open_catalog("sqlite://", seed=False)
    report = import_file(target, path)
    assert report.ok and report.committed and len(report.added) == len(devices)
    assert target.devices() == tuple(replace(d, origin="user") for d in devices)
    # export again: the same text
    assert export_text(target.devices(), fmt) == path.read_text(encoding="utf-8")
    source.close()
    target.close()


def test_csv_has_one_row_per_device_and_units_in_headers(tmp_path):
    text = export_text(
        [device_from_dict(good("a")), device_from_dict(good("b", peak={"int8": "30 TOPS"}))], "csv"
    )
    lines = list(csv.reader(io.StringIO(text)))
    assert len(lines) == 3 and len(text.splitlines()) == 3
    header = lines[0]
    assert "peak.int8 [TOP/s]" in header and "memory[0].bandwidth [GB/s]" in header
    assert "memory[0].capacity [GB]" in header and "peak.int8.source" in header
    row_a = dict(zip(header, lines[1]))
    row_b = dict(zip(header, lines[2]))
    assert row_a["peak.int8 [TOP/s]"] == "26"  # a number in the header's unit
    assert row_b["peak.int8 [TOP/s]"] == "30 TOPS"  # written in another unit: kept as written
    assert row_a["memory[0].capacity [GB]"] == "8"


def test_csv_cells_are_numbers_in_the_header_unit(tmp_path):
    path = tmp_path / "hand.csv"
    path.write_text(
        "id,name,vendor,kind,memory[0].name,memory[0].bandwidth [TB/s],memory[0].capacity [GiB],"
        "tdp [W],matrix_engine.type,matrix_engine.rows,matrix_engine.cols\n"
        "hand-1,Hand,Acme,tpu,HBM,1.2,16,75,systolic,128,128\n",
        encoding="utf-8",
    )
    _, rows, checked, rejected = read_import(path)
    assert rejected == [] and rows == 1
    device = checked[0][1]
    assert device.bandwidth == pytest.approx(1.2e12)
    assert device.memory_capacity == 16 * 2**30
    assert device.tdp.value == 75.0 and device.memory[0].bandwidth.text == "1.2 TB/s"
    assert device.matrix_engine.rows.value == 128


# Random devices: every field of the device file, units as vendors write them, awkward text.
TEXT = st.text(st.sampled_from(list("abcXYZ019 ,;:\"'#-_/()[]{}%&*\n\téµ—")), min_size=1, max_size=30)
NAME = TEXT.filter(str.strip)  # a required name or vendor: a blank one is refused (issue 24)
NUMBER = st.one_of(st.integers(1, 999).map(str), st.integers(1, 999).map(lambda n: f"{n}.5"))
UNITS = {
    "throughput": ["TFLOP/s", "GFLOP/s", "TOP/s", "TOPS", "GMAC/s"],
    "bytes": ["GB", "GiB", "MB", "KiB", "kB"],
    "bandwidth": ["GB/s", "TB/s", "GiB/s", "Gbit/s"],
    "energy_per_byte": ["pJ/B"],
    "energy": ["pJ"],
    "time": ["ns"],
    "frequency": ["MHz"],
    "power": ["W", "mW"],
    "money": ["USD"],
    "money_rate": ["USD/h"],
}


@st.composite
def cited(draw, kind, keys):
    text = draw(
        st.one_of(
            st.just("2,039 GB/s") if kind == "bandwidth" else st.nothing(),
            st.builds(lambda n, u: f"{n} {u}", NUMBER, st.sampled_from(UNITS[kind])),
        )
    )
    if not keys or draw(st.booleans()):
        return text
    out = {"value": text, "source": draw(st.sampled_from(keys))}
    if draw(st.booleans()):
        out["note"] = draw(TEXT)
    return out


@st.composite
def count(draw, keys):
    n = draw(st.integers(1, 4096))
    return {"value": n, "source": keys[0]} if keys and draw(st.booleans()) else n


@st.composite
def link(draw, keys):
    out = {"name": draw(NAME), "bandwidth": draw(cited("bandwidth", keys))}
    if draw(st.booleans()):
        out["direction"] = draw(st.sampled_from(["per_direction", "bidirectional"]))
    return out


@st.composite
def device_mapping(draw, device_id):
    keys = draw(st.lists(st.sampled_from(["ds", "wp", "a-1"]), unique=True, max_size=3))
    data = {
        "id": device_id,
        "name": draw(NAME),
        "vendor": draw(NAME),
        "kind": draw(st.sampled_from(["gpu", "tpu", "npu", "cpu", "mcu", "other"])),
    }
    data["sources"] = {
        k: {"title": draw(TEXT), "url": f"https://example.org/{k}", "date": "2026-11-22"} for k in keys
    }
    optional = {
        "tier": st.sampled_from(["datacenter", "workstation", "edge", "mobile", "mcu"]),
        "family": TEXT,
        "year": st.integers(1950, 2100),
        "peak": st.dictionaries(
            st.sampled_from(PRECISIONS), cited("throughput", keys), min_size=1, max_size=4
        ),
        "peak_sparse": st.dictionaries(
            st.sampled_from(PRECISIONS), cited("throughput", keys), min_size=1, max_size=2
        ),
        "energy_per_mac": st.dictionaries(
            st.sampled_from(PRECISIONS), cited("energy", keys), min_size=1, max_size=2
        ),
        "memory": st.lists(
            st.fixed_dictionaries(
                {"name": NAME},
                optional={
                    "role": st.sampled_from(["offchip", "onchip", "registers"]),
                    "capacity": cited("bytes", keys),
                    "bandwidth": cited("bandwidth", keys),
                    "energy": cited("energy_per_byte", keys),
                    "latency": cited("time", keys),
                    "instances": st.integers(2, 200),
                },
            ),
            min_size=1,
            max_size=3,
        ),
        "matrix_engine": st.one_of(
            st.fixed_dictionaries(
                {"type": st.just("systolic"), "rows": count(keys), "cols": count(keys)},
                optional={"dataflow": st.sampled_from(["ws", "os", "is"])},
            ),
            st.fixed_dictionaries(
                {"type": st.just("tensor_core")},
                optional={
                    "tile": st.fixed_dictionaries(
                        {"m": st.integers(1, 64), "n": st.integers(1, 64), "k": st.integers(1, 64)}
                    ),
                    "units": count(keys),
                    "sm_count": count(keys),
                    "block_tile": st.fixed_dictionaries({"m": st.integers(1, 256), "n": st.integers(1, 256)}),
                },
            ),
        ),
        "clock": cited("frequency", keys),
        "tdp": cited("power", keys),
        "price": cited("money", keys),
        "cloud_price": cited("money_rate", keys),
        "host_link": link(keys),
        "interconnects": st.lists(link(keys), min_size=1, max_size=2),
        "efficiency": st.fixed_dictionaries(
            {"compute": st.floats(0.01, 1.0), "memory": st.floats(0.01, 1.0)}
        ),
        "notes": TEXT,
        "conflicts": st.lists(st.fixed_dictionaries({"field": TEXT, "note": TEXT}), min_size=1, max_size=2),
    }
    for key, strategy in optional.items():
        if draw(st.booleans()):
            data[key] = draw(strategy)
    if isinstance(data.get("price"), dict) and draw(st.booleans()):
        data["price"]["date"] = "2024-05"
    return data


DEVICE_LISTS = st.integers(1, 3).flatmap(lambda n: st.tuples(*(device_mapping(f"dev-{i}") for i in range(n))))


@settings(max_examples=60, deadline=None)
@given(mappings=DEVICE_LISTS, fmt=st.sampled_from(FORMATS))
def test_random_devices_round_trip_through_every_format(tmp_path_factory, mappings, fmt):
    devices = [device_from_dict(m) for m in mappings]
    path = tmp_path_factory.mktemp("rt") / f"devices.{fmt}"
    export_file(devices, path)
    _, rows, checked, rejected = read_import(path)
    assert rejected == []
    assert rows == len(devices)
    assert [device_to_dict(d) for _, d in checked] == [device_to_dict(d) for d in devices]


@pytest.fixture(scope="module")
def shared_repo():
    r = open_catalog("sqlite://", seed=False)
    yield r
    r.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mapping=device_mapping("stored-device"))
def test_random_devices_are_stored_losslessly(shared_repo, mapping):
    device = device_from_dict(mapping)
    shared_repo.add(device)
    try:
        assert shared_repo.get(device.id) == device
    finally:
        shared_repo.delete(device.id)


# ----------------------------------------------------------------------------------------- malformed files
@pytest.mark.parametrize("suffix", [".yaml", ".json", ".csv"])
def test_a_wrong_unit_rejects_the_whole_file_naming_row_and_field(repo, tmp_path, suffix):
    bad = good("b", memory=[{"name": "HBM", "bandwidth": {"value": "3.35 kg", "source": "ds"}}])
    path = write(tmp_path, f"in{suffix}", [good("a"), bad, good("c")])
    report = import_file(repo, path)
    assert not report.ok and not report.committed
    assert repo.count() == 0  # all or nothing
    [rejection] = report.rejected
    assert rejection.device == "b" and rejection.field == "memory[0].bandwidth"
    assert "kg" in rejection.message and "not a bandwidth" in rejection.message
    assert rejection.where == ("devices[1]" if suffix != ".csv" else "line 3")
    assert report.summary().endswith("nothing imported: 1 problem(s) in 1 of 3 row(s)")


def test_csv_header_with_a_unit_of_the_wrong_dimension(repo, tmp_path):
    path = tmp_path / "h.csv"
    path.write_text(
        "id,name,vendor,kind,tdp [GB],peak.fp16 [TFLOP/s],oops\nx,X,Acme,gpu,5,10,1\n", encoding="utf-8"
    )
    report = import_file(repo, path)
    fields = {(r.where, r.field): r.message for r in report.rejected}
    assert "not a power" in fields[("header", "tdp [GB]")]
    assert "unknown column" in fields[("header", "oops")]
    assert repo.count() == 0


def test_every_rejected_row_and_field_is_listed(repo, tmp_path):
    rows = [
        good("ok-1"),
        {k: v for k, v in good("x").items() if k != "id"},  # missing id
        good("ok-1"),  # duplicate id
        good("bad-2", kind="fpga", tdp="400 kg"),  # two problems in one row
    ]
    report = import_file(repo, write(tmp_path, "in.yaml", rows))
    got = [(r.where, r.device, r.field) for r in report.rejected]
    assert got == [
        ("devices[1]", "?", "id"),
        ("devices[2]", "ok-1", "id"),
        ("devices[3]", "bad-2", "kind"),
        ("devices[3]", "bad-2", "tdp"),
    ]
    assert report.rejected[0].message == "is required"
    assert report.rejected[1].message == "duplicate of the id in devices[0]"
    assert repo.count() == 0


def test_an_id_longer_than_the_schema_allows_is_rejected(repo, tmp_path):
    report = import_file(repo, write(tmp_path, "long.json", [good("x" * 121)]))
    assert [(r.field, r.message) for r in report.rejected] == [("id", "longer than 120 characters")]


def test_missing_id_in_csv(repo, tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("id,name,vendor,kind\n,No id,Acme,gpu\nfine,Fine,Acme,gpu\n", encoding="utf-8")
    report = import_file(repo, path)
    assert [(r.where, r.field, r.message) for r in report.rejected] == [("line 2", "id", "is required")]


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_truncated_yaml_and_json_are_refused(repo, tmp_path, suffix):
    path = tmp_path / f"full{suffix}"
    export_file([device_from_dict(good(f"d-{i}")) for i in range(6)], path)
    text = path.read_text(encoding="utf-8")
    for cut in (len(text) // 3, len(text) // 2, len(text) - 12):
        truncated = tmp_path / f"cut{suffix}"
        truncated.write_text(text[:cut], encoding="utf-8")
        with pytest.raises(ImportFileError, match="truncated"):
            import_file(repo, truncated)
    assert repo.count() == 0


def test_a_count_that_does_not_match_is_refused(repo, tmp_path):
    path = tmp_path / "count.yaml"
    path.write_text(yaml.safe_dump({"format": 1, "devices": [good("a")], "count": 2}), encoding="utf-8")
    with pytest.raises(ImportFileError, match="count 2 but holds 1"):
        import_file(repo, path)


def test_truncated_csv_rejects_the_cut_row(repo, tmp_path):
    path = tmp_path / "full.csv"
    export_file([device_from_dict(good(f"d-{i}")) for i in range(4)], path)
    text = path.read_text(encoding="utf-8")
    cut = tmp_path / "cut.csv"
    cut.write_text(text[: text.rindex("\n", 0, len(text) - 1) + 12], encoding="utf-8")
    report = import_file(repo, cut)
    [rejection] = report.rejected
    assert rejection.where == "line 5" and rejection.field == "(row)" and "truncated" in rejection.message
    assert repo.count() == 0


def test_unterminated_csv_quote_is_reported(repo, tmp_path):
    path = tmp_path / "q.csv"
    path.write_text('id,name,vendor,kind,notes\na,A,Acme,gpu,"half a no', encoding="utf-8")
    report = import_file(repo, path)
    assert report.rejected and "truncated" in report.rejected[0].message


def test_yaml_is_read_with_the_safe_loader(repo, tmp_path):
    path = tmp_path / "evil.yaml"
    path.write_text("!!python/object/apply:os.system ['echo owned']\n", encoding="utf-8")
    with pytest.raises(ImportFileError, match="invalid YAML"):
        import_file(repo, path)


def test_empty_and_unknown_files(repo, tmp_path):
    (tmp_path / "empty.json").write_text("  \n", encoding="utf-8")
    with pytest.raises(ImportFileError, match="empty"):
        import_file(repo, tmp_path / "empty.json")
    with pytest.raises(ImportFileError, match="cannot tell the format"):
        import_file(repo, tmp_path / "devices.txt")
    with pytest.raises(ImportFileError, match="cannot read"):
        import_file(repo, tmp_path / "missing.yaml")


def test_existing_ids_need_replace(repo, tmp_path):
    repo.add(device_from_dict(good("a")))
    path = write(tmp_path, "in.json", [good("a", name="Renamed"), good("b")])
    report = import_file(repo, path)
    assert [(r.device, r.field) for r in report.rejected] == [("a", "id")]
    assert "--replace" in report.rejected[0].message and repo.count() == 1
    dry = import_file(repo, path, replace=True, dry_run=True)
    assert dry.ok and not dry.committed and dry.added == ("b",) and dry.replaced == ("a",)
    assert repo.get("a").name == "Device a"
    done = import_file(repo, path, replace=True)
    assert done.committed and done.added == ("b",) and done.replaced == ("a",)
    assert repo.get("a").name == "Renamed" and repo.record("a").version == 2


def test_a_single_device_file_and_a_plain_list_import(repo, tmp_path):
    (tmp_path / "one.yaml").write_text(yaml.safe_dump(good("solo")), encoding="utf-8")
    (tmp_path / "list.json").write_text(json.dumps([good("l1"), good("l2")]), encoding="utf-8")
    assert import_file(repo, tmp_path / "one.yaml").added == ("solo",)
    assert import_file(repo, tmp_path / "list.json").added == ("l1", "l2")


def test_a_failure_during_the_write_leaves_nothing_behind(repo, tmp_path, monkeypatch):
    path = write(tmp_path, "in.yaml", [good("a"), good("b")])

    def explode(conn, devices):
        raise RuntimeError("disk full")

    monkeypatch.setattr(repository_module, "_insert_children", explode)
    with pytest.raises(RuntimeError, match="disk full"):
        import_file(repo, path)
    monkeypatch.undo()
    assert repo.count() == 0
    assert import_file(repo, path).committed and repo.count() == 2


def test_shipped_devices_round_trip_through_csv_cells():
    from explorer.store.csv_columns import devices_to_csv, read_csv

    shipped = load_shipped_devices()
    entries, header = read_csv(devices_to_csv([device_to_dict(d) for d in shipped]))
    assert header == []
    assert [device_to_dict(device_from_dict(data)) for _, data, _ in entries] == [
        device_to_dict(d) for d in shipped
    ]
