"""The sensitivity table (issue 23): the ranking under prices +/-20 %, utilization, electricity and horizon, and
the buy vs rent break-even, hand-computed on the devices of test_procurement_rank."""

import math

import pytest
from test_procurement_rank import COSTS, ELECTRICITY, HOURS, _plan, analysis  # noqa: F401 - analysis: fixture

from explorer.core.analysis.procurement import HOURS_PER_MONTH
from explorer.core.analysis.sensitivity import sensitivity


@pytest.fixture(scope="module")
def sens(analysis):  # noqa: F811
    return sensitivity(analysis, _plan(analysis, "cheaper").requirements, COSTS)


def by_label(s, label):
    return next(x for x in s.scenarios if x.label == label)


def test_baseline_is_the_plan(sens, analysis):  # noqa: F811
    base = sens.scenarios[0]
    assert base.label == "baseline" and not base.changed
    assert base.order == tuple(d.id for d in _plan(analysis, "cheaper").ranked)  # both (rent), own (buy), tpu
    assert base.order == ("both", "own", "tpu")


def test_break_even_by_hand(sens):
    both = next(b for b in sens.break_even if b.id == "both")
    # owning: $20,000 + 500 W x 0.5 x 1.5 PUE x $0.10/kWh = $0.0375 per hour; renting $0.30 per hour
    assert both.electricity_per_hour == pytest.approx(0.0375, rel=1e-12)
    assert both.hours == pytest.approx(20_000 / (0.30 - 0.0375), rel=1e-12)  # 76,190.5 h
    assert both.months == pytest.approx(76_190.476 / 730.5, rel=1e-6) == pytest.approx(104.3, abs=0.05)
    assert HOURS_PER_MONTH == 730.5 and both.verdict == "rent"  # 104 months > the 36 of the horizon
    own, tpu = (next(b for b in sens.break_even if b.id == i) for i in ("own", "tpu"))
    assert math.isnan(own.hours) and math.isnan(tpu.hours) and own.verdict == tpu.verdict == ""


def test_a_longer_horizon_makes_buying_win(sens):
    five = by_label(sens, "horizon 5 years")
    h5 = 5 * 365.25 * 24
    # renting "both": $0.30 x 43,830 h = $13,149; owning "own": $10,000 + $0.0375 x 43,830 h = $11,643.6
    assert five.cost["both"] == pytest.approx(0.30 * h5, rel=1e-12)
    assert five.cost["own"] == pytest.approx(10_000 + 0.0375 * h5, rel=1e-12)
    assert five.order[0] == "own" and five.changed
    one = by_label(sens, "horizon 1 year")
    assert one.order == ("both", "own", "tpu") and not one.changed
    assert not sens.stable


def test_prices_utilization_and_electricity_by_hand(sens):
    up = by_label(sens, "prices +20%")
    assert up.cost["own"] == pytest.approx(12_000 + ELECTRICITY, rel=1e-12)
    assert up.cost["both"] == pytest.approx(0.36 * HOURS, rel=1e-12) and up.cost["tpu"] == pytest.approx(2.4 * HOURS)
    assert not up.changed
    down = by_label(sens, "prices -20%")
    assert down.cost["own"] == pytest.approx(8_000 + ELECTRICITY, rel=1e-12)
    u90 = by_label(sens, "utilization 90%")
    assert u90.cost["own"] == pytest.approx(10_000 + 0.675 * HOURS * 0.10, rel=1e-12)  # 500 W x 0.9 x 1.5
    assert u90.cost["both"] == pytest.approx(0.30 * HOURS, rel=1e-12)  # renting does not depend on it
    e2 = by_label(sens, "electricity 0.2 USD/kWh (x2)")
    assert e2.cost["own"] == pytest.approx(10_000 + 2 * ELECTRICITY, rel=1e-12)
    assert {x.group for x in sens.scenarios} == {"baseline", "price", "utilization", "electricity", "horizon"}
    assert [x.label for x in sens.scenarios if x.group == "utilization"] == ["utilization 30%", "utilization 60%",
                                                                             "utilization 90%"]
