"""``analyze --system S --best cost [--price USD]``: layouts ranked by cost per million tokens; bad input exits 2."""

import json

import pytest

from explorer.__main__ import main

ARGS = ["analyze", "llama3-70b", "--system", "nvidia-dgx-h100", "--phase", "decode", "--batch", "16",
        "--seq-len", "4096", "--best", "cost"]


def test_best_cost_with_a_quote_ranks_by_usd_per_million_tokens(capsys):
    assert main(ARGS + ["--price", "30000 USD", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["objective"] == "cost"
    c = out["cost"]
    assert (c["price_per_device_usd"], c["price_source"], c["tdp_W"], c["unit"]) == (30000.0, "quote", 700.0, "token")
    assert c["tco_per_device_usd"] == pytest.approx(31_723.05, abs=0.01) and c["unknown_because"] is None
    fitting = [lay for lay in out["layouts"] if lay["fits"]]
    costs = [lay["cost_per_million_usd"] for lay in fitting]
    assert costs == sorted(costs) and out["chosen"] == {k: fitting[0][k] for k in out["chosen"]}
    # 8 x TCO / (tokens/s x 0.6 x 3 years) x 10^6
    best = fitting[0]
    assert best["cost_per_million_usd"] == pytest.approx(
        8 * c["tco_per_device_usd"] / (best["throughput"] * 0.6 * 3 * 365.25 * 86400) * 1e6, rel=1e-9)


def test_best_cost_without_a_price_says_so(capsys):
    h200 = [a if a != "nvidia-dgx-h100" else "nvidia-dgx-h200" for a in ARGS]  # the catalog has no H200 price
    assert main(h200) == 0
    out = capsys.readouterr().out
    assert "cost per million tokens unknown: no price for nvidia-h200" in out
    assert "ranked by throughput per device after any priced layout" in out
    assert main(h200 + ["--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cost"]["unknown_because"].startswith("no price") and data["layouts"][0]["cost_per_million_usd"] is None


@pytest.mark.parametrize("price", ["3 GB", "-5 USD", "lots"])
def test_bad_price_is_one_line_exit_2(capsys, price):
    assert main(ARGS + ["--price", price]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--price" in err


def test_unknown_objective_is_refused(capsys):
    with pytest.raises(SystemExit) as exc:
        main(ARGS[:-1] + ["speed"])
    assert exc.value.code == 2


def test_collective_format_in_the_cli(capsys):
    base = ["analyze", "llama3-70b", "--system", "nvidia-dgx-h100", "--tp", "8", "--phase", "decode", "--batch", "16",
            "--activations", "fp8", "--json"]
    sent = {}
    for setting in ("engine", "activations"):
        assert main(base + ["--collective-format", setting]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["options"]["collective_format"] == setting
        sent[setting] = (out["options"]["collective_element_bytes"], next(iter(out["layouts"][0]["level_bytes"].values())))
    assert sent["engine"][0] == 2.0 and sent["activations"][0] == 1.0 and sent["engine"][1] == 2 * sent["activations"][1]
    with pytest.raises(SystemExit) as exc:
        main(base + ["--collective-format", "int4"])
    assert exc.value.code == 2
