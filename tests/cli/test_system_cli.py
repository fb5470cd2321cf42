"""``hwexplorer catalog list --systems`` (the systems seeded into the catalog database) and ``catalog validate``
over the system files (issue 18)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from explorer.__main__ import main

ROOT = Path(__file__).resolve().parents[2]


def test_list_systems_shows_per_direction_bandwidth_per_device(capsys):
    assert main(["catalog", "list", "--systems"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "SCALE-UP (GB/s/dir)" in out[0] and "SCALE-OUT (GB/s/dir)" in out[0]
    row = next(line.split() for line in out if line.startswith("nvidia-dgx-h100 "))
    assert row[-6:] == ["nvidia-h100-sxm5", "x", "8", "450", "50", "shipped"]  # 900 GB/s bidirectional; 400 Gb/s
    l40s = next(line for line in out if line.startswith("pcie-server-8x-nvidia-l40s "))
    assert " 32 " in l40s and "none stated" in l40s
    assert out[-1].startswith("11 system(s); GB/s = 10^9 B/s per device and per direction")


def test_list_systems_json_in_si_units_and_filtered(capsys):
    assert main(["catalog", "list", "--systems", "--vendor", "Intel", "--json"]) == 0
    (gaudi,) = json.loads(capsys.readouterr().out)
    assert gaudi["id"] == "intel-gaudi3-hls3" and gaudi["devices"] == 8
    assert gaudi["scale_up"]["bandwidth_byte_per_s_per_direction_per_device"] == 525e9
    assert gaudi["scale_out"]["bandwidth_byte_per_s_per_direction_per_device"] == 75e9
    assert gaudi["scale_up"]["latency_s"] is None and gaudi["host_link_byte_per_s_per_direction"] == 64e9
    assert main(["catalog", "list", "--systems", "nvl72", "--json"]) == 0
    assert [s["id"] for s in json.loads(capsys.readouterr().out)] == ["nvidia-gb200-nvl72"]


def test_a_device_filter_with_systems_is_one_line_exit_2(capsys):
    assert main(["catalog", "list", "--systems", "--min-peak", "100 TFLOP/s"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--min-peak: filters devices, not systems" in err


def test_validate_counts_the_systems(capsys):
    assert main(["catalog", "validate", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["system_files"] == report["valid_systems"] == 11 and report["problems"] == []


def test_validate_reports_a_bad_system_file_by_field(tmp_path, capsys):
    folder = tmp_path / "catalog"
    folder.mkdir()
    shutil.copy(ROOT / "catalog" / "nvidia-h100-sxm5.yaml", folder)
    (folder / "systems").mkdir()
    doc = yaml.safe_load((ROOT / "catalog" / "systems" / "nvidia-dgx-h100.yaml").read_text())
    doc["domains"][0]["bandwidth"]["value"] = "900 GB"
    (folder / "systems" / "nvidia-dgx-h100.yaml").write_text(yaml.safe_dump(doc))
    assert main(["catalog", "validate", str(folder)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ("systems/nvidia-dgx-h100.yaml: nvidia-dgx-h100: domains[0].bandwidth: '900 GB' is a byte "
                      "count, not a bandwidth (expected units like '3.35 TB/s')")
    assert out[-1] == "1 file(s), 1 valid device(s), 1 system file(s), 0 valid system(s), 1 problem(s)"
