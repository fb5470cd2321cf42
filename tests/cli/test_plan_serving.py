"""``hwexplorer plan --rate ...`` (issue 19, the planner part): the planner's requirements as a serving workload and
service levels. The fleet is checked by hand from the core's own numbers (the per-replica rate at the service levels
from :func:`explorer.core.serving.fleet.slo_rate`, the device's TDP), the ranking per basis, a device that meets no
load, and bad input as one line naming the option, exit 2."""

from __future__ import annotations

import json
import math

import pytest

from explorer.__main__ import main
from explorer.cli.resolve import load_model_arg, resolve_devices
from explorer.core.parallel.layout_cost import JOULES_PER_KWH
from explorer.core.serving.fleet import SECONDS_PER_YEAR, slo_rate
from explorer.core.serving.serve import device_setup
from explorer.core.serving.workload import SLO, Lengths, Workload

H100, A100, L4 = "nvidia-h100-sxm5", "nvidia-a100-sxm4-80gb", "nvidia-l4"
SERVE = ["--rate", "40/s", "--input", "1024", "--output", "256", "--ttft-p90", "500ms", "--tpot-p90", "50ms"]


def _plan(capsys, *args):
    code = main(["plan", "llama3-8b", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_fleet_by_hand_from_the_core_numbers(capsys):
    code, out, _ = _plan(capsys, "-d", H100, *SERVE, "--quote", f"{H100}=30000 USD", "--rent", f"{H100}=$3.6/h",
                         "--json")
    assert code == 0
    data = json.loads(out)
    assert data["mode"] == "serving" and data["rank_by"] == "buy"
    assert data["slo"] == [{"metric": "ttft", "percentile": "p90", "target_s": 0.5},
                           {"metric": "tpot", "percentile": "p90", "target_s": 0.05}]
    (row,) = data["devices"]
    # the core's per-replica rate for the same workload, service levels and engine defaults
    model, _ = load_model_arg("llama3-8b")
    device = resolve_devices([H100], None)[0]
    workload = Workload(rate=40.0, lengths=Lengths("fixed", (1024, 1024), (256, 256)))
    setup = device_setup(model, device, workload)
    slo = SLO(ttft=0.5, tpot=0.05, ttft_pct="p90", tpot_pct="p90")
    per = slo_rate(workload, setup, slo)
    assert per > 0 and row["slo_rate_per_s"] == pytest.approx(per, rel=1e-9)
    assert row["feasible"] and row["replicas"] == math.ceil(40 / per) and row["devices"] == row["replicas"]
    assert row["replicas"] >= 2  # 40 requests/s is more than one H100 serves at these levels
    tokens_per_s = 40 * 256  # output tokens/s of the fleet
    assert row["output_tokens_per_s"] == pytest.approx(tokens_per_s)
    # rented: replicas x $3.6/h = replicas x 0.001 USD/s; per million output tokens = fleet USD/s / tokens/s x 1e6
    assert row["rent_usd_per_hour"] == pytest.approx(3.6)
    assert row["rented_per_million_usd"] == pytest.approx(row["replicas"] * 0.001 / tokens_per_s * 1e6, rel=1e-9)
    # owned: capital at the quote, energy at TDP x busy share x PUE 1.3 x 0.12 USD/kWh over 3 years
    seconds = 3 * SECONDS_PER_YEAR
    assert row["capital_usd"] == pytest.approx(row["replicas"] * 30000)
    energy = row["replicas"] * device.tdp.value * row["busy_share"] * 1.3 * seconds / JOULES_PER_KWH * 0.12
    assert row["tco_usd"] == pytest.approx(row["capital_usd"] + energy, rel=1e-9)
    assert 0 < row["busy_share"] <= 1
    assert row["cost_per_million_usd"] == pytest.approx(row["tco_usd"] / seconds / tokens_per_s * 1e6, rel=1e-9)
    assert row["rent_usd"] == pytest.approx(row["replicas"] * 0.001 * seconds, rel=1e-9)


def test_ranking_follows_the_chosen_basis(capsys):
    # 40 requests/s needs 2 H100 or 4 A100 replicas (per-replica rates 28.6 and 10.9 requests/s at these levels).
    # Bought at $30k and $5k: A100s cost 4 x 5k = 20k against 60k, the A100 fleet is cheaper to own; rented at
    # the same $2/h per device, the 2 H100s cost half of the 4 A100s, the H100 fleet is cheaper to rent.
    prices = ["--quote", f"{H100}=30000 USD", "--quote", f"{A100}=5000 USD", "--rent", f"{H100}=$2/h",
              "--rent", f"{A100}=$2/h"]
    ranks = {}
    for basis in ("buy", "rent", "cheaper"):
        code, out, _ = _plan(capsys, "-d", A100, "-d", H100, *SERVE, "--rank", basis, *prices, "--json")
        assert code == 0
        rows = json.loads(out)["devices"]
        for r in rows:
            buy, rent = r["cost_per_million_usd"], r["rented_per_million_usd"]
            want = {"buy": buy, "rent": rent, "cheaper": min(buy, rent)}[basis]
            assert r["rank_cost_per_million_usd"] == pytest.approx(want)
        costs = [r["rank_cost_per_million_usd"] for r in rows]
        assert costs == sorted(costs) and [r["rank"] for r in rows] == [1, 2]
        ranks[basis] = [r["id"] for r in rows]
        by_id = {r["id"]: r for r in rows}
        assert by_id[H100]["replicas"] == 2 and by_id[A100]["replicas"] == 4
        # rented per million: devices x 2/3600 USD/s / (40 x 256 tokens/s) x 1e6
        assert by_id[A100]["rented_per_million_usd"] == pytest.approx(4 * 2 / 3600 / (40 * 256) * 1e6)
    assert ranks["buy"] == [A100, H100] and ranks["rent"] == [H100, A100] and ranks["cheaper"] == [A100, H100]


def test_a_device_that_cannot_meet_the_slo_says_why(capsys):
    # Llama-3-8B fp16 on an L4: one decode step streams the weights but the embedding table (a decode token reads
    # one row of it): (8.03e9 - 128256 x 4096) params x 2 bytes / 300 GB/s = 50.0 ms (NVIDIA L4 datasheet:
    # 300 GB/s), over a 20 ms TPOT target at any load
    code, out, _ = _plan(capsys, "-d", L4, "-d", H100, "--rate", "5/s", "--input", "512", "--output", "128",
                         "--tpot-p90", "20ms", "--json")
    assert code == 0
    rows = {r["id"]: r for r in json.loads(out)["devices"]}
    l4 = rows[L4]
    assert not l4["feasible"] and l4["replicas"] is None and l4["slo_rate_per_s"] == 0.0
    assert l4["rank"] == 2 and "TPOT P90" in l4["reason"] and "any load" in l4["reason"]
    lone_ms = float(l4["reason"].split("TPOT P90 ")[1].split(" ms")[0])
    assert lone_ms >= (8.03e9 - 128256 * 4096) * 2 / 300e9 * 1e3 * 0.99
    assert rows[H100]["feasible"] and rows[H100]["rank"] == 1


def test_a_model_whose_weights_leave_no_kv_cache_says_so(capsys):
    # Llama-3-70B fp16: 70.6e9 params x 2 bytes = 141 GB of weights, over an L4's 24 GB
    code = main(["plan", "llama3-70b", "-d", L4, "--rate", "1/s", "--tpot-p90", "100ms", "--json"])
    out = capsys.readouterr().out
    assert code == 0
    (row,) = json.loads(out)["devices"]
    assert not row["feasible"] and row["replicas"] is None and "no room for the KV cache" in row["reason"]


def test_text_output_names_the_columns_with_units(capsys):
    code, out, _ = _plan(capsys, "-d", H100, *SERVE)
    assert code == 0 and "rate/replica [req/s]" in out and "owned [USD/M out tok]" in out


@pytest.mark.parametrize("extra,option", [
    (["--rate", "0", "--ttft-p90", "500ms"], "--rate"),
    (["--rate=-2/s", "--ttft-p90", "500ms"], "--rate"),
    (["--rate", "10/s", "--ttft-p90", "500 W"], "--ttft-p90"),
    (["--rate", "10/s", "--tpot-p90", "50"], "--tpot-p90"),
    (["--rate", "10/s", "--ttft-p90", "500ms", "--target", "2000 tokens/s"], "--target"),
    (["--rate", "10/s", "--ttft-p90", "500ms", "--latency", "50 ms"], "--latency"),
    (["--rate", "10/s"], "--rate"),  # no service level
    (["--rate", "10/s", "--ttft-p90", "500ms", "--max-batch", "0"], "--max-batch"),
    (["--rate", "10/s", "--ttft-p90", "500ms", "--quote", "nvidia-l4=9000 USD"], "--quote"),
    ([], "--target"),  # neither a throughput target nor a rate
])
def test_bad_input_is_one_line_naming_the_option(capsys, extra, option):
    code, _, err = _plan(capsys, "-d", H100, *extra)
    assert code == 2
    assert err.count("\n") == 1 and option in err and "Traceback" not in err
