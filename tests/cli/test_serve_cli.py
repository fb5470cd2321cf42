"""``hwexplorer serve`` (issue 19): the documented JSON, the trace export, and bad input as one line, exit 2."""

from __future__ import annotations

import json

import pytest

from explorer.__main__ import main

BASE = ["serve", "llama3-8b", "--device", "nvidia-h100-sxm5"]


def _run(capsys, *extra):
    code = main([*BASE, *extra])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_json_fields_and_the_estimate_meets_easy_slos(capsys):
    code, out, _ = _run(capsys, "--rate", "10/s", "--input", "1024", "--output", "256", "--ttft-p90", "500ms",
                        "--tpot-p90", "50ms", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["workload"] == {"rate_per_s": 10.0, "arrival": "poisson", "lengths": "fixed",
                                "mean_input_tokens": 1024.0, "mean_output_tokens": 256.0, "prefix_tokens": 0,
                                "prefix_hit_rate": 0.0, "input_tokens": [1024, 1024], "output_tokens": [256, 256]}
    mem = data["memory_per_device"]
    assert mem["kv_bytes_per_token"] == 131072 and mem["block_size_tokens"] == 16
    assert mem["kv_blocks"] == mem["kv_cache_bytes"] // (16 * 131072)
    est = data["estimate"]
    assert est["method"] == "analytic" and est["stable"] and est["slo_met"]
    assert est["throughput_tokens_per_s"] == pytest.approx(10 * 256)
    assert [s["metric"] for s in est["slo"]] == ["ttft", "tpot"] and est["slo"][0]["target_s"] == 0.5
    curve = data["curve"]
    assert len(curve["rates_per_s"]) == 24 and curve["knee"] >= 0
    assert curve["knee_rate_per_s"] <= curve["capacity_per_s"]
    assert data["simulation"] is None


def test_simulate_and_trace_out(capsys, tmp_path):
    trace = tmp_path / "schedule.json"
    code, out, _ = _run(capsys, "--rate", "5", "--requests", "200", "--trace-out", str(trace), "--json")
    assert code == 0
    sim = json.loads(out)["simulation"]
    assert sim["method"] == "simulation" and sim["requests"] == 200 and sim["preemptions"] == 0
    assert sum(b["share"] for b in sim["batch_distribution"]) == pytest.approx(1.0)
    events = json.loads(trace.read_text())["traceEvents"]
    steps = [e for e in events if e["ph"] == "X"]
    assert steps and all(e["dur"] > 0 for e in steps)
    begins = [e for e in events if e["ph"] == "b" and e["name"] == "decode"]
    assert len(begins) == 200  # every request decodes 255 tokens after its first


def test_text_output_names_the_knee_and_memory(capsys):
    code, out, _ = _run(capsys, "--rate", "10/s", "--ttft-p99", "200 ms", "--tpot-p50", "20ms", "--simulate",
                        "--requests", "300")
    assert code == 0
    assert "memory per device: weights 16.1 GB" in out and "blocks of 16 tokens" in out
    assert "the service levels hold up to" in out and "simulation (300 requests" in out


def test_histogram_and_trace_files(capsys, tmp_path):
    hist = tmp_path / "lengths.csv"
    hist.write_text("input_len,output_len\n100,20\n300,60\n")
    code, out, _ = _run(capsys, "--lengths", str(hist), "--rate", "2/s", "--json")
    assert code == 0 and json.loads(out)["workload"]["mean_input_tokens"] == 200
    tr = tmp_path / "trace.jsonl"
    tr.write_text('{"arrival_time": 0.0, "input_len": 128, "output_len": 16}\n'
                  '{"arrival_time": 0.5, "input_len": 256, "output_len": 8}\n')
    code, out, _ = _run(capsys, "--trace", str(tr), "--simulate", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["workload"]["arrival"] == "trace" and data["simulation"]["requests"] == 2


@pytest.mark.parametrize(("extra", "option"), [
    (["--rate", "0"], "--rate"),
    (["--rate=-3/s"], "--rate"),
    (["--rate", "5 GB"], "--rate"),
    (["--ttft-p90", "500 GB"], "--ttft-p90"),
    (["--tpot-p50", "50"], "--tpot-p50"),
    (["--tpot-p90", "0ms"], "--tpot-p90"),
    (["--ttft-p90", "1s", "--ttft-p99", "2s"], "--ttft-p99"),
    (["--input", "-5"], "--input"),
    (["--output", "300-200"], "--output"),
    (["--memory-utilization", "1.5"], "--memory-utilization"),
    (["--max-batch", "0"], "--max-batch"),
    (["--prefix-hit-rate", "2"], "--prefix-hit-rate"),
    (["--spec-k", "0"], "--spec-k"),
])
def test_bad_input_is_one_line_naming_the_option(capsys, extra, option):
    code, _, err = _run(capsys, *extra)
    assert code == 2
    assert err.count("\n") == 1 and option in err and "Traceback" not in err


def test_histogram_with_negative_lengths_names_row_and_field(capsys, tmp_path):
    hist = tmp_path / "lengths.csv"
    hist.write_text("input,output\n100,20\n-4,60\n")
    code, _, err = _run(capsys, "--lengths", str(hist))
    assert code == 2 and err.count("\n") == 1
    assert "--lengths" in err and "row 3" in err and "input" in err


def test_no_device_or_both(capsys):
    assert main(["serve", "llama3-8b"]) == 2
    assert "--device" in capsys.readouterr().err
    assert main([*BASE, "--system", "nvidia-dgx-h100"]) == 2
    assert "--system" in capsys.readouterr().err


def test_disaggregated_pools_json(capsys):
    code, out, _ = _run(capsys, "--rate", "10/s", "--disaggregate", "1:1", "--decode-device", "nvidia-l40s",
                        "--kv-link", "25 GB/s", "--kv-link-latency", "10us", "--requests", "300", "--json")
    assert code == 0
    d = json.loads(out)["disaggregated"]
    assert d["kv_link"] == {"bandwidth_Bps": 25e9, "latency_s": pytest.approx(1e-5)}
    assert d["kv_bytes_per_token"] == 131072
    assert (d["prefill_replicas"], d["decode_replicas"]) == (1, 1) and d["search"] is None
    assert d["result"]["method"] == "simulation (disaggregated)" and d["result"]["requests"] == 300


def test_disaggregated_search_text(capsys):
    code, out, _ = _run(capsys, "--rate", "40/s", "--ttft-p90", "50ms", "--tpot-p90", "8ms", "--disaggregate",
                        "auto", "--max-pool", "2", "--kv-link", "50 GB/s", "--requests", "800")
    assert code == 0
    assert "2 prefill + 2 decode replicas (the cheapest meeting the service levels)" in out


@pytest.mark.parametrize(("extra", "option"), [
    (["--disaggregate", "1:1"], "--kv-link"),
    (["--disaggregate", "0:2", "--kv-link", "50 GB/s"], "--disaggregate"),
    (["--disaggregate", "two", "--kv-link", "50 GB/s"], "--disaggregate"),
    (["--disaggregate", "1:1", "--kv-link", "50 GB"], "--kv-link"),
    (["--disaggregate", "1:1", "--kv-link", "50 GB/s", "--kv-link-latency", "3 W"], "--kv-link-latency"),
    (["--idle-power", "90 s"], "--idle-power"),
    (["--hourly-price", "3 USD"], "--hourly-price"),
])
def test_bad_disaggregation_and_cost_input(capsys, extra, option):
    code, _, err = _run(capsys, *extra)
    assert code == 2 and err.count("\n") == 1 and option in err


def test_speculative_with_a_draft_model(capsys):
    """Llama-3-8B drafting 4 tokens for itself: each step costs 4 of its own decode steps plus a verification, so
    at acceptance 0.8 (3.36 tokens a step) the TPOT comes out above plain decoding: the model says so."""
    code, out, _ = _run(capsys, "--rate", "1/s", "--spec-k", "4", "--spec-acceptance", "0.8", "--spec-draft",
                        "llama3-8b", "--json")
    assert code == 0
    data = json.loads(out)
    spec = data["engine"]["speculative"]
    assert spec["draft_model"] == "llama3-8b" and spec["draft_cost"] is None
    assert spec["tokens_per_step"] == pytest.approx((1 - 0.8**5) / 0.2)
    code, plain, _ = _run(capsys, "--rate", "1/s", "--json")
    assert data["estimate"]["tpot"]["mean_s"] > json.loads(plain)["estimate"]["tpot"]["mean_s"]
    assert main([*BASE, "--spec-draft", "llama3-8b"]) == 2
    assert "--spec-draft" in capsys.readouterr().err
