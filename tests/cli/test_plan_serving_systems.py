"""``hwexplorer plan --rate ... --system S`` (issue 19): a serving fleet whose replica is a layout of tp x pp devices of
a system. Checked by hand from the core's own numbers: the TP1 layout's replica is the single device (the same rate
within the two surfaces' interpolation), a TP2 replica's step is about half the device's plus its all-reduce, and the
fleet (replicas, devices, nodes, capital) follows from the TP2 replica's service-level rate; bad input is one line."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from explorer.__main__ import main
from explorer.cli.resolve import load_model_arg, resolve_devices
from explorer.cli.system_cmd import resolve_system
from explorer.core.parallel.layout import Layout
from explorer.core.serving.fleet import slo_rate
from explorer.core.serving.serve import device_setup, system_setup
from explorer.core.serving.workload import SLO, Lengths, Workload

L4, SERVER = "nvidia-l4", "pcie-server-4x-nvidia-l4"
# TPOT 60 ms: one L4 meets it alone (its lone decode step is 50.6 ms), so TP1 and the device can be compared
SERVE = ["--rate", "10/s", "--input", "1024", "--output", "256", "--ttft-p90", "500ms", "--tpot-p90", "60ms"]
WORKLOAD = Workload(rate=10.0, lengths=Lengths("fixed", (1024, 1024), (256, 256)))
LEVELS = SLO(ttft=0.5, tpot=0.06, ttft_pct="p90", tpot_pct="p90")


@pytest.fixture(scope="module")
def plan():
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["plan", "llama3-8b", "-d", L4, "--system", SERVER, *SERVE, "--quote", f"{L4}=2500 USD",
                     "--rent", f"{L4}=$0.8/h", "--json"])
    assert code == 0
    return json.loads(buf.getvalue())


@pytest.fixture(scope="module")
def hardware():
    model, _ = load_model_arg("llama3-8b")
    system = resolve_system(SERVER, 1)
    device = resolve_devices([system.device_id], None)[0]
    return model, system, device


def _rows(plan):
    return {r["id"]: r for r in plan["devices"]}


def test_the_tp1_layout_is_the_single_device(plan):
    rows = _rows(plan)
    device, server = rows[L4], rows[SERVER]
    assert device["kind"] == "device" and server["kind"] == "system" and server["device"] == L4
    tp1 = next(x for x in server["layouts"] if x["layout"]["tp"] == 1 and x["layout"]["pp"] == 1)
    assert tp1["label"] == "TP1 PP1" and tp1["replica_devices"] == 1
    assert device["feasible"] and tp1["slo_rate_per_s"] > 0
    # the system pass of TP1 has no communication: the same replica, on a coarser grid (8 points vs 10)
    assert tp1["slo_rate_per_s"] == pytest.approx(device["slo_rate_per_s"], rel=0.02)
    assert tp1["replicas"] == device["replicas"] and tp1["devices"] == device["devices"]


def test_a_tp2_replica_by_hand(plan, hardware):
    model, system, device = hardware
    single = device_setup(model, device, WORKLOAD)
    tp2 = replace(system_setup(model, system, device, Layout(tp=2, dp=2), WORKLOAD), replicas=1)
    # decode of one sequence at 1,100 tokens of context: TP2 reads half the weights and KV per device, plus an
    # all-reduce over PCIe per layer: between half the single device's step and the whole of it
    t1, t2 = float(single.surface.decode(1, 1100)), float(tp2.surface.decode(1, 1100))
    assert t1 / 2 < t2 < 0.55 * t1
    per = slo_rate(WORKLOAD, tp2, LEVELS)
    row = next(x for x in _rows(plan)[SERVER]["layouts"] if x["label"] == "TP2 PP1")
    assert row["slo_rate_per_s"] == pytest.approx(per, rel=1e-9)
    # a TP2 replica serves more than twice one device: the KV cache has more than twice the room per sequence
    assert per > 2 * _rows(plan)[L4]["slo_rate_per_s"]
    assert row["replicas"] == math.ceil(10 / per) and row["devices"] == 2 * row["replicas"]


def test_the_system_fleet_costs_by_hand(plan):
    server = _rows(plan)[SERVER]
    assert server["feasible"]
    chosen = next(x for x in server["layouts"] if x["label"] == server["layout_label"])
    n = server["replicas"]
    assert n == math.ceil(10 / server["slo_rate_per_s"]) and chosen["replicas"] == n
    assert server["devices"] == n * server["replica_devices"] and server["nodes"] == math.ceil(server["devices"] / 4)
    assert server["capital_usd"] == pytest.approx(server["devices"] * 2500)  # every device of every replica
    tokens_per_s = 10 * 256
    assert server["rented_per_million_usd"] == pytest.approx(server["devices"] * 0.8 / 3600 / tokens_per_s * 1e6)
    # the chosen layout is the cheapest owned (USD per million output tokens) of those searched
    costs = [x["cost_per_million_usd"] for x in server["layouts"] if x["cost_per_million_usd"] is not None]
    assert server["cost_per_million_usd"] == pytest.approx(min(costs))
    assert [r["rank"] for r in plan["devices"]] == [1, 2]


def test_text_output_names_the_layouts(capsys):
    code = main(["plan", "llama3-8b", "--system", SERVER, *SERVE[:-2], "--tpot-p90", "50ms"])
    out = capsys.readouterr().out
    assert code == 0
    assert "TP2 PP1" in out and "layouts searched" in out
    assert "TP1 PP1: no load meets the service levels" in out  # one L4 misses 50 ms alone


@pytest.mark.parametrize(("args", "field"), [
    (["--system", "no-such-system"], "no-such-system"),
    (["--system", SERVER, "--quote", "nvidia-h100-sxm5=30000 USD"], "--quote"),
])
def test_bad_input_is_one_line(capsys, args, field):
    code = main(["plan", "llama3-8b", *args, *SERVE])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and field in err and "Traceback" not in err


def test_a_model_no_layout_holds_says_why(capsys):
    """Llama-3-70B in fp16 (about 141 GB of weights) on four 24 GB L4s: no tensor layout leaves room for a KV block,
    so the pipelines are searched too, and none does either; the row says so, naming the layouts."""
    code = main(["plan", "llama3-70b", "--system", SERVER, "--rate", "1/s", "--input", "1024", "--output", "256",
                 "--tpot-p90", "100ms", "--json"])
    assert code == 0
    (row,) = json.loads(capsys.readouterr().out)["devices"]
    assert not row["feasible"] and row["replicas"] is None and row["devices"] is None
    assert row["reason"].startswith("no layout on its 4 devices leaves room for the KV cache after the weights")
    labels = [x["label"] for x in row["layouts"]]
    assert {"TP1 PP1", "TP2 PP1", "TP4 PP1"} <= set(labels) and any(x.endswith("PP2") for x in labels)
    assert all(x["reason"] == "no room for the KV cache (the weights fill each device)" for x in row["layouts"])
