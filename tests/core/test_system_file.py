"""System files (issue 18): round trips, the curated catalog, and every bad input as one line naming its field."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest
import yaml

from explorer.core.hardware.catalog_files import load_shipped_systems, validate_catalog, validate_systems
from explorer.core.hardware.system_file import (
    SystemFileError,
    dump_system_yaml,
    load_system_file,
    save_system_file,
    system_from_dict,
    system_to_dict,
)

ROOT = Path(__file__).resolve().parents[2]
SYSTEMS = ROOT / "catalog" / "systems"

HGX = {
    "format": 1, "id": "hgx", "name": "HGX H100", "vendor": "NVIDIA", "kind": "node",
    "device": "nvidia-h100-sxm5", "devices": 8,
    "sources": {"s": {"title": "t", "url": "https://example.com", "date": "2026-11-25"}},
    "domains": [
        {"name": "NVLink 4", "scope": "scale_up", "size": 8, "topology": "switched",
         "bandwidth": {"value": "900 GB/s", "source": "s"}, "direction": "bidirectional",
         "latency": {"value": "3 us", "source": "s"}},
        {"name": "IB NDR", "scope": "scale_out", "size": 8, "topology": "switched",
         "bandwidth": {"value": "400 Gbit/s", "source": "s"}, "direction": "per_direction",
         "oversubscription": 2},
    ],
    "host_link": {"name": "PCIe Gen5 x16", "bandwidth": {"value": "128 GB/s", "source": "s"},
                  "direction": "bidirectional"},
    "host_memory": {"value": "2 TB", "source": "s"},
    "notes": "n",
    "conflicts": [{"field": "domains[0].bandwidth", "note": "c"}],
}


def _write(tmp_path: Path, doc, name="hgx.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc) if name.endswith(".yaml") else json.dumps(doc))
    return path


def test_reads_the_figures_in_si_per_direction_and_per_device(tmp_path):
    system = load_system_file(_write(tmp_path, HGX), require_sources=True)
    nvlink, ib = system.domains
    assert system.devices == 8 and system.node_devices == 8 and system.nodes == 1
    assert nvlink.link.bandwidth.value == 900e9 and nvlink.link.per_direction_bandwidth == 450e9
    assert system.bandwidth(nvlink) == 450e9
    assert nvlink.alpha == pytest.approx(3e-6)
    assert ib.link.bandwidth.value == 50e9 and system.bandwidth(ib) == 25e9  # 400 Gbit/s per direction, 2:1
    assert system.host_bandwidth() == 64e9 and system.host_memory.value == 2e12
    assert system.domain_for(8) is nvlink and system.domain_for(16) is None
    assert system.conflicts[0].field == "domains[0].bandwidth"


def test_per_node_bandwidth_is_shared_by_the_node_devices():
    doc = copy.deepcopy(HGX)
    doc["devices"], doc["node_devices"] = 16, 8
    doc["domains"][0]["size"] = 4
    doc["domains"][1].update(size=16, per="node", bandwidth="3.2 Tbit/s")
    doc["domains"][1].pop("oversubscription")
    system = system_from_dict(doc)
    assert system.node_devices == 8 and system.nodes == 2
    assert system.bandwidth(system.domains[1]) == 50e9  # 400 GB/s per node over 8 devices


@pytest.mark.parametrize("name", ["hgx.yaml", "hgx.json"])
def test_round_trip_through_a_file_keeps_every_field(tmp_path, name):
    system = system_from_dict(HGX)
    path = tmp_path / name
    save_system_file(system, path)
    again = load_system_file(path)
    assert again == system
    assert system_to_dict(again) == system_to_dict(system)
    assert system_to_dict(system)["domains"][0]["bandwidth"] == {"value": "900 GB/s", "source": "s"}
    assert not list(tmp_path.glob(".*.tmp"))  # written atomically, nothing left beside it


def test_every_curated_system_round_trips_and_is_valid():
    devices = {d.id for d in validate_catalog().devices}
    report = validate_systems(SYSTEMS, devices)
    assert report.ok, report.problems
    assert report.files == len(report.systems) >= 11
    for system in report.systems:
        assert system.device_id in devices
        assert system_from_dict(yaml.safe_load(dump_system_yaml(system))) == system
        for domain in system.domains:  # every stated figure cites a key of the file's sources
            assert domain.link.bandwidth is None or domain.link.bandwidth.source in system.sources


def test_the_curated_figures():
    s = {x.id: x for x in load_shipped_systems()}
    assert all(x.origin == "shipped" for x in s.values())
    per_dir = {k: s[k].bandwidth(s[k].domains[0]) / 1e9 for k in s}
    assert per_dir["nvidia-hgx-a100-8gpu"] == 300  # 600 GB/s bidirectional
    assert per_dir["nvidia-dgx-h100"] == per_dir["nvidia-dgx-h200"] == 450
    assert per_dir["nvidia-dgx-b200"] == per_dir["nvidia-gb200-nvl72"] == 900
    assert per_dir["pcie-server-8x-nvidia-l40s"] == per_dir["pcie-server-4x-nvidia-l4"] == 32
    assert per_dir["google-tpu-v5p-128-slice"] == 600 and per_dir["google-tpu-v5e-256-pod"] == 200
    assert per_dir["amd-instinct-mi300x-platform"] == 448 and per_dir["intel-gaudi3-hls3"] == 525
    assert s["nvidia-dgx-h100"].bandwidth(s["nvidia-dgx-h100"].scale_out) == 50e9  # 400 Gb/s per GPU
    assert s["intel-gaudi3-hls3"].bandwidth(s["intel-gaudi3-hls3"].scale_out) == 75e9
    v5e = s["google-tpu-v5e-256-pod"]
    assert v5e.bandwidth(v5e.scale_out) == 200e9 / 8 / 8  # 200 Gbit/s per 8-chip host
    nvl = s["nvidia-gb200-nvl72"]
    assert nvl.devices == 72 and nvl.domains[0].size == 72 and nvl.nodes == 18 and nvl.host_bandwidth() == 450e9
    assert nvl.scale_out is None and math.isnan(s["amd-instinct-mi300x-platform"].host_bandwidth())


def _mutated(**changes):
    doc = copy.deepcopy(HGX)
    for path, value in changes.items():
        node = doc
        *head, last = path.split("__")
        for step in head:
            node = node[int(step)] if step.isdigit() else node[step]
        if value is KeyError:
            del node[int(last) if last.isdigit() else last]
        else:
            node[int(last) if last.isdigit() else last] = value
    return doc


BAD = [  # (change, field named, words of the message)
    ({"domains__0__bandwidth": "450 GB"}, "domains[0].bandwidth", "not a bandwidth"),
    ({"domains__0__bandwidth": "3 us"}, "domains[0].bandwidth", "not a bandwidth"),
    ({"domains__1__bandwidth": {"value": "400", "source": "s"}}, "domains[1].bandwidth", "no unit"),
    ({"domains__0__latency": "3 GB/s"}, "domains[0].latency", "not a time"),
    ({"domains__0__direction": KeyError}, "domains[0].direction", "is required"),
    ({"domains__0__direction": "both"}, "domains[0].direction", "not one of"),
    ({"domains": []}, "domains", "needs at least one domain"),
    ({"domains": KeyError}, "domains", "needs at least one domain"),
    ({"domains__0__size": 3}, "domains[0].size", "does not divide"),
    ({"domains__1__size": 4}, "domains[1].size", "not a multiple of the inner"),
    ({"devices": 16}, "domains[1].size", "a level is missing"),
    ({"domains__0__size": 0}, "domains[0].size", "whole number"),
    ({"domains__0__size": 8.5}, "domains[0].size", "whole number"),
    ({"domains__0__scope": "scale_sideways"}, "domains[0].scope", "not one of"),
    ({"domains__0__topology": "hypercube"}, "domains[0].topology", "not one of"),
    ({"domains__0__per": "rack"}, "domains[0].per", "not one of"),
    ({"domains__1__oversubscription": 0.5}, "domains[1].oversubscription", ">= 1"),
    ({"domains__0__speed": 1}, "domains[0]", "unknown keys"),
    ({"domains__0__bandwidth": {"value": "900 GB/s", "source": "nope"}}, "domains[0].bandwidth.source", "not a key"),
    ({"devices": "eight"}, "devices", "whole number"),
    ({"devices": KeyError}, "devices", "is required"),
    ({"node_devices": 3}, "node_devices", "does not divide"),
    ({"kind": "pod"}, "kind", "not one of"),
    ({"device": KeyError}, "device", "is required"),
    ({"host_link__bandwidth": "128 GB"}, "host_link.bandwidth", "not a bandwidth"),
    ({"host_link__direction": KeyError}, "host_link.direction", "is required"),
    ({"host_memory": "2 TB/s"}, "host_memory", "not a byte count"),
    ({"format": 2}, "format", "reads format 1"),
    ({"colour": "green"}, "(top level)", "unknown keys"),
]


@pytest.mark.parametrize("change, field, words", BAD, ids=[f for _, f, _ in BAD])
def test_bad_input_is_one_line_naming_the_field(tmp_path, change, field, words):
    path = _write(tmp_path, _mutated(**change))
    with pytest.raises(SystemFileError) as info:
        load_system_file(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith("hgx.yaml: hgx: ")
    first = info.value.problems[0]
    assert f": {field}: " in first and words in first, first


def test_a_bandwidth_in_bytes_reads_as_the_issue_asks(tmp_path):
    path = _write(tmp_path, _mutated(domains__0__bandwidth="450 GB"))
    with pytest.raises(SystemFileError, match=r"^hgx\.yaml: hgx: domains\[0\]\.bandwidth: '450 GB' is a byte count"):
        load_system_file(path)


def test_unreadable_files_are_one_line(tmp_path):
    bad = tmp_path / "s.yaml"
    bad.write_text("id: [unclosed")
    with pytest.raises(SystemFileError, match="line 1: invalid YAML"):
        load_system_file(bad)
    with pytest.raises(SystemFileError, match="cannot read"):
        load_system_file(tmp_path / "missing.yaml")
    bad.write_bytes(b"\xff\xfe id")
    with pytest.raises(SystemFileError, match="not UTF-8"):
        load_system_file(bad)
    bad.write_text("- 1\n- 2\n")
    with pytest.raises(SystemFileError, match=r"\(file\): expected a mapping"):
        load_system_file(bad)


def test_catalog_validation_names_a_missing_device_and_a_misnamed_file(tmp_path):
    doc = _mutated(device="nvidia-h900")
    _write(tmp_path, doc, "other-name.yaml")
    report = validate_systems(tmp_path, {"nvidia-h100-sxm5"})
    assert not report.systems and report.files == 1
    assert any("device: 'nvidia-h900' is not a valid device" in p for p in report.problems)
    assert any("id: the file should be named hgx.yaml" in p for p in report.problems)
    assert validate_systems(tmp_path / "absent").files == 0


def test_a_curated_file_must_cite_every_figure():
    doc = _mutated(domains__0__bandwidth="900 GB/s")
    with pytest.raises(SystemFileError, match=r"domains\[0\]\.bandwidth: has no source"):
        system_from_dict(doc, "hgx.yaml", require_sources=True)
    assert system_from_dict(doc).domains[0].link.bandwidth.source is None  # user files may leave it out


def test_a_line_break_in_a_value_keeps_the_message_one_line():
    """Found by the fuzz: an id of '\\n' passed the id pattern's '$' and broke the one-line message."""
    with pytest.raises(SystemFileError) as info:
        system_from_dict(_mutated(id="hgx\n"), "s.json")
    assert "\n" not in str(info.value) and "id: 'hgx\\n' must be lowercase" in str(info.value)
