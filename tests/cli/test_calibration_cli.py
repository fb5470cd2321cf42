"""analyze --model ideal|calibrated and the calibrated times in the JSON (docs/cli.md), by hand."""

import json

import pytest

from explorer.__main__ import main

BASE = """format: 1
id: {id}
name: Test GPU
vendor: test
kind: gpu
peak: {{fp16: 312 TFLOP/s, bf16: 312 TFLOP/s}}
memory:
  - {{name: HBM, role: offchip, capacity: 80 GB, bandwidth: 2039 GB/s}}
"""
CALIBRATION = """calibration:
  matrix:
    fp16: {fraction: 0.5, latency: 10 us, sharpness: 1}
  vector: {fraction: 0.5, latency: 2 us, sharpness: 1}
"""
MODEL = {"format": 1, "name": "dense", "input": {"features": 2048},
         "layers": [{"kind": "dense", "name": "fc", "in_features": 2048, "out_features": 2048, "bias": False},
                    {"kind": "relu", "name": "act"}]}


@pytest.fixture
def files(tmp_path):
    (tmp_path / "cal.yaml").write_text(BASE.format(id="cal") + CALIBRATION)
    (tmp_path / "plain.yaml").write_text(BASE.format(id="plain"))
    (tmp_path / "m.json").write_text(json.dumps(MODEL))
    return tmp_path


def run(capsys, *args):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    assert code == 0, out.err
    return out.out


def test_json_carries_both_times(files, capsys):
    data = json.loads(run(capsys, "analyze", files / "m.json", "-d", files / "cal.yaml", "-d", files / "plain.yaml",
                          "--batch", "32", "--json"))
    assert data["assumptions"]["model"] == "ideal"
    cal, plain = data["results"]
    fc, act = cal["layers"]
    # fc: 32 x 2048 x 2048 fp16; bytes = weights 8,388,608 + input 131,072 + output 131,072 = 8,650,752 B.
    # work = max(268,435,456 FLOP / (312 TFLOP/s x 0.5), 8,650,752 B / (2039 GB/s x 0.5)) = 8.48529 us (memory);
    # p = 1: + 10 us latency
    assert fc["bytes"] == 8650752
    assert fc["calibrated_time_s"] == pytest.approx(10e-6 + 8650752 / 1019.5e9, rel=1e-9)
    # relu: 65,536 elements read and written, 262,144 B at 1019.5 GB/s, + 2 us
    assert act["calibrated_time_s"] == pytest.approx(2e-6 + 262144 / 1019.5e9, rel=1e-9)
    assert fc["calibrated"] and act["calibrated"]
    assert cal["totals"]["calibrated_time_s"] == pytest.approx(fc["calibrated_time_s"] + act["calibrated_time_s"])
    assert cal["calibration"].startswith("calibrated (matrix: no source; vector: no source)")
    # the ideal model is the same with or without a calibration; without one the calibrated time is the ideal
    for a, b in zip(cal["layers"], plain["layers"]):
        assert a["time_s"] == b["time_s"] and b["calibrated_time_s"] == b["time_s"] and not b["calibrated"]
    assert plain["calibration"].startswith("none")
    assert plain["totals"]["calibrated_time_s"] == plain["totals"]["time_s"]


def test_text_shows_the_chosen_model(files, capsys):
    ideal = run(capsys, "analyze", files / "m.json", "-d", files / "cal.yaml", "--batch", "32")
    assert "calibrat" not in ideal
    out = run(capsys, "analyze", files / "m.json", "-d", files / "cal.yaml", "-d", files / "plain.yaml",
              "--batch", "32", "--model", "calibrated")
    assert "calibrated model)" in out.splitlines()[0]
    assert "-- total: time 20.74 µs calibrated (ideal model 4.371 µs" in out
    assert "-- calibration: calibrated (matrix: no source; vector: no source)" in out
    assert "-- calibration: none: no calibration for this device and precision, ideal model (* = " in out
    assert "*" in out.split("== Test GPU [plain]")[1].splitlines()[3]


def test_a_matrix_curve_at_another_precision_is_not_used(files, capsys):
    data = json.loads(run(capsys, "analyze", files / "m.json", "-d", files / "cal.yaml", "--precision", "bf16",
                          "--json"))
    # the curve is for fp16 only (no `also: [bf16]`): bf16 matrix work stays at the ideal model; vector work is
    # calibrated at every precision
    fc = data["results"][0]["layers"][0]
    assert fc["calibrated"] is False and data["results"][0]["layers"][1]["calibrated"] is True
    assert data["results"][0]["calibration"].startswith("partly calibrated (vector: no source); matrix work")
