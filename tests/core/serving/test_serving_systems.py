"""Serving on the session's systems (explorer/core/serving/system_serving.py, ``Results.serving_systems``): the numbers
are ``hwexplorer plan --rate ... --system S --json``'s, row for row and layout for layout; the chosen layout's answer
is one replica of tp x pp devices at the whole rate; a rate or a quote edit re-sizes without rebuilding a surface; a
CNN is refused at once; two threads asking at once compute the setups once."""

from __future__ import annotations

import contextlib
import io
import json
import math
import threading
from dataclasses import replace

import pytest

from explorer.__main__ import main
from explorer.core.hardware.catalog_files import load_shipped_systems
from explorer.core.serving import system_serving
from explorer.core.serving.fleet import slo_rate
from explorer.core.session.results import DEPENDS, Results
from explorer.core.session.serving_choice import ServingChoice
from explorer.core.session.state import State, SystemChoice
from explorer.core.workload.templates import get_template

L4_SERVER, DGX = "pcie-server-4x-nvidia-l4", "nvidia-dgx-h100"
SYSTEMS = {s.id: s for s in load_shipped_systems()}
CHOICE = ServingChoice(rate=10.0, input_tokens=1024, output_tokens=256, ttft=0.5, tpot=0.05)
QUOTE = 25000.0  # USD per H100: a test input (the catalog states no list price for the L4)
CLI = ["--rate", "10/s", "--input", "1024", "--output", "256", "--ttft-p90", "500ms", "--tpot-p90", "50ms"]


def _results(devices, model, choice=CHOICE, quotes=None, ids=(L4_SERVER, DGX)) -> Results:
    state = State(model=model, system=SystemChoice(system_ids=ids), serving=choice)
    if quotes:
        state = replace(state, requirements=replace(state.requirements, price=quotes))
    hardware = tuple((SYSTEMS[i], devices[SYSTEMS[i].device_id]) for i in ids)
    return Results(state, [], hardware=hardware)


@pytest.fixture(scope="module")
def cli_plan():
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["plan", "llama3-8b", "--system", L4_SERVER, "--system", DGX, *CLI,
                     "--quote", f"nvidia-h100-sxm5={QUOTE:g} USD", "--json"])
    assert code == 0
    return {r["id"]: r for r in json.loads(buf.getvalue())["devices"]}


@pytest.fixture(scope="module")
def served(devices, llama8b):
    return _results(devices, llama8b, quotes={"nvidia-h100-sxm5": QUOTE}).serving_systems


def _num(x):
    return None if not math.isfinite(x) else x


def test_every_number_is_the_clis(served, cli_plan):
    assert [s.system.id for s in served] == [L4_SERVER, DGX]
    for s in served:
        row = cli_plan[s.system.id]
        f = s.fleet
        assert s.label == row["layout_label"] and s.chosen.replica_devices == row["replica_devices"]
        assert s.chosen.feasible == row["feasible"]
        assert f.slo_rate == row["slo_rate_per_s"]  # the same functions on the same inputs: equal, not close
        assert f.replicas == row["replicas"] and s.chosen.devices == row["devices"] and s.chosen.nodes == row["nodes"]
        assert _num(f.capital) == row["capital_usd"] and _num(f.tco) == row["tco_usd"]
        assert _num(f.cost_per_million) == row["cost_per_million_usd"]
        assert _num(f.rented_per_million) == row["rented_per_million_usd"]
        assert [x.label for x in s.fleets] == [x["label"] for x in row["layouts"]]
        for x, y in zip(s.fleets, row["layouts"]):
            assert (x.fleet.slo_rate if x.fleet else 0.0) == y["slo_rate_per_s"]
            assert (x.devices if x.feasible else None) == y["devices"]


def test_the_chosen_layouts_by_hand(served):
    l4, dgx = served
    # one L4 misses TPOT 50 ms alone; TP2 and TP4 both need 8 L4 (4 x 2.84 and 2 x 6.35 req/s), unpriced: the
    # tie goes to the faster replica
    assert l4.label == "TP4 PP1" and l4.fleet.replicas == math.ceil(10 / l4.fleet.slo_rate) == 2
    assert l4.chosen.devices == 8 and l4.chosen.nodes == 2 and math.isnan(l4.fleet.cost_per_million)
    assert l4.reason == "no price (no quote, no list price in the catalog)"
    assert next(x for x in l4.fleets if x.label == "TP1 PP1").reason == "no load meets the service levels"
    # priced H100s: one H100 meets the service levels at 28.6 req/s, the cheapest per million tokens
    assert dgx.label == "TP1 PP1" and dgx.fleet.replicas == 1 and dgx.chosen.devices == 1
    assert dgx.fleet.capital == QUOTE and dgx.reason == ""
    costs = [x.fleet.cost_per_million for x in dgx.fleets if x.feasible]
    assert dgx.fleet.cost_per_million == min(costs)


def test_the_answer_is_one_replica_of_the_chosen_layout_at_the_whole_rate(served):
    for s in served:
        a = s.answer
        assert a.setup.replicas == 1 and a.setup.surface.devices == s.chosen.replica_devices
        assert a.estimate.rate == CHOICE.rate and a.estimate.devices == s.chosen.replica_devices
        assert a.estimate.throughput_per_device == pytest.approx(a.estimate.throughput / s.chosen.replica_devices)
        # the knee of the load curve is the highest rate of its grid meeting every level: at most the replica's
        # service-level rate (found by bisection), and within one grid step of it
        knee = a.curve.rates[a.curve.knee]
        step = a.curve.rates[1] - a.curve.rates[0]
        assert knee <= s.fleet.slo_rate * (1 + 1e-9) and s.fleet.slo_rate - knee <= step * 1.01
        assert slo_rate(CHOICE.workload, a.setup, CHOICE.slo) == s.fleet.slo_rate


def test_a_rate_or_quote_edit_resizes_without_a_new_surface(devices, llama8b, served):
    r = _results(devices, llama8b, quotes={"nvidia-h100-sxm5": QUOTE})
    assert r.serving_ready("serving_systems")  # kept by the module fixture's run
    assert r.serving_systems[1] is served[1]
    misses = system_serving.SETUPS.misses
    faster = _results(devices, llama8b, replace(CHOICE, rate=40.0), {"nvidia-h100-sxm5": QUOTE})
    assert not faster.serving_ready("serving_systems")
    _l4, dgx = faster.serving_systems
    assert system_serving.SETUPS.misses == misses  # the same setups: no system pass ran
    kept = {id(x.answer.setup.surface) for x in served} | {id(s.surface) for _, s in system_serving.system_setups(
        llama8b, SYSTEMS[DGX], devices["nvidia-h100-sxm5"], CHOICE.workload, CHOICE.policy)}
    assert id(dgx.answer.setup.surface) in kept and dgx.answer.estimate.rate == 40.0
    # two H100 either way (TP1: 2 x 28.6 req/s, TP2: 1 x 50.6 req/s): the owned cost decides, energy being the
    # only difference
    assert dgx.chosen.devices == 2 and dgx.fleet.replicas == math.ceil(40 / dgx.fleet.slo_rate)
    assert dgx.fleet.cost_per_million == min(x.fleet.cost_per_million for x in dgx.fleets if x.feasible)
    dear = _results(devices, llama8b, quotes={"nvidia-h100-sxm5": 4 * QUOTE}).serving_systems[1]
    assert dear.fleet.capital == 4 * QUOTE and dear.label == "TP1 PP1"
    assert system_serving.SETUPS.misses == misses
    assert "hardware" in DEPENDS["serving_systems"] and "requirements.price" in DEPENDS["serving_systems"]
    assert _results(devices, llama8b, ids=()).serving_systems == ()


def test_a_cnn_is_refused_at_once(devices):
    r = _results(devices, get_template("resnet50").build(), ids=(DGX,))
    assert r.serving_ready("serving_systems")
    with pytest.raises(ValueError, match="not a token model"):
        _ = r.serving_systems


def test_two_threads_compute_the_setups_once(devices, llama8b, monkeypatch):
    calls = []
    real = system_serving._compute_setups

    def counted(*args):
        calls.append(args[1].id)
        return real(*args)

    monkeypatch.setattr(system_serving, "_compute_setups", counted)
    system = SYSTEMS[L4_SERVER]
    short = replace(CHOICE, input_tokens=128, output_tokens=32)  # a key no other test keeps
    out = [None, None]

    def ask(i):
        out[i] = system_serving.system_setups(llama8b, system, devices[system.device_id], short.workload,
                                              short.policy)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == [L4_SERVER] and out[0] is out[1]
    assert [lay.tp for lay, _ in out[0]] == [1, 2, 4]
