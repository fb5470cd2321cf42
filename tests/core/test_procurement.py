"""The procurement planner: the chapter's three feasibility checks (E-36), sizing, costs, buy vs rent, ranking."""

import math

import pytest

from explorer.core.analysis.cost import SECONDS_PER_YEAR, CostAssumptions
from explorer.core.analysis.evaluate import evaluate
from explorer.core.analysis.procurement import (
    HOURS_PER_MONTH,
    Requirements,
    bandwidth_check,
    compute_check,
    format_usd,
    memory_check,
    parse_latency,
    parse_rate,
    plan,
)
from explorer.core.hardware.device_file import device_from_dict
from explorer.core.units import UnitError
from explorer.core.workload.model import LayerSpec, Model

COSTS = CostAssumptions(years=3.0, electricity_usd_per_kwh=0.10, pue=1.5, utilization=0.5)


def dense_model(fin, fout, name="dense"):
    """One bias-free dense layer: fin x fout parameters, 2 x fin x fout FLOPs per inference."""
    return Model.make(name, {"features": fin}, [LayerSpec.make("dense", "fc", in_features=fin, out_features=fout,
                                                               bias=False)])


def device(id_, peak="1000 PFLOP/s", bw="1 TB/s", capacity="80 GB", **extra):
    data = {"id": id_, "name": id_.upper(), "vendor": "test", "kind": "gpu", "peak": {"fp16": peak},
            "memory": [{"name": "HBM", "role": "offchip", "capacity": capacity, "bandwidth": bw}]}
    data.update(extra)
    return device_from_dict(data)


# --------------------------------------------------------------------------- the chapter's checks (E-36)
def test_memory_7b_fp16_on_16gb_leaves_2gb_headroom():
    check = memory_check(7e9 * 2, 0.0, 0.0, 16e9)
    assert check.value == 14e9 and check.status == "pass" and check.passed is True
    assert check.limit - check.value == 2e9
    assert "14 GB" in check.detail and "headroom 2 GB" in check.detail


def test_memory_7b_through_the_planner():
    # 7e9 parameters in one dense layer (70,000 x 100,000): 14 GB of FP16 weights plus 340 kB of activations
    analysis = evaluate(dense_model(70_000, 100_000), [device("gpu16", capacity="16 GB")], "fp16")
    (p,) = plan(analysis, Requirements(1.0, "inferences/s"), COSTS).devices
    mem = p.checks[0]
    assert mem.name == "memory" and mem.status == "pass"
    assert mem.value == pytest.approx(14e9 + (70_000 + 100_000) * 2)
    assert mem.limit - mem.value == pytest.approx(2e9, abs=1e6)
    assert p.shards == 1


def test_bandwidth_70b_fp16_at_1tbs_fails_a_50ms_target():
    check = bandwidth_check(70e9 * 2, 1e12, 0.050)
    assert check.value == pytest.approx(0.140) and check.status == "fail"
    assert "140 ms" in check.detail and "50 ms" in check.detail


def test_bandwidth_70b_through_the_planner_fails_regardless_of_compute():
    analysis = evaluate(dense_model(100_000, 700_000), [device("big", bw="1 TB/s", capacity="192 GB")], "fp16")
    (p,) = plan(analysis, Requirements(1.0, "inferences/s", latency=0.050), COSTS).devices
    bw, comp = p.checks[1], p.checks[2]
    assert bw.value == pytest.approx(0.140, rel=1e-4) and bw.status == "fail"
    assert comp.status == "pass"  # 140 GFLOP on 1 EFLOP/s: compute is not the problem
    assert p.feasible is False and "bandwidth" in p.reason and "140 ms" in p.reason


def test_30_fps_is_a_33_3_ms_frame_budget():
    assert parse_latency("30 FPS") == pytest.approx(1 / 30)
    assert parse_latency("30 Hz") == pytest.approx(1 / 30)
    assert parse_latency("50 ms") == pytest.approx(0.050)
    check = compute_check(2e6, 50e6, 1.0, 1 / 30)  # 2 MFLOP on 50 MFLOP/s: 40 ms > 33.3 ms
    assert check.value == pytest.approx(0.040) and check.status == "fail"
    assert "33.33 ms" in check.detail
    assert compute_check(2e6, 100e6, 1.0, 1 / 30).status == "pass"  # 20 ms


def test_compute_check_through_the_planner_uses_flops_over_peak():
    # 1000 x 1000 dense: 2 MFLOP per frame; a device without a matrix engine maps at efficiency 1
    analysis = evaluate(dense_model(1000, 1000), [device("mcu", peak="50 MFLOP/s", bw="10 GB/s")], "fp16")
    (p,) = plan(analysis, Requirements(30.0, "inferences/s", latency=parse_latency("30 FPS")), COSTS).devices
    comp = p.checks[2]
    assert comp.value == pytest.approx(2e6 / 50e6) and comp.limit == pytest.approx(1 / 30)
    assert comp.status == "fail" and p.feasible is False


def test_checks_without_a_latency_limit_are_not_applicable():
    check = bandwidth_check(1e9, 1e12, None)
    assert check.status == "n/a" and check.passed is None and check.value == pytest.approx(1e-3)


# --------------------------------------------------------------------------------------------- sizing
def test_units_are_target_over_throughput_rounded_up():
    # memory-bound: (1024*1024 + 2*1024) x 2 B = 2,101,248 B at 1 TB/s = 2.101 us -> 475,907 inferences/s
    analysis = evaluate(dense_model(1024, 1024), [device("a")], "fp16")
    result = plan(analysis, Requirements(1e6, "inferences/s"), COSTS)
    (p,) = result.devices
    assert p.throughput_per_unit == pytest.approx(1e12 / 2_101_248)
    assert p.units == 3 == math.ceil(1e6 / p.throughput_per_unit)
    exact = Requirements(2 * 1e12 / 2_101_248, "inferences/s")  # exactly two units' worth
    assert plan(analysis, exact, COSTS).devices[0].units == 2


def test_a_model_larger_than_memory_is_sharded_in_replicas():
    # 140 GB of weights on 80 GB units: replicas of 2; each replica reads 70 GB per unit in parallel
    analysis = evaluate(dense_model(100_000, 700_000), [device("h", capacity="80 GB", bw="1 TB/s")], "fp16")
    (p,) = plan(analysis, Requirements(10.0, "inferences/s", latency=0.1), COSTS).devices
    mem, bw = p.checks[0], p.checks[1]
    assert mem.status == "fail" and "split over 2 units" in mem.detail and "short by" in mem.detail
    assert p.shards == 2
    assert bw.value == pytest.approx(0.070, rel=1e-4) and bw.status == "pass"
    replica = 2 * p.throughput_per_unit  # ~14.3 inferences/s per replica of two
    assert p.units == 2 * math.ceil(10.0 / replica) == 2
    assert p.feasible is True and math.isnan(p.tco)  # the checks pass; without price and TDP it is not costed
    assert p.reason == "feasible with 2 units (1 replica of 2) but not costed: no list price (enter a quote), TDP"
    assert "list price (enter a quote)" in p.missing and "TDP" in p.missing


# ----------------------------------------------------------------------------------------------- money
def test_capital_energy_tco_and_cost_per_million():
    analysis = evaluate(dense_model(1024, 1024), [device("a", tdp="500 W")], "fp16")
    req = Requirements(1e6, "inferences/s", price={"a": 10_000.0})
    (p,) = plan(analysis, req, COSTS).devices
    hours = 3 * SECONDS_PER_YEAR / 3600  # 26,298 h
    energy_per_unit = 500 * 0.5 * 1.5 * hours / 1000 * 0.10  # 375 W average at the wall: $986.18
    assert p.units == 3 and p.capital == 30_000.0
    assert p.energy_cost == pytest.approx(3 * energy_per_unit)
    assert p.tco == pytest.approx(30_000 + 3 * energy_per_unit)
    assert p.fleet_power == pytest.approx(3 * 500 * 1.5)
    served = 1e6 * 0.5 * 3 * SECONDS_PER_YEAR
    assert p.cost_per_million == pytest.approx(p.tco / served * 1e6)


def test_buy_versus_rent_break_even():
    analysis = evaluate(dense_model(1024, 1024), [device("a", tdp="500 W")], "fp16")
    req = Requirements(1e6, "inferences/s", price={"a": 10_000.0}, cloud_price={"a": 2.0 / 3600})
    (p,) = plan(analysis, req, COSTS).devices
    # owning costs 375 W x $0.10/kWh = $0.0375 per hour on top of the price; renting $2.00 per hour
    assert p.break_even_hours == pytest.approx(10_000 / (2.0 - 0.0375))  # 5,095.5 h
    assert p.break_even_months == pytest.approx(5095.54 / HOURS_PER_MONTH, rel=1e-5)  # 6.98 months
    assert p.buy_or_rent == "buy"
    assert p.cloud_cost == pytest.approx(3 * 2.0 * 3 * SECONDS_PER_YEAR / 3600)
    cheap = Requirements(1e6, "inferences/s", price={"a": 10_000.0}, cloud_price={"a": 0.03 / 3600})
    (q,) = plan(analysis, cheap, COSTS).devices
    assert q.break_even_hours == math.inf and q.buy_or_rent == "rent"


def test_budget_and_power_cap_make_a_plan_infeasible_with_the_reason():
    analysis = evaluate(dense_model(1024, 1024), [device("a", tdp="500 W")], "fp16")
    req = Requirements(1e6, "inferences/s", budget=25_000.0, power_cap=2000.0, price={"a": 10_000.0})
    (p,) = plan(analysis, req, COSTS).devices
    assert p.within_budget is False and p.within_power is False and p.feasible is False
    assert "capital $30k is over the $25k budget" in p.reason
    assert "2.25 kW is over the 2 kW power cap" in p.reason
    node = Requirements(1e6, "inferences/s", power_cap=600.0, power_scope="node", price={"a": 10_000.0})
    assert plan(analysis, node, COSTS).devices[0].within_power is True  # one unit: 500 W <= 600 W
    tco = Requirements(1e6, "inferences/s", budget=30_500.0, budget_covers="tco", price={"a": 10_000.0})
    assert plan(analysis, tco, COSTS).devices[0].within_budget is False  # $30k + $2,959 of electricity


# --------------------------------------------------------------------------------------------- ranking
def test_ranking_orders_feasible_by_tco_and_says_why():
    devs = [device("slow", bw="0.5 TB/s", tdp="300 W"), device("fast", bw="2 TB/s", tdp="700 W"),
            device("unpriced", bw="1 TB/s", tdp="400 W"), device("laggy", bw="1 GB/s", tdp="100 W")]
    analysis = evaluate(dense_model(1024, 1024), devs, "fp16")
    req = Requirements(1e6, "inferences/s", latency=1e-3,
                       price={"slow": 4_000.0, "fast": 20_000.0, "laggy": 100.0})
    result = plan(analysis, req, COSTS)
    ranked = result.ranked
    assert [d.id for d in ranked] == ["slow", "fast", "unpriced", "laggy"]
    assert [d.rank for d in ranked] == [1, 2, 3, 4]
    slow, fast, unpriced, laggy = ranked
    assert slow.units == 5 and fast.units == 2  # 237,953 and 951,814 inferences/s per unit
    assert slow.reason.startswith("cheapest feasible option: 5 units")
    assert fast.reason.startswith("feasible, TCO") and "more than #1" in fast.reason
    assert unpriced.reason.startswith("feasible with") and "list price" in unpriced.reason
    assert laggy.feasible is False and laggy.reason.startswith("infeasible: bandwidth")
    assert [d.id for d in result.devices] == ["slow", "fast", "unpriced", "laggy"]  # input order kept


def test_missing_figures_are_named():
    no_bw = device_from_dict({"id": "nobw", "name": "NoBW", "vendor": "t", "kind": "npu",
                              "peak": {"int8": "100 TOP/s"},
                              "memory": [{"name": "DRAM", "role": "offchip", "capacity": "8 GB"}]})
    analysis = evaluate(dense_model(256, 256), [no_bw], "fp16")
    (p,) = plan(analysis, Requirements(100.0, "inferences/s", latency=0.01), COSTS).devices
    assert p.feasible is None and p.units == 0
    assert p.checks[1].status == "unknown" and p.checks[1].missing == "memory bandwidth"
    assert p.checks[2].missing == "fp16 peak"
    assert "memory bandwidth" in p.reason and "fp16 peak" in p.reason


# ------------------------------------------------------------------------------------------------ input
def test_parse_rate_reads_tokens_and_inferences():
    assert parse_rate("2000 tokens/s") == (2000.0, "tokens/s")
    assert parse_rate("1.5k tok/s") == (1500.0, "tokens/s")
    assert parse_rate("30 FPS") == (30.0, "inferences/s")
    assert parse_rate("500 inferences/s") == (500.0, "inferences/s")
    for bad in ("2000", "2000 kg", "-5 tokens/s", ""):
        with pytest.raises(UnitError, match="target"):
            parse_rate(bad)


def test_bad_requirements_name_the_field():
    with pytest.raises(ValueError, match="target"):
        Requirements(0.0)
    with pytest.raises(ValueError, match="pue"):
        Requirements(1.0, pue=0.9)
    with pytest.raises(ValueError, match="power_scope"):
        Requirements(1.0, power_scope="rack")
    with pytest.raises(ValueError, match=r"cloud_price\[x\]"):
        Requirements(1.0, cloud_price={"x": -1.0})
    analysis = evaluate(dense_model(64, 64), [device("a")], "fp16")
    with pytest.raises(ValueError, match="target: given in tokens/s"):
        plan(analysis, Requirements(1.0, "tokens/s"), COSTS)
    with pytest.raises(ValueError, match="no selected device has the id zz"):
        plan(analysis, Requirements(1.0, "inferences/s", price={"zz": 1.0}), COSTS)


def test_decode_counts_tokens_and_plan_takes_workspace_assumptions():
    from explorer.core.session.workspace import Assumptions
    from explorer.core.workload.templates import get_template

    template = get_template("gpt2")
    analysis = evaluate(template.build(), [device("a", tdp="400 W")], "fp16", template.context(phase="decode"))
    result = plan(analysis, Requirements(2000.0, "tokens/s", years=5.0), Assumptions(pue=1.2))
    assert result.unit == "tokens/s"
    assert result.cost.years == 5.0 and result.cost.pue == 1.2 and result.cost.electricity_usd_per_kwh == 0.12


def test_format_usd():
    assert [format_usd(x) for x in (950, 13_386.1, 1_250_000, math.nan)] == ["$950", "$13.4k", "$1.25M", "\u2014"]


def test_check_verdict_reads_a_split_memory_check_as_split_and_nothing_else():
    from explorer.core.analysis.procurement import check_verdict

    short = memory_check(14e9, 0.0, 0.0, 8e9)  # 14 GB on 8 GB: fails for one unit
    assert short.status == "fail"
    assert check_verdict(short, 1) == ("fail", "FAIL")  # not split: a failure
    assert check_verdict(short, 2) == ("split", "SPLIT OVER 2 UNITS")
    slow = bandwidth_check(140e9, 1e12, 0.05, shards=2)  # 70 ms against 50 ms: a failure however many units
    assert check_verdict(slow, 2) == ("fail", "FAIL")
    assert check_verdict(memory_check(1e9, 0, 0, math.nan), 1) == ("unknown", "MISSING")
    assert check_verdict(bandwidth_check(1e9, 1e12, None), 1) == ("n/a", "N/A")
