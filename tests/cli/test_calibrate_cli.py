"""``calibrate link`` and ``calibrate kernels`` (docs/cli.md, docs/calibration.md)."""

import csv
import json
from pathlib import Path

import pytest

from explorer.__main__ import main
from explorer.core.analysis.calibration_fit import kernel_times
from explorer.core.calibration.measurements import Measurement
from explorer.core.hardware.device_file import load_device_file

FIXTURE = Path(__file__).parents[1] / "fixtures" / "nccl" / "mi300x-8gpu-all_reduce_perf.txt"
SYSTEM = Path(__file__).parents[2] / "catalog" / "systems" / "amd-instinct-mi300x-platform.yaml"
DEVICE = """format: 1
id: {id}
name: Test GPU
vendor: test
kind: gpu
peak: {{fp16: 312 TFLOP/s, bf16: 312 TFLOP/s}}
memory:
  - {{name: HBM, role: offchip, capacity: 80 GB, bandwidth: 2039 GB/s}}
"""
CURVES = """calibration:
  matrix:
    fp16: {fraction: 0.6, latency: 8 us, sharpness: 1.5}
  vector: {fraction: 0.8, latency: 3 us, sharpness: 2}
"""


def run(capsys, *args, code=0):
    rc = main([str(a) for a in args])
    out = capsys.readouterr()
    assert rc == code, out.err
    return out


def test_link_fit_text_and_json(capsys):
    text = run(capsys, "calibrate", "link", FIXTURE, "--system", SYSTEM, "--min-size", "1 MiB").out
    assert "all_reduce on 8 ranks (float), ring model, amd-instinct-mi300x-platform scale-up" in text
    assert "alpha 1.836 us per step, bandwidth 297.8 GB/s per direction (66 % of the stated 448 GB/s)" in text
    assert "7.1 % at 1 MiB and above (worst 20.6 %)" in text
    data = json.loads(run(capsys, "calibrate", "link", FIXTURE, "--system", SYSTEM, "--min-size", "1MiB",
                          "--json").out)
    assert (data["op"], data["ranks"], data["level"], len(data["rows"])) == ("all_reduce", 8, "scale-up", 14)
    assert data["bandwidth_Bps"] == pytest.approx(297.8e9, rel=0.002)
    assert data["stated"]["bandwidth_Bps"] == pytest.approx(448e9) and data["stated"]["alpha_s"] == pytest.approx(8e-7)
    assert data["mape_above_1MiB"] == pytest.approx(0.0711, abs=0.001)
    row = data["rows"][-1]
    assert row["size_B"] == 8 * 2**30 and row["measured_s"] == pytest.approx(47617e-6)
    assert row["error"] == pytest.approx(row["busbw_predicted_Bps"] / row["busbw_measured_Bps"] - 1)


@pytest.mark.parametrize("args, message", [
    (["calibrate", "link", "absent.txt", "--system", SYSTEM], "FILE: no such file"),
    (["calibrate", "link", FIXTURE, "--system", SYSTEM, "--min-size", "1 GHz"], "--min-size"),
    (["calibrate", "link", FIXTURE, "--system", SYSTEM, "--min-size", "-1 MiB"], "--min-size: expected a size >= 0"),
    (["calibrate", "link", FIXTURE, "--system", SYSTEM, "--level", "scale-out"], "--level: amd-instinct-mi300x"),
    (["calibrate", "link", FIXTURE, "--system", SYSTEM, "--op", "all_gather"], "op: busbw / algbw is 1.750"),
    (["calibrate", "link", FIXTURE, "--system", SYSTEM, "--min-size", "4 GiB"], "size: a fit needs at least 3"),
    (["calibrate", "link", SYSTEM, "--system", SYSTEM], "amd-instinct-mi300x-platform.yaml"),
    (["calibrate", "link", FIXTURE, "--system", "no-such-system"], "--system: unknown system"),
])
def test_link_bad_input_is_one_line_and_exit_2(capsys, args, message):
    err = run(capsys, *args, code=2).err
    assert err.startswith("hwexplorer: error: ") and message in err and err.count("\n") == 1


def _synthetic_csv(tmp_path) -> Path:
    """Kernel times made by a known calibration (the analysis pass's calibrated time on a device that has it)."""
    (tmp_path / "truth.yaml").write_text(DEVICE.format(id="truth") + CURVES)
    truth = load_device_file(tmp_path / "truth.yaml")
    rows = [Measurement("truth", "s", "gemm", "mm", "fp16", b, m, n, k, 0, 0, "", 1.0, "calibration")
            for b, m, n, k in [(1, 256, 256, 256), (1, 512, 512, 512), (1, 1024, 1024, 1024), (4, 1024, 1024, 512),
                               (1, 2048, 2048, 2048), (1, 4096, 4096, 4096), (2, 4096, 8192, 4096),
                               (1, 8192, 8192, 8192)]]
    rows += [Measurement("truth", "s", "elementwise", "copy", "fp16", 1, 0, 0, 0, 0, float(nb), "", 1.0,
                         "calibration") for nb in (2**16, 2**18, 2**20, 2**22, 2**24, 2**26, 2**28, 2**30)]
    t = kernel_times(rows, truth, "fp16")
    path = tmp_path / "kernels.csv"
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["kind", "batch", "m", "n", "k", "bytes", "time"])
        for r, s in zip(rows, t.calibrated):
            w.writerow([r.kind, r.batch, r.m or "", r.n or "", r.k or "", int(r.bytes) if r.kind == "elementwise"
                        else "", f"{s * 1e6:.6f} us"])
    return path


def test_kernels_fit_recovers_the_curve_that_made_the_times(capsys, tmp_path):
    path = _synthetic_csv(tmp_path)
    (tmp_path / "plain.yaml").write_text(DEVICE.format(id="plain"))
    data = json.loads(run(capsys, "calibrate", "kernels", path, "--device", tmp_path / "plain.yaml", "--precision",
                          "fp16", "--json").out)
    matrix, vector = data["curves"]["matrix"], data["curves"]["vector"]
    assert matrix["fraction"] == pytest.approx(0.6, rel=1e-3) and matrix["latency_s"] == pytest.approx(8e-6, rel=1e-3)
    assert vector["fraction"] == pytest.approx(0.8, rel=1e-3) and vector["latency_s"] == pytest.approx(3e-6, rel=1e-3)
    assert matrix["mape"] < 1e-4 and vector["mape"] < 1e-4 and matrix["points"] == 8
    assert data["saved"] is False and data["source"] == "fit-kernels"
    text = run(capsys, "calibrate", "kernels", path, "--device", tmp_path / "plain.yaml", "--precision", "fp16").out
    assert "matrix: fraction 0.600, latency 8.00 us" in text and "1x256x256x256" in text and "not saved" in text


def test_kernels_save_writes_the_calibration_with_its_provenance(capsys, tmp_path):
    path = _synthetic_csv(tmp_path)
    db = f"sqlite:///{tmp_path / 'catalog.db'}"
    run(capsys, "--db", db, "calibrate", "kernels", path, "--device", "nvidia-a100-sxm4-40gb", "--precision", "fp16",
        "--save")
    from explorer.store.engine import open_catalog

    with open_catalog(db) as repo:
        device = repo.get("nvidia-a100-sxm4-40gb")
    curve = device.calibration.matrix["fp16"]
    assert curve.source == "fit-kernels" and curve.fit.data == str(path) and curve.fit.points == 8
    assert device.sources["fit-kernels"].url == path.resolve().as_uri() and device.sources["fit-kernels"].date
    err = run(capsys, "calibrate", "kernels", path, "--device", tmp_path / "nope.yaml", "--save", code=2).err
    assert "no such file" in err


@pytest.mark.parametrize("body, message", [
    ("kind,m,n,k\ngemm,1,1,1\n", "missing column time"),
    ("kind,m,n,k,time\nconv,1,1,1,1e-5\n", "line 2: kind: expected gemm or elementwise"),
    ("kind,m,n,k,time\ngemm,0,1,1,1e-5\n", "line 2: m: expected a whole number > 0"),
    ("kind,m,n,k,time\ngemm,8,8,8,-1\n", "line 2: time: expected a positive time"),
    ("kind,m,n,k,time\ngemm,8,8,8,3 GB\n", "time"),
    ("kind,bytes,time\nelementwise,,1e-5\n", "line 2: bytes"),
    ("kind,time\n", "no kernels"),
])
def test_kernels_bad_csv_is_one_line_and_exit_2(capsys, tmp_path, body, message):
    (tmp_path / "plain.yaml").write_text(DEVICE.format(id="plain"))
    (tmp_path / "k.csv").write_text(body)
    err = run(capsys, "calibrate", "kernels", tmp_path / "k.csv", "--device", tmp_path / "plain.yaml", code=2).err
    assert err.startswith("hwexplorer: error: ") and message in err and err.count("\n") == 1


def test_link_save_into_a_system_file_round_trips(capsys, tmp_path):
    from explorer.core.hardware.system_file import load_system_file

    path = tmp_path / "mi300x.yaml"
    path.write_text(SYSTEM.read_text())
    data = json.loads(run(capsys, "calibrate", "link", FIXTURE, "--system", path, "--min-size", "1 MiB", "--save",
                          "--json").out)
    assert data["saved"] == str(path)
    system = load_system_file(path)
    fit = system.domains[0].calibration
    assert fit.alpha.value == pytest.approx(data["alpha_s"], rel=1e-5)
    assert fit.bandwidth.value == pytest.approx(data["bandwidth_Bps"], rel=1e-5)
    assert (fit.op, fit.ranks, fit.algorithm) == ("all_reduce", 8, "ring")
    assert "1 MiB to 8 GiB" in fit.conditions and "bus-bandwidth MAPE" in fit.conditions
    source = system.sources[fit.alpha.source]
    assert source.url == FIXTURE.resolve().as_uri() and source.date and fit.bandwidth.source == fit.alpha.source
    # the stated figures stay as they were
    assert system.domains[0].link.bandwidth.text == "896 GB/s" and system.domains[0].latency.text == "0.8 us"
    assert "not saved" in run(capsys, "calibrate", "link", FIXTURE, "--system", path).out


def test_link_save_into_the_catalog_and_revert_it(capsys, tmp_path):
    db = f"sqlite:///{tmp_path / 'catalog.db'}"
    text = run(capsys, "--db", db, "calibrate", "link", FIXTURE, "--system", "amd-instinct-mi300x-platform",
               "--save").out
    assert "saved in the catalog database" in text
    from explorer.store.engine import open_catalog

    with open_catalog(db) as repo:
        stored = repo.system_record("amd-instinct-mi300x-platform")
        assert stored.system.domains[0].calibration is not None and "domains" in stored.overrides
        repo.revert_system(stored.system.id, stored.version)  # undo: the shipped system back
        assert repo.get_system(stored.system.id).domains[0].calibration is None


TRACES = Path(__file__).parents[1] / "fixtures" / "traces"


@pytest.mark.parametrize("name, fmt, kinds", [
    ("torch_cuda_calibration_trace.json", "torch", ("matrix", "vector")),
    ("ncu_calibration_raw.csv", "nsight", ("vector",)),
])
def test_kernels_from_a_trace_recover_the_curve_that_made_it(capsys, tmp_path, name, fmt, kinds):
    """The fixtures' kernel times were made by matrix (fraction 0.7, 6 us, sharpness 1.5) and vector (0.85, 4 us,
    2) curves on a 312 TFLOP/s, 2039 GB/s device (tests/fixtures/traces/make_calibration_traces.py)."""
    (tmp_path / "plain.yaml").write_text(DEVICE.format(id="plain"))
    data = json.loads(run(capsys, "calibrate", "kernels", TRACES / name, "--device", tmp_path / "plain.yaml",
                          "--precision", "fp16", "--json").out)
    assert data["format"] == fmt and tuple(sorted(data["curves"])) == kinds
    truth = {"matrix": (0.7, 6e-6, 1.5), "vector": (0.85, 4e-6, 2.0)}
    for kind in kinds:
        c = data["curves"][kind]
        assert (c["fraction"], c["latency_s"], c["sharpness"]) == pytest.approx(truth[kind], rel=2e-3)
        assert c["mape"] < 1e-3 and all(r["measured"] == "median of 3 kernels" for r in c["rows"])
    assert data["skipped"] and data["kernels_in_file"] in (55, 24)
    text = run(capsys, "calibrate", "kernels", TRACES / name, "--device", tmp_path / "plain.yaml", "--precision",
               "fp16").out
    assert f"({fmt}, " in text and "left out: " in text and "median time" in text


def test_kernels_from_a_trace_saved_with_the_trace_as_source(capsys, tmp_path):
    db = f"sqlite:///{tmp_path / 'catalog.db'}"
    trace = TRACES / "torch_cuda_calibration_trace.json"
    run(capsys, "--db", db, "calibrate", "kernels", trace, "--device", "nvidia-a100-sxm4-40gb", "--precision", "fp16",
        "--save")
    from explorer.store.engine import open_catalog

    with open_catalog(db) as repo:
        device = repo.get("nvidia-a100-sxm4-40gb")
    key = "fit-torch-cuda-calibration-trace"
    assert device.calibration.matrix["fp16"].source == key and device.calibration.vector.source == key
    assert device.calibration.matrix["fp16"].fit.points == 8 and device.sources[key].url == trace.resolve().as_uri()


@pytest.mark.parametrize("text, suffix, message", [
    ('{"traceEvents": []}', ".json", "no GPU kernels"),
    ('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 0, "dur": 5}]}', ".json",
     "no kernels to fit among 1 (left out: 1 kernel with no External id"),
    ('==PROF== x\n"ID","Kernel Name","gpu__time_duration.sum"\n"","","usecond"\n"0","ampere_sgemm","3"\n', ".csv",
     "no kernels to fit among 1 (left out: 1 GEMM"),
])
def test_kernels_bad_trace_is_one_line_and_exit_2(capsys, tmp_path, text, suffix, message):
    path = tmp_path / f"t{suffix}"
    path.write_text(text)
    err = run(capsys, "calibrate", "kernels", path, "--device", "nvidia-a100-sxm4-40gb", code=2).err
    assert message in err and err.count("\n") == 1


def test_named_calibrations_are_saved_and_reverted(capsys, tmp_path):
    """--name names the saved calibration (source fit-NAME); calibrate revert gives the shipped curves and links
    back, and says when there is nothing to revert."""
    db = f"sqlite:///{tmp_path / 'catalog.db'}"
    from explorer.store.engine import open_catalog

    with open_catalog(db) as repo:
        shipped = repo.get("nvidia-a100-sxm4-40gb").calibration
    trace = TRACES / "torch_cuda_calibration_trace.json"
    run(capsys, "--db", db, "calibrate", "kernels", trace, "--device", "nvidia-a100-sxm4-40gb", "--precision", "fp16",
        "--save", "--name", "Lab run 3")
    run(capsys, "--db", db, "calibrate", "link", FIXTURE, "--system", "amd-instinct-mi300x-platform", "--save",
        "--name", "rccl 2024")
    with open_catalog(db) as repo:
        device, system = repo.get("nvidia-a100-sxm4-40gb"), repo.get_system("amd-instinct-mi300x-platform")
    assert device.calibration.matrix["fp16"].source == "fit-lab-run-3" and "fit-lab-run-3" in device.sources
    with open_catalog(db) as repo:  # also kept as a named calibration of the device, with its provenance
        (named,) = repo.calibrations("nvidia-a100-sxm4-40gb")
    assert (named.name, named.key, named.file, named.format, named.precision) == (
        "Lab run 3", "fit-lab-run-3", trace.name, "torch", "fp16")
    assert named.measurements == 15 and set(named.mape) == {"matrix", "vector"}
    assert named.calibration.matrix["fp16"].source == "fit-lab-run-3"
    assert system.domains[0].calibration.alpha.source == "fit-rccl-2024" and "fit-rccl-2024" in system.sources
    out = json.loads(run(capsys, "--db", db, "calibrate", "revert", "--device", "nvidia-a100-sxm4-40gb",
                         "--json").out)
    assert sorted(out["reverted"]) == ["calibration", "sources.fit-lab-run-3"]
    text = run(capsys, "--db", db, "calibrate", "revert", "--system", "amd-instinct-mi300x-platform").out
    assert "back to the shipped values" in text and "domains" in text and "sources.fit-rccl-2024" in text
    with open_catalog(db) as repo:
        device, system = repo.get("nvidia-a100-sxm4-40gb"), repo.get_system("amd-instinct-mi300x-platform")
    assert device.calibration == shipped and "fit-lab-run-3" not in device.sources
    with open_catalog(db) as repo:  # revert gives the shipped curves back; the named calibration stays to choose
        assert [c.name for c in repo.calibrations("nvidia-a100-sxm4-40gb")] == ["Lab run 3"]
    assert system.domains[0].calibration is None and "fit-rccl-2024" not in system.sources
    again = run(capsys, "--db", db, "calibrate", "revert", "--device", "nvidia-a100-sxm4-40gb").out
    assert "no saved calibration to revert" in again
    err = run(capsys, "--db", db, "calibrate", "revert", "--device", "no-such-gpu", code=2).err
    assert err.count("\n") == 1 and "--device: no device 'no-such-gpu'" in err
    err = run(capsys, "calibrate", "kernels", trace, "--device", "nvidia-a100-sxm4-40gb", "--name", "!!", code=2).err
    assert "--name: expected letters or digits" in err
