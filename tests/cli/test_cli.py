"""The command line, run in-process: exit codes, JSON shape, one-line errors."""

import json
import sys
import types

import pytest

from explorer.__main__ import main

A100 = """format: 1
id: test-a100
name: Test A100
vendor: test
kind: gpu
peak: {fp16: 312 TFLOP/s}
memory:
  - {name: HBM, role: offchip, capacity: 80 GB, bandwidth: 2039 GB/s}
"""
MODEL = {"format": 1, "name": "dense", "input": {"features": 2048},
         "layers": [{"kind": "dense", "name": "fc", "in_features": 2048, "out_features": 2048, "bias": False}]}


@pytest.fixture
def files(tmp_path):
    (tmp_path / "a100.yaml").write_text(A100)
    (tmp_path / "m.json").write_text(json.dumps(MODEL))
    return tmp_path


def run(capsys, *args):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_analyze_json_shape(files, capsys):
    code, out, err = run(capsys, "analyze", files / "m.json", "--device", files / "a100.yaml", "--batch", "32", "--json")
    assert code == 0 and err == ""
    data = json.loads(out)
    assert data["model"] == {"name": "dense", "params": 4194304.0, "active_params": 4194304.0,  # added with MoE
                             "macs": 134217728.0, "flops": 268435456.0}
    (result,) = data["results"]
    assert result["device"]["ridge"] == pytest.approx(153.016, abs=1e-3)
    (layer,) = result["layers"]
    assert layer["intensity"] == pytest.approx(31.0303, abs=1e-4)
    assert layer["attainable_flops"] == pytest.approx(63.271e12, rel=1e-4)
    assert layer["bound"] == "memory"
    assert set(layer["energy_j"]) == {"HBM", "compute", "total"}
    assert layer["gemm"] == {"m": 32, "n": 2048, "k": 2048}
    assert set(result["totals"]) >= {"ideal_time_s", "time_s", "throughput_per_s", "flops", "bytes", "energy_j",
                                      "memory_bytes", "kv_cache_bytes", "achieved_flops", "utilization"}
    assert result["totals"]["time_s"] >= result["totals"]["ideal_time_s"]


def test_analyze_text_has_units(files, capsys):
    code, out, _ = run(capsys, "analyze", files / "m.json", "-d", files / "a100.yaml")
    assert code == 0
    assert "ridge 153 FLOP/B" in out and "[us]" in out and "TFLOP/s" in out


@pytest.mark.parametrize("args, message", [
    (["analyze", "no-such-template", "-d", "{dev}"], "MODEL: unknown template 'no-such-template'"),
    (["analyze", "{model}", "-d", "nowhere/x.yaml"], "--device: no such file: nowhere/x.yaml"),
    (["analyze", "{model}", "-d", "{dev}", "--batch", "0"], "--batch: must be a positive whole number"),
    (["tiling", "--m", "-4", "--n", "1", "--k", "1", "--array", "8x8"], "--m: must be a positive whole number"),
    (["tiling", "--m", "4", "--n", "1", "--k", "1", "--array", "eight"], "--array: expected RxC"),
])
def test_bad_input_exits_2_with_one_line(files, capsys, args, message):
    args = [a.format(dev=files / "a100.yaml", model=files / "m.json") for a in args]
    code, out, err = run(capsys, *args)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("hwexplorer: error: ") and message in err


def test_wrong_unit_in_device_file(files, capsys):
    (files / "bad.yaml").write_text(A100.replace("2039 GB/s", "3.35 kg"))
    code, _, err = run(capsys, "analyze", files / "m.json", "-d", files / "bad.yaml")
    assert code == 2 and "memory[0].bandwidth: '3.35 kg'" in err


def test_tiling_json(capsys):
    code, out, _ = run(capsys, "tiling", "--m", "129", "--n", "128", "--k", "64", "--array", "128x128",
                       "--dataflow", "os", "--json")
    data = json.loads(out)
    assert code == 0 and data["folds"] == 2
    assert data["mapping_efficiency"] == pytest.approx(129 / 256)
    assert data["padding_options"] == {"M": [128, 256]}


def test_tiling_4096_on_128(capsys):
    code, out, _ = run(capsys, "tiling", "--m", "4096", "--n", "4096", "--k", "4096", "--array", "128x128",
                       "--dataflow", "os", "--json")
    data = json.loads(out)
    assert data["folds"] == 1024 and data["mapping_efficiency"] == 1.0 and data["fringe_tax"] == 0.0


def test_a_project_file_is_a_model_and_opens_the_app(files, capsys, monkeypatch):
    """`analyze study.hwproj` analyses the project's model; `hwexplorer study.hwproj` opens it in the app
    (issue 24: they were 'name: is required' and an argparse error)."""
    from explorer.core.session.project import Project, load_project, save_project
    from explorer.core.session.state import Assumptions
    from explorer.core.workload.model import load_model_file

    project = files / "study.hwproj"
    save_project(Project(load_model_file(files / "m.json"), ("a100",), Assumptions(phase="decode")), project)
    code, out, err = run(capsys, "analyze", project, "--device", files / "a100.yaml", "--batch", "32", "--json")
    assert code == 0 and err == "" and json.loads(out)["model"]["params"] == 4194304.0
    opened = {}
    fake_app = types.SimpleNamespace(run_app=lambda db_url=None, project=None: opened.update(p=project) or 0)
    monkeypatch.setitem(sys.modules, "explorer.ui.app", fake_app)  # no Qt in the headless suite
    assert main([str(project)]) == 0 and opened["p"] == str(project)
    code, out, err = run(capsys, "analyze", files / "missing.hwproj", "--device", files / "a100.yaml")
    assert code == 2 and err.strip() == f"hwexplorer: error: MODEL: no such file: {files / 'missing.hwproj'}"
    (files / "bad.hwproj").write_text('{"kind": "hwexplorer-project", "format": 2, "assumptions": 7}')
    code, out, err = run(capsys, "analyze", files / "bad.hwproj", "--device", files / "a100.yaml")
    assert code == 2 and "assumptions: expected an object" in err and len(err.strip().splitlines()) == 1
    assert load_project(project).assumptions.phase == "decode"


def test_a_bad_option_is_one_line(capsys):
    """Issue 24: `--precision fp7` printed the whole usage text."""
    with pytest.raises(SystemExit) as exc:
        main(["analyze", "gpt2", "--device", "x.yaml", "--precision", "fp7"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith("hwexplorer analyze: error: argument --precision: invalid choice: 'fp7'")


def test_a_16_bit_float_request_computes_at_the_other_one_and_says_so(tmp_path, capsys):
    """Issue 24: TPUs list only bf16, so the default fp16 dropped them ('missing fp16 peak')."""
    from pathlib import Path

    tpu = Path(__file__).resolve().parents[2] / "catalog" / "google-tpu-v4.yaml"
    code, out, err = run(capsys, "analyze", "gpt2", "--device", tpu, "--json")
    assert code == 0 and err == ""
    (result,) = json.loads(out)["results"]
    assert result["device"]["peak_flops"] == 275e12 and result["totals"]["time_s"] > 0
    code, out, _ = run(capsys, "analyze", "gpt2", "--device", tpu)
    assert ("-- precision: Google Cloud TPU v4 has no fp16 peak: computes at bf16, the other 16-bit float (same 2 "
            "bytes per element)") in out
    fp16_only = tmp_path / "g.yaml"
    fp16_only.write_text("id: g\nname: G\nvendor: t\nkind: gpu\npeak: {fp16: 100 TFLOP/s}\n"
                         "memory: [{name: HBM, role: offchip, capacity: 16 GB, bandwidth: 1 TB/s}]\n")
    code, out, _ = run(capsys, "analyze", "gpt2", "--device", fp16_only, "--precision", "bf16")
    assert code == 0 and "G has no bf16 peak: computes at fp16, the other 16-bit float" in out
