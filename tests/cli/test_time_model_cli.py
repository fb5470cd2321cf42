"""Every time says where it comes from (spec | partly calibrated | calibrated), and plan and report take the time
model (``--time-model ideal|calibrated``; docs/calibration.md, "Where a time comes from")."""

import csv
import json
import math
from pathlib import Path

import pytest

from explorer.__main__ import main

NCCL = Path(__file__).parents[1] / "fixtures" / "nccl" / "mi300x-8gpu-all_reduce_perf.txt"
MI300X = Path(__file__).parents[2] / "catalog" / "systems" / "amd-instinct-mi300x-platform.yaml"
WORK = ["llama2-7b", "-d", "nvidia-h100-sxm5", "-d", "nvidia-l4", "--batch", "8", "--seq-len", "1024",
        "--phase", "decode"]


def run(capsys, *args, code=0):
    rc = main([str(a) for a in args])
    out = capsys.readouterr()
    assert rc == code, out.err
    return out


@pytest.fixture(scope="module")
def analyzed():
    """analyze's JSON: both models' totals per device (the H100 has shipped kernel curves, the L4 none)."""
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["analyze", *WORK, "--time-model", "calibrated", "--json"]) == 0
    return {r["device"]["id"]: r for r in json.loads(buf.getvalue())["results"]}


def test_analyze_labels_every_device_s_times(capsys, analyzed):
    h100, l4 = analyzed["nvidia-h100-sxm5"], analyzed["nvidia-l4"]
    assert h100["time_source"] == "calibrated" and l4["time_source"] == "spec"  # no curve on the L4: not calibrated
    assert h100["time_sources"] == {"time_s": "spec", "calibrated_time_s": "calibrated"}
    ideal = json.loads(run(capsys, "analyze", *WORK, "--json").out)["results"]
    assert [r["time_source"] for r in ideal] == ["spec", "spec"]
    text = run(capsys, "analyze", *WORK, "--model", "calibrated").out
    assert "-- times: calibrated: predicted from curves fitted to measurements" in text
    assert "-- times: spec: predicted from datasheet figures (ideal model)" in text


@pytest.mark.parametrize("model", ["ideal", "calibrated"])
def test_plan_sizes_with_the_time_model(capsys, analyzed, model):
    """plan --time-model: each device's latency is analyze's total time of that model; the units follow by hand:
    ceil(target / (batch / latency))."""
    data = json.loads(run(capsys, "plan", *WORK, "--target", "3000 tokens/s", "--time-model", model, "--json").out)
    assert data["time_model"] == model
    key = "time_s" if model == "ideal" else "calibrated_time_s"
    for d in data["devices"]:
        latency = analyzed[d["id"]]["totals"][key]
        assert d["latency_s"] == pytest.approx(latency, rel=1e-12)
        assert d["throughput_per_unit"] == pytest.approx(8 / latency, rel=1e-12)
        assert d["units"] == math.ceil(3000 / (8 / latency) - 1e-9)
        assert d["time_source"] == ("spec" if model == "ideal" else analyzed[d["id"]]["time_source"])
    h100 = next(d for d in data["devices"] if d["id"] == "nvidia-h100-sxm5")
    # H100: ideal 5.28 ms per step -> 1,514 tokens/s, 2 units; calibrated 7.73 ms -> 1,035 tokens/s, 3 units
    assert h100["units"] == (2 if model == "ideal" else 3)
    text = run(capsys, "plan", *WORK, "--target", "3000 tokens/s", "--time-model", model).out
    assert f"times: the {model} model" in text and "   times spec: predicted from datasheet figures" in text


def test_report_carries_the_time_model_and_the_label(tmp_path, capsys, analyzed):
    out = tmp_path / "r.csv"
    run(capsys, "report", *WORK, "--target", "3000 tokens/s", "--time-model", "calibrated", "-o", out)
    rows = {r["device_id"]: r for r in csv.DictReader(out.open(encoding="utf-8"))}
    for dev, r in rows.items():
        assert float(r["Latency per decode step (one unit) [s]"]) == pytest.approx(
            analyzed[dev]["totals"]["calibrated_time_s"], rel=1e-6)
        assert r["Times from (calibrated model)"] == analyzed[dev]["time_source"]
    assert rows["nvidia-h100-sxm5"]["units"] == "3"
    run(capsys, "report", *WORK, "--target", "3000 tokens/s", "-o", out)
    rows = {r["device_id"]: r for r in csv.DictReader(out.open(encoding="utf-8"))}
    assert rows["nvidia-h100-sxm5"]["Times from (ideal model)"] == "spec" and rows["nvidia-h100-sxm5"]["units"] == "2"


def test_report_assumptions_say_where_the_times_come_from(analyzed):
    from explorer.core.analysis.cost import CostAssumptions
    from explorer.core.analysis.evaluate import evaluate
    from explorer.core.analysis.time_model import as_time_model
    from explorer.core.hardware.catalog_files import load_shipped_devices
    from explorer.core.workload.layers import Context
    from explorer.core.workload.templates import get_template
    from explorer.report.build import build_report

    devices = {d.id: d for d in load_shipped_devices()}
    a = evaluate(get_template("llama2-7b").build(), [devices["nvidia-h100-sxm5"], devices["nvidia-l4"]], "fp16",
                 Context(batch=8, seq_len=1024, phase="decode"))
    data = build_report(as_time_model(a, "calibrated"), CostAssumptions(), time_model="calibrated")
    times = dict(data.assumptions)["Times"]
    assert times.startswith("The device times, throughputs and costs per million come from the calibrated model")
    assert "NVIDIA L4 24GB: spec: predicted from datasheet figures" in times and data.time_model == "calibrated"
    assert "ideal model" in dict(build_report(a, CostAssumptions()).assumptions)["Times"]


def test_system_times_say_which_links_and_kernels_are_calibrated(capsys, tmp_path):
    system = tmp_path / "mi300x.yaml"
    system.write_text(MI300X.read_text())
    args = ["analyze", "llama2-70b", "--system", system, "--tp", "8", "--phase", "decode", "--batch", "8",
            "--seq-len", "4096", "--collective", "ring", "--json"]
    before = json.loads(run(capsys, *args, "--model", "calibrated").out)
    assert before["calibrated_links"] == [] and before["layouts"][0]["time_source"] == "spec"  # nothing fitted
    run(capsys, "calibrate", "link", NCCL, "--system", system, "--min-size", "1 MiB", "--save")
    ideal = json.loads(run(capsys, *args).out)
    cal = json.loads(run(capsys, *args, "--model", "calibrated").out)
    assert ideal["layouts"][0]["time_source"] == "spec" and ideal["layouts"][0] == before["layouts"][0]
    assert cal["time_model"] == "calibrated" and cal["kernel_source"] == "spec"  # the MI300X has no kernel curves
    assert cal["calibrated_links"] == [cal["system"]["domains"][0]["name"]]
    assert cal["layouts"][0]["time_source"] == "partly calibrated"  # fitted link, datasheet kernels
    fit = cal["system"]["domains"][0]["calibrated"]
    assert fit["op"] == "all_reduce" and fit["ranks"] == 8 and fit["bandwidth_per_direction_Bps"] < 448e9
    assert cal["layouts"][0]["comm_time_s"] > ideal["layouts"][0]["comm_time_s"]  # 298 GB/s < the stated 448
    assert cal["layouts"][0]["compute_time_s"] == ideal["layouts"][0]["compute_time_s"]
    text = run(capsys, *args[:-1], "--model", "calibrated").out
    assert "-- times: partly calibrated" in text and "fitted links: AMD Infinity Fabric" in text
    plan = json.loads(run(capsys, "plan", "llama2-70b", "--system", system, "--phase", "decode", "--batch", "8",
                          "--seq-len", "4096", "--target", "2000 tokens/s", "--time-model", "calibrated",
                          "--json").out)
    assert plan["time_model"] == "calibrated" and plan["systems"][0]["time_source"] == "partly calibrated"


def test_search_batch_plans_every_batch_under_the_calibrated_model(capsys):
    """plan --search-batch --time-model calibrated: each batch's row of the grid is plan --batch B --time-model
    calibrated's, and the choice is the brute force's (the lowest buy cost meeting 10 ms, the smaller batch on a
    tie). The H100's calibrated steps are longer: batch 16 (9.2 ms) where the ideal model reaches batch 32."""
    args = ["plan", *WORK, "--target", "3000 tokens/s", "--latency", "10 ms", "--json"]
    cal = json.loads(run(capsys, *args, "--search-batch", "64", "--time-model", "calibrated").out)
    ideal = json.loads(run(capsys, *args, "--search-batch", "64").out)
    grid = cal["batch_search"]
    assert grid["time_model"] == "calibrated" and ideal["batch_search"]["time_model"] == "ideal"
    best = {}
    for i, b in enumerate(grid["batches"]):
        at = {d["id"]: d for d in json.loads(run(capsys, *args[:-1], "--batch", b, "--time-model", "calibrated",
                                                  "--json").out)["devices"]}
        for j, dev in enumerate(grid["device_ids"]):
            assert grid["latency_s"][i][j] == pytest.approx(at[dev]["latency_s"], rel=1e-12)
            assert grid["rank_cost_usd"][i][j] == at[dev]["rank_cost_usd"]
            if at[dev]["feasible"] is True and at[dev]["rank_cost_usd"] is not None and (
                    dev not in best or at[dev]["rank_cost_usd"] < best[dev][0]):
                best[dev] = (at[dev]["rank_cost_usd"], b)
    assert grid["chosen"]["nvidia-h100-sxm5"] == best["nvidia-h100-sxm5"][1] == 16
    assert ideal["batch_search"]["chosen"]["nvidia-h100-sxm5"] == 32
    h100 = next(d for d in cal["devices"] if d["id"] == "nvidia-h100-sxm5")
    assert h100["batch"] == 16 and h100["time_source"] == "calibrated"
    text = run(capsys, *args[:-1], "--search-batch", "64", "--time-model", "calibrated").out
    assert "batch searched over 1-64 per device under the calibrated model" in text


def test_report_times_row_names_the_sections_that_stay_ideal(tmp_path, capsys):
    """With systems and training asked for, the Times row says the systems section follows the model (with each
    system's label) and the training section stays at the ideal model."""
    out = tmp_path / "r.csv"
    run(capsys, "report", "llama2-7b", "--system", "nvidia-dgx-h100", "--train", "nvidia-dgx-h100", "--batch", "8",
        "--seq-len", "1024", "--phase", "decode", "--time-model", "calibrated", "-o", out)
    from explorer.core.analysis.evaluate import evaluate
    from explorer.core.hardware.catalog_files import load_shipped_devices
    from explorer.core.parallel.compare import size_on_systems
    from explorer.core.parallel.system_pass import Options
    from explorer.core.workload.layers import Context
    from explorer.core.workload.templates import get_template
    from explorer.report.build import time_statement
    from explorer.report.systems_section import build_section
    from explorer.store.resolve import resolve_system

    h100 = next(d for d in load_shipped_devices() if d.id == "nvidia-h100-sxm5")
    model, ctx = get_template("llama2-7b").build(), Context(batch=8, seq_len=1024, phase="decode")
    a = evaluate(model, [h100], "fp16", ctx)
    dgx = resolve_system("nvidia-dgx-h100")
    section = build_section(size_on_systems(model, [(dgx, h100)], "fp16", ctx,
                                            options=Options(time_model="calibrated")))
    text = time_statement(a, "calibrated", section, training=True)
    assert f"Systems section: the calibrated model ({dgx.name}: " in text
    assert text.endswith("The training section uses the ideal model (spec): not calibrated there.")
    assert "training" not in time_statement(a, "ideal", section, training=True)
    assert out.exists()


def test_training_and_serving_say_where_their_times_come_from(capsys):
    """Training and serving under the ideal model say spec; training under the calibrated model on the DGX H100 (the
    H100 SXM5 carries fitted curves) says partly calibrated: its compute rows are calibrated, its optimizer traffic
    and links are not; serving on the H100 alone under the calibrated model says calibrated."""
    train = ["train", "llama3-70b", "--system", "nvidia-dgx-h100", "--global-batch", "64", "--seq-len", "4096",
             "--tp", "8", "--pp", "1"]
    data = json.loads(run(capsys, *train, "--json").out)
    assert (data["time_model"], data["time_source"]) == ("ideal", "spec")
    assert "-- times: spec: predicted from datasheet figures" in run(capsys, *train).out
    data = json.loads(run(capsys, *train, "--time-model", "calibrated", "--json").out)
    assert (data["time_model"], data["time_source"]) == ("calibrated", "partly calibrated")
    serve = ["serve", "llama3-8b", "--device", "nvidia-h100-sxm5", "--rate", "10/s", "--input", "1024", "--output",
             "256"]
    data = json.loads(run(capsys, *serve, "--json").out)
    assert (data["time_model"], data["time_source"]) == ("ideal", "spec")
    assert run(capsys, *serve).out.endswith("-- times: spec: predicted from datasheet figures (ideal model)\n")
    data = json.loads(run(capsys, *serve, "--time-model", "calibrated", "--json").out)
    assert (data["time_model"], data["time_source"]) == ("calibrated", "calibrated")
