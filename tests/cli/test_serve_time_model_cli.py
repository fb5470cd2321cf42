"""``serve`` and ``plan --rate`` take ``--time-model ideal|calibrated`` like analyze, plan and train, and every
serving output says where its times come from (docs/calibration.md, "Where a time comes from")."""

import json

import pytest

from explorer.__main__ import main

H100, L4 = "nvidia-h100-sxm5", "nvidia-l4"
# one request at a time: constant arrivals 100 s apart, 1024 prompt tokens, 256 answer tokens
LONE = ["--rate", "0.01/s", "--arrival", "constant", "--input", "1024", "--output", "256", "--simulate",
        "--requests", "5"]


def run(capsys, *args, code=0):
    rc = main([str(a) for a in args])
    out = capsys.readouterr()
    assert rc == code, out.err
    return out


def _analyze(capsys, phase: str, seq: int) -> dict:
    out = run(capsys, "analyze", "llama3-8b", "-d", H100, "--phase", phase, "--batch", "1", "--seq-len", seq,
              "--attention", "fused", "--time-model", "calibrated", "--json").out
    return json.loads(out)["results"][0]["totals"]


def test_serve_one_request_at_a_time_gives_analyze_s_calibrated_times(capsys):
    cal = json.loads(run(capsys, "serve", "llama3-8b", "-d", H100, *LONE, "--time-model", "calibrated",
                         "--json").out)
    ideal = json.loads(run(capsys, "serve", "llama3-8b", "-d", H100, *LONE, "--json").out)
    prefill, decode = _analyze(capsys, "prefill", 1024), _analyze(capsys, "decode", 1152)  # 1024 + 1 + 254 / 2
    sim = cal["simulation"]
    # TTFT: the calibrated prefill of 1024 tokens (23.84 ms); TPOT: the calibrated decode step at the mean context
    # (6.900 ms; the surface's context grid interpolates linearly, within 0.1 %)
    assert sim["ttft"]["p50_s"] == pytest.approx(prefill["calibrated_time_s"], rel=1e-9)
    assert sim["ttft"]["p50_s"] == pytest.approx(23.842e-3, rel=1e-4)
    assert sim["tpot"]["mean_s"] == pytest.approx(decode["calibrated_time_s"], rel=1e-3)
    assert sim["tpot"]["mean_s"] == pytest.approx(6.900e-3, rel=1e-3)
    assert ideal["simulation"]["tpot"]["mean_s"] == pytest.approx(decode["time_s"], rel=1e-3)  # 4.531 ms
    assert sim["tpot"]["mean_s"] > ideal["simulation"]["tpot"]["mean_s"]
    assert cal["estimate"]["tpot"]["mean_s"] > ideal["estimate"]["tpot"]["mean_s"]
    assert (ideal["time_model"], ideal["time_source"], ideal["time_label"]) == ("ideal", "spec", "spec")
    assert (cal["time_model"], cal["time_source"]) == ("calibrated", "calibrated")
    assert cal["time_label"].startswith("calibrated (matrix: measured at bf16, 49 kernels, OpenXLA GPU cost model")


def test_serve_text_says_where_the_times_come_from(capsys):
    out = run(capsys, "serve", "llama3-8b", "-d", H100, "--time-model", "calibrated").out.splitlines()
    assert out[-1].startswith("-- times: calibrated: predicted from curves fitted to measurements; calibrated "
                              "model: calibrated (matrix: measured at bf16, 49 kernels,")
    assert "7 kernels, yencal/gpu-bandwidth-benchmark" in out[-1]
    out = run(capsys, "serve", "llama3-8b", "-d", H100).out.splitlines()
    assert out[-1] == "-- times: spec: predicted from datasheet figures (ideal model)"


def test_a_device_without_a_calibration_says_spec(capsys):
    cal = json.loads(run(capsys, "serve", "llama3-8b", "-d", L4, "--time-model", "calibrated", "--json").out)
    ideal = json.loads(run(capsys, "serve", "llama3-8b", "-d", L4, "--json").out)
    assert (cal["time_model"], cal["time_source"]) == ("calibrated", "spec")
    assert cal["time_label"] == "spec (no calibration for this device and precision: the ideal model)"
    assert cal["estimate"] == ideal["estimate"] and cal["curve"] == ideal["curve"]  # the ideal model's numbers


def test_serve_rejects_an_unknown_time_model_in_one_line(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["serve", "llama3-8b", "-d", H100, "--time-model", "fitted"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "--time-model" in err[-1] and "Traceback" not in "\n".join(err)


def test_plan_rate_sizes_with_the_time_model(capsys):
    args = ["plan", "llama3-8b", "-d", H100, "-d", L4, "--rate", "5/s", "--tpot-p90", "50ms", "--json"]
    ideal = json.loads(run(capsys, *args).out)
    cal = json.loads(run(capsys, *args, "--time-model", "calibrated").out)
    assert ideal["time_model"] == "ideal" and cal["time_model"] == "calibrated"
    i, c = ({r["id"]: r for r in d["devices"]} for d in (ideal, cal))
    assert [i[x]["time_source"] for x in (H100, L4)] == ["spec", "spec"]
    assert [c[x]["time_source"] for x in (H100, L4)] == ["calibrated", "spec"]
    # the calibrated H100 steps are longer: a replica meets the 50 ms TPOT at a lower rate
    assert 0 < c[H100]["slo_rate_per_s"] < i[H100]["slo_rate_per_s"]
    assert c[L4]["slo_rate_per_s"] == i[L4]["slo_rate_per_s"]  # no calibration: the ideal model's numbers
    text = run(capsys, *args[:-1], "--time-model", "calibrated").out
    assert "times: the calibrated model (spec = datasheet figures, calibrated = fitted to measurements)" in text
    assert f"-- {L4}: spec: predicted from datasheet figures (ideal model); spec (no calibration" in text


def test_plan_rate_on_a_system_follows_the_time_model(capsys):
    args = ["plan", "llama3-8b", "--system", "nvidia-dgx-h100", "--rate", "5/s", "--tpot-p90", "50ms", "--json"]
    ideal = json.loads(run(capsys, *args).out)["devices"][0]
    cal = json.loads(run(capsys, *args, "--time-model", "calibrated").out)["devices"][0]
    assert ideal["time_source"] == "spec" and all(x["time_source"] == "spec" for x in ideal["layouts"])
    sources = {x["label"]: x["time_source"] for x in cal["layouts"]}
    # TP1 sends nothing: its times are the H100's calibrated kernels; TP > 1 crosses NVLink, which has no stored fit
    assert sources == {"TP1 PP1": "calibrated", "TP2 PP1": "partly calibrated", "TP4 PP1": "partly calibrated",
                       "TP8 PP1": "partly calibrated"}
    assert cal["time_source"] == sources[cal["layout_label"]]
    rates = {x["label"]: x["slo_rate_per_s"] for x in ideal["layouts"]}
    assert all(x["slo_rate_per_s"] < rates[x["label"]] for x in cal["layouts"])


def test_disaggregated_pools_on_two_devices_say_partly_calibrated(capsys):
    """A prefill pool on the calibrated H100 and a decode pool on the L4 (no calibration): the answer's times are
    partly calibrated, and the label names each pool's source."""
    data = json.loads(run(capsys, "serve", "llama3-8b", "-d", H100, "--rate", "2/s", "--disaggregate", "1:1",
                          "--kv-link", "50GB/s", "--decode-device", L4, "--time-model", "calibrated", "--json").out)
    assert (data["time_model"], data["time_source"]) == ("calibrated", "partly calibrated")
    assert data["time_label"].startswith(f"partly calibrated ({H100}: calibrated (matrix: measured at bf16, 49 kernels")
    assert data["time_label"].endswith(f"; {L4}: spec (no calibration for this device and precision: the ideal "
                                       "model))")
