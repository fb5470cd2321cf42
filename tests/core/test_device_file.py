import json

import pytest
import yaml

from explorer.core.hardware.catalog_files import validate_catalog
from explorer.core.hardware.device_file import (
    DeviceFileError,
    device_from_dict,
    device_to_dict,
    dump_device_yaml,
    load_device_file,
)

SOURCED = {
    "format": 1, "id": "acme-x1", "name": "Acme X1", "vendor": "Acme", "kind": "npu", "tier": "edge",
    "sources": {"ds": {"title": "Acme X1 datasheet", "url": "https://example.com/x1.pdf", "date": "2026-11-22"}},
    "peak": {"int8": {"value": "26 TOP/s", "source": "ds"}},
    "peak_sparse": {"int8": {"value": "52 TOP/s", "source": "ds"}},
    "memory": [{"name": "LPDDR5", "role": "offchip", "capacity": {"value": "8 GiB", "source": "ds"},
                "bandwidth": {"value": "68 GB/s", "source": "ds"}},
               {"name": "SRAM", "role": "onchip", "capacity": {"value": "4 MiB", "source": "ds"}, "instances": 2}],
    "matrix_engine": {"type": "systolic", "rows": {"value": 32, "source": "ds"}, "cols": {"value": 32, "source": "ds"},
                      "dataflow": "os"},
    "tdp": {"value": "10 W", "source": "ds"},
    "price": {"value": "199 USD", "source": "ds", "date": "2025-01"},
    "host_link": {"name": "PCIe Gen4 x4", "bandwidth": {"value": "8 GB/s", "source": "ds"}, "direction": "per_direction"},
}


def test_round_trip_keeps_vendor_text_and_sources():
    device = device_from_dict(SOURCED, require_sources=True)
    assert device_to_dict(device) == SOURCED
    assert device.memory[0].capacity.value == 8 * 2**30  # GiB as stated, normalized to bytes
    assert device.peak_flops("int8") == 26e12 and device.peak_flops("int8", sparse=True) == 52e12
    assert device.source_of(device.tdp).title == "Acme X1 datasheet"
    assert device_from_dict(yaml.safe_load(dump_device_yaml(device))) == device


def test_json_and_yaml_files(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps(SOURCED))
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(SOURCED))
    assert load_device_file(tmp_path / "a.json") == load_device_file(tmp_path / "a.yaml")


@pytest.mark.parametrize("patch, fragment", [
    ({"memory": [{"name": "HBM", "bandwidth": "3.35 kg"}]}, "acme-x1: memory[0].bandwidth: '3.35 kg'"),
    ({"peak": {"fp12": "1 TFLOP/s"}}, "peak.fp12: unknown precision"),
    ({"kind": "fpga"}, "kind: 'fpga' is not one of"),
    ({"tdp": {"value": "10 W", "source": "nope"}}, "tdp.source: 'nope' is not a key of 'sources'"),
    ({"tdp": "-5 W"}, "tdp: '-5 W' is outside the plausible range"),
    ({"matrix_engine": {"type": "systolic", "rows": 0, "cols": 8}}, "matrix_engine.rows: expected a positive"),
    ({"efficiency": {"compute": 1.5}}, "efficiency.compute: expected a number in (0, 1]"),
    ({"id": "Bad Id"}, "id: 'Bad Id' must be lowercase"),
    ({"format": 2}, "format: this version reads format 1"),
])
def test_problems_name_device_and_field(patch, fragment):
    data = {**SOURCED, **patch}
    with pytest.raises(DeviceFileError) as err:
        device_from_dict(data, "x1.yaml")
    assert fragment in str(err.value)
    assert str(err.value).startswith("x1.yaml: ") or "problems" in str(err.value)


def test_missing_fields_and_sources_all_reported():
    data = {k: v for k, v in SOURCED.items() if k not in ("name", "vendor")}
    data["clock"] = "1 GHz"
    with pytest.raises(DeviceFileError) as err:
        device_from_dict(data, "x1.yaml", require_sources=True)
    problems = err.value.problems
    assert "x1.yaml: acme-x1: name: is required" in problems
    assert "x1.yaml: acme-x1: vendor: is required" in problems
    assert any("clock: has no source" in p for p in problems)


def test_syntax_errors_name_the_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: x\nname: [unclosed\nvendor: v\n")
    with pytest.raises(DeviceFileError, match=r"bad.yaml: line \d+: invalid YAML"):
        load_device_file(bad)
    truncated = tmp_path / "t.json"
    truncated.write_text(json.dumps(SOURCED)[:100])
    with pytest.raises(DeviceFileError, match=r"t.json: line 1: invalid JSON"):
        load_device_file(truncated)


def test_shipped_catalog_is_valid_and_sourced():
    report = validate_catalog()
    assert report.problems == ()
    assert len(report.devices) >= 40
    ids = {d.id for d in report.devices}
    for must in ("nvidia-v100-sxm2", "nvidia-a100-sxm4-80gb", "nvidia-h100-sxm5", "google-tpu-v4"):
        assert must in ids
    assert any(d.tier == "edge" and d.kind in ("npu", "gpu") for d in report.devices)


def test_every_numeric_field_of_the_catalog_cites_a_source():
    """validate_catalog requires a source on every figure; prove it by counting cited figures."""
    report = validate_catalog()
    for d in report.devices:
        cited = [*d.peak.values(), *d.peak_sparse.values(), *d.energy_per_mac.values()]
        cited += [c for lv in d.memory for c in (lv.capacity, lv.bandwidth, lv.energy, lv.latency) if c]
        cited += [c for c in (d.clock, d.tdp, d.price, d.cloud_price) if c]
        assert all(c.source in d.sources for c in cited), d.id


def test_duplicate_ids_and_misnamed_files(tmp_path):
    text = yaml.safe_dump(SOURCED)
    (tmp_path / "acme-x1.yaml").write_text(text)
    (tmp_path / "copy.yaml").write_text(text)
    report = validate_catalog(tmp_path)
    assert any("copy.yaml: acme-x1: id: duplicate" in p for p in report.problems)


@pytest.mark.parametrize("name", ["", "   ", "\t\n"])
def test_an_empty_required_name_is_refused(name):
    """Issue 24: a device whose required name was empty (or blank) was accepted."""
    with pytest.raises(DeviceFileError) as err:
        device_from_dict({**SOURCED, "name": name}, "x1.yaml")
    assert str(err.value) == "x1.yaml: acme-x1: name: is required (it is empty)"
    with pytest.raises(DeviceFileError, match=r"memory\[0\]\.name: is required \(it is empty\)"):
        device_from_dict({**SOURCED, "memory": [{**SOURCED["memory"][0], "name": name}]}, "x1.yaml")


@pytest.mark.parametrize("breaker", ["\x85", "\u2028", "\u2029", "\x0b", "\x1c"])
def test_an_id_holding_a_unicode_line_break_keeps_the_problem_on_one_line(breaker):
    """The fuzz found an id of NEL (U+0085): blank, so refused, but str.splitlines() broke the problem line at it.
    Every character splitlines breaks at is written as an escape."""
    with pytest.raises(DeviceFileError) as err:
        device_from_dict({**SOURCED, "id": breaker}, "x1.yaml")
    assert all(len(p.splitlines()) == 1 for p in err.value.problems)
    assert err.value.problems[0].startswith("x1.yaml: ")


def test_several_problems_start_with_one_line_naming_the_file_and_the_first(tmp_path, capsys):
    """Issue 24: a file with several problems began with '3 problems:'; its first line now names the file and the
    first problem, the whole list kept below it, and the command line exits 2."""
    from explorer.__main__ import main

    path = tmp_path / "x1.yaml"
    path.write_text(yaml.safe_dump({**SOURCED, "name": " ", "kind": "fpga", "tdp": "-5 W"}))
    with pytest.raises(DeviceFileError) as err:
        load_device_file(path)
    first, *rest = str(err.value).splitlines()
    assert first == f"{path}: acme-x1: name: is required (it is empty) (1 of 3 problems, all listed below)"
    assert [line.strip() for line in rest] == err.value.problems and len(rest) == 3
    assert main(["analyze", "gpt2", "--device", str(path)]) == 2
    out = capsys.readouterr().err.splitlines()
    assert out[0] == f"hwexplorer: error: --device {path}: {first}"
    assert "kind: 'fpga' is not one of" in out[2] and "tdp: '-5 W' is outside" in out[3]
