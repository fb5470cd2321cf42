"""``plan --quote DEV=PRICE --rent DEV=PRICE/h`` and ``analyze --price``: one money reader; bad input exits 2."""

import json

import pytest

from explorer.__main__ import main

PLAN = ["plan", "llama2-7b", "--device", "nvidia-h100-sxm5", "--device", "nvidia-l4", "--target", "2000 tokens/s",
        "--batch", "8", "--seq-len", "1024", "--json"]


def test_quote_and_rent_read_every_form(capsys):
    assert main(PLAN + ["--quote", "nvidia-h100-sxm5=$30k", "--rent", "nvidia-h100-sxm5=$4.10/h",
                        "--quote", "nvidia-l4=2,500 USD", "--budget", "1.2M USD"]) == 0
    out = json.loads(capsys.readouterr().out)
    by_id = {d["id"]: d for d in out["devices"]}
    assert by_id["nvidia-h100-sxm5"]["price_usd"] == 30000.0
    assert by_id["nvidia-l4"]["price_usd"] == 2500.0
    assert out["requirements"]["budget_usd"] == 1.2e6
    h100 = by_id["nvidia-h100-sxm5"]
    hours = 3 * 365.25 * 24
    assert h100["cloud_cost_usd"] == pytest.approx(4.10 * hours * h100["units"], rel=1e-12)


@pytest.mark.parametrize("option, value, says", [
    ("--quote", "nvidia-l4=3 GB", "--quote nvidia-l4: '3 GB' is a byte count, not a money amount"),
    ("--rent", "nvidia-l4=30k USD", "--rent nvidia-l4: '30k USD' is a money amount, not a money rate"),
    ("--quote", "nvidia-l4=lots", "--quote nvidia-l4: cannot read 'lots'"),
    ("--quote", "nvidia-l4=-5 USD", "--quote nvidia-l4: '-5 USD' must be a positive amount"),
    ("--budget", "5 kW", "--budget: '5 kW' is a power, not a money amount"),
])
def test_bad_money_is_exit_2_and_one_line(capsys, option, value, says):
    assert main(PLAN + [option, value]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and len(err.splitlines()) == 1


def test_analyze_price_reads_the_same_forms(capsys):
    args = ["analyze", "llama3-70b", "--system", "nvidia-dgx-h100", "--phase", "decode", "--batch", "16",
            "--seq-len", "4096", "--best", "cost", "--json", "--price"]
    assert main(args + ["$30k"]) == 0
    assert json.loads(capsys.readouterr().out)["cost"]["price_per_device_usd"] == 30000.0


def test_search_batch_says_which_batch_and_why(capsys):
    args = ["plan", "llama2-7b", "--device", "nvidia-h100-sxm5", "--device", "nvidia-l4", "--target",
            "2000 tokens/s", "--latency", "50 ms", "--seq-len", "1024", "--search-batch", "64", "--json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    s = out["batch_search"]
    assert s["batches"] == [1, 2, 4, 8, 16, 32, 64]
    for d in out["devices"]:
        b = s["chosen"][d["id"]]
        assert d["batch"] == b and s["why"][d["id"]].startswith(f"batch {b}: ")
        j = s["device_ids"].index(d["id"])
        row = s["batches"].index(b)
        feasible_costs = [c[j] for c, f in zip(s["rank_cost_usd"], s["feasible"]) if f[j] and c[j] is not None]
        if feasible_costs:
            assert s["rank_cost_usd"][row][j] == min(feasible_costs)
            assert s["latency_s"][row][j] <= 0.05
    assert main(args[:-1]) == 0
    assert "batch searched over 1-64 per device" in capsys.readouterr().out
    assert main(args[:-2] + ["0"]) == 2
    assert "--search-batch: expected a positive whole number" in capsys.readouterr().err


def test_sensitivity_json_and_text(capsys):
    args = PLAN + ["--quote", "nvidia-l4=$2,500", "--rent", "nvidia-h100-sxm5=$4.10/h", "--sensitivity"]
    assert main(args) == 0
    s = json.loads(capsys.readouterr().out)["sensitivity"]
    labels = [x["label"] for x in s["scenarios"]]
    assert labels[0] == "baseline" and "prices +20%" in labels and "utilization 90%" in labels
    assert "horizon 5 years" in labels and any(label.startswith("electricity 0.24 USD/kWh") for label in labels)
    h100 = next(b for b in s["break_even"] if b["id"] == "nvidia-h100-sxm5")
    # price / (rent - electricity per unit-hour), in months of 730.5 h
    assert h100["hours"] == pytest.approx(h100["price_usd"] / (4.10 - h100["electricity_usd_per_hour"]), rel=1e-12)
    assert h100["months"] == pytest.approx(h100["hours"] / 730.5, rel=1e-12)
    assert main([a for a in args if a != "--json"]) == 0  # text
    out = capsys.readouterr().out
    assert "sensitivity (buy ranking" in out and "buy vs rent break-even" in out


def test_a_project_files_quotes_feed_the_cli_and_flags_win(tmp_path, capsys):
    from explorer.core.analysis.procurement import Requirements
    from explorer.core.analysis.quotes import set_quote
    from explorer.core.session.project import Project, save_project
    from explorer.core.session.workspace import Assumptions
    from explorer.core.workload.templates import get_template

    req = set_quote(Requirements(), "nvidia-l4", price=2_500.0, cloud_price=0.5 / 3600, source="reseller, 2026-11-20")
    req = set_quote(req, "nvidia-h100-sxm5", price=28_000.0, source="Acme, 2026-11-01")
    path = tmp_path / "p.hwproj"
    save_project(Project(get_template("llama2-7b").build(), ("nvidia-l4",), Assumptions(), requirements=req), path)
    args = ["plan", str(path), "--device", "nvidia-h100-sxm5", "--device", "nvidia-l4", "--target", "2000 tokens/s",
            "--batch", "8", "--seq-len", "1024", "--json"]
    assert main(args + ["--quote", "nvidia-h100-sxm5=$30k"]) == 0
    by_id = {d["id"]: d for d in json.loads(capsys.readouterr().out)["devices"]}
    assert by_id["nvidia-l4"]["price_usd"] == 2_500.0  # from the project
    assert by_id["nvidia-h100-sxm5"]["price_usd"] == 30_000.0  # the flag wins
    assert by_id["nvidia-l4"]["cloud_cost_usd"] == pytest.approx(0.5 * 3 * 365.25 * 24 * by_id["nvidia-l4"]["units"])


def test_a_project_files_device_overrides_feed_the_cli(tmp_path, capsys):
    """The figures a user edited travel in the project (format 7): plan/analyze with the project as MODEL use them
    and name the overridden device on stderr; a device without overrides is the catalog's."""
    from explorer.core.session.project import Project, save_project
    from explorer.core.session.workspace import Assumptions
    from explorer.core.workload.templates import get_template

    path = tmp_path / "p.hwproj"
    save_project(Project(get_template("llama2-7b").build(), ("nvidia-l4",), Assumptions(),
                         device_overrides={"nvidia-l4": {"bandwidth": 150e9, "price": 2_000.0}}), path)
    args = ["--device", "nvidia-h100-sxm5", "--device", "nvidia-l4", "--batch", "1", "--seq-len", "1024",
            "--phase", "decode", "--json"]
    assert main(["analyze", "llama2-7b"] + args) == 0
    plain = {r["device"]["id"]: r for r in json.loads(capsys.readouterr().out)["results"]}
    assert main(["analyze", str(path)] + args) == 0
    captured = capsys.readouterr()
    edited = {r["device"]["id"]: r for r in json.loads(captured.out)["results"]}
    assert captured.err.strip() == ("hwexplorer: the project overrides figures of nvidia-l4: bandwidth 150 GB/s, "
                                    "price 2,000.00 USD")
    # batch-1 decode of a 7B model is memory-bound: half the L4's 300 GB/s doubles its time; the H100 is unchanged
    assert edited["nvidia-l4"]["device"]["bandwidth"] == 150e9 and plain["nvidia-l4"]["device"]["bandwidth"] == 300e9
    l4, l4_plain = edited["nvidia-l4"]["totals"], plain["nvidia-l4"]["totals"]
    assert l4["time_s"] == pytest.approx(2 * l4_plain["time_s"], rel=0.02)
    assert edited["nvidia-h100-sxm5"]["totals"] == plain["nvidia-h100-sxm5"]["totals"]
    assert main(["plan", str(path), "--device", "nvidia-l4", "--target", "100 tokens/s", "--json"]) == 0
    (l4_plan,) = json.loads(capsys.readouterr().out)["devices"]
    assert l4_plan["price_usd"] == 2_000.0
