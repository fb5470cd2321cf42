"""``--weights``, ``--activations``, ``--kv-cache`` and ``--quantization`` (docs/cli.md): the JSON's assumptions
name the formats, the compute precision and each device's fallback; unset, the output is as before."""

import json

import pytest

from explorer.__main__ import main


def run(capsys, *args):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def analyze_json(capsys, *extra, model="llama2-7b", devices=("nvidia-h100-sxm5", "nvidia-b200")):
    args = ["analyze", model, *(x for d in devices for x in ("-d", d)), "--json", *extra]
    code, out, err = run(capsys, *args)
    assert code == 0, err
    return json.loads(out)


def test_unset_formats_report_the_precision_for_every_tensor(capsys):
    data = analyze_json(capsys)
    a = data["assumptions"]
    assert (a["precision"], a["weights"], a["activations"], a["kv_cache"], a["compute_precision"]) == (
        "fp16", "fp16", "fp16", "fp16", "fp16")
    assert a["format_notes"] == [] and a["bits_per_element"] == {"weights": 16, "activations": 16, "kv_cache": 16}
    assert [r["device"]["precision_note"] for r in data["results"]] == [None, None]


def test_w4a16_weight_bytes_and_dequantization_in_the_json(capsys):
    fp16 = analyze_json(capsys)
    w4 = analyze_json(capsys, "--weights", "int4-g128", "--activations", "fp16")
    a = w4["assumptions"]
    assert (a["weights"], a["compute_precision"], a["bits_per_element"]["weights"]) == ("int4-g128", "fp16", 4.125)
    assert any("weights dequantized" in n for n in a["format_notes"])
    for l16, l4 in zip(fp16["results"][0]["layers"], w4["results"][0]["layers"]):
        assert l4["weight_bytes"] == l16["weight_bytes"] * 4.125 / 16
    assert w4["results"][0]["totals"]["memory_bytes"] < fp16["results"][0]["totals"]["memory_bytes"] / 2


def test_mxfp4_on_h100_falls_back_to_fp8_and_the_json_says_so(capsys):
    data = analyze_json(capsys, "--quantization", "mxfp4", "--kv-cache", "fp8")
    assert data["assumptions"]["compute_precision"] == "fp4" and data["assumptions"]["kv_cache"] == "fp8"
    h100, b200 = (r["device"] for r in data["results"])
    assert h100["compute_precision"] == "fp8" and h100["peak_flops"] == 1979e12
    assert "no fp4 peak: computes at fp8" in h100["precision_note"]
    assert b200["compute_precision"] == "fp4" and b200["peak_flops"] == 9e15 and b200["precision_note"] is None


def test_mi355x_computes_mxfp4_and_mxfp6_at_its_own_peaks(capsys):
    """The catalog's AMD Instinct MI355X (catalog/amd-mi355x.yaml: AMD's MI350 Series product page, dense): MXFP4 and
    MXFP6 at 10.1 PFLOP/s each, FP8 at 5 PFLOP/s, FP16 at 2.5 PFLOP/s, HBM3E at 8 TB/s, so its MXFP4 ridge is
    10.1e15 / 8e12 = 1262.5 FLOP/B; the MI300X has no FP4 or FP6 peak and falls back to FP8 (2614.9 TFLOP/s)."""
    devices = ("amd-mi355x", "amd-mi300x")
    for preset, compute in (("mxfp4", "fp4"), ("mxfp6", "fp6")):
        data = analyze_json(capsys, "--weights", preset, "--activations", preset, devices=devices)
        mi355x, mi300x = (r["device"] for r in data["results"])
        assert data["assumptions"]["compute_precision"] == compute
        assert mi355x["compute_precision"] == compute and mi355x["precision_note"] is None
        assert mi355x["peak_flops"] == 10.1e15 and mi355x["bandwidth"] == 8e12
        assert mi355x["ridge"] == pytest.approx(1262.5)
        assert mi300x["compute_precision"] == "fp8" and mi300x["peak_flops"] == pytest.approx(2614.9e12)
        assert f"no {compute} peak: computes at fp8" in mi300x["precision_note"]
    fp16 = analyze_json(capsys, devices=("amd-mi355x",))["results"][0]["device"]
    fp8 = analyze_json(capsys, "--quantization", "fp8", devices=("amd-mi355x",))["results"][0]["device"]
    assert (fp16["peak_flops"], fp8["peak_flops"]) == (2.5e15, 5e15)


def test_kv_cache_fp8_halves_the_kv_cache_bytes(capsys):
    fp16 = analyze_json(capsys, "--batch", 8, "--seq-len", 4096, devices=("nvidia-h100-sxm5",))
    fp8 = analyze_json(capsys, "--batch", 8, "--seq-len", 4096, "--kv-cache", "fp8", devices=("nvidia-h100-sxm5",))
    assert fp8["results"][0]["totals"]["kv_cache_bytes"] == fp16["results"][0]["totals"]["kv_cache_bytes"] / 2


def test_text_shows_the_formats_and_the_fallback(capsys):
    code, out, _ = run(capsys, "analyze", "llama2-7b", "-d", "nvidia-h100-sxm5", "--weights", "nvfp4",
                       "--activations", "nvfp4")
    assert code == 0
    assert "(batch 1, w nvfp4, a nvfp4, kv fp16, decode)" in out.splitlines()[0]
    assert "formats: weights: nvfp4: FP4 (E2M1) + one FP8 E4M3 scale per 16 = 4.5 bits" in out
    assert "-- precision: NVIDIA H100 SXM5 80GB has no fp4 peak: computes at fp8" in out


@pytest.mark.parametrize("option, value, message", [
    ("--weights", "int3", "--weights: unknown format 'int3'"),
    ("--kv-cache", "fp5", "--kv-cache: unknown format 'fp5'"),
])
def test_unknown_formats_are_refused_naming_the_option(capsys, option, value, message):
    code, _, err = run(capsys, "analyze", "gpt2", "-d", "nvidia-h100-sxm5", option, value)
    assert code != 0 and message in err


def test_plan_and_report_take_the_formats_too(capsys, tmp_path):
    code, out, err = run(capsys, "plan", "llama2-7b", "-d", "nvidia-h100-sxm5", "--target", "1000 tokens/s",
                         "--quantization", "w4a16", "--json")
    assert code == 0, err
    code, out, err = run(capsys, "report", "llama2-7b", "-d", "nvidia-h100-sxm5", "--quantization", "fp8",
                         "--out", tmp_path / "r.csv")
    assert code == 0, err
