"""Ranking by buy TCO, rent cost or the cheaper of the two (issue 23): rent-only devices are rankable and a
device without the price a ranking needs is listed as unpriced, naming the price it lacks. Hand-computed."""

import math

import pytest
from test_procurement import dense_model, device

from explorer.core.analysis.cost import CostAssumptions
from explorer.core.analysis.evaluate import evaluate
from explorer.core.analysis.procurement import Requirements, plan

COSTS = CostAssumptions(years=3.0, electricity_usd_per_kwh=0.10, pue=1.5, utilization=0.5)
HOURS = 3 * 365.25 * 24  # 26,298 h in three Julian years
# owning: 500 W x 0.5 utilization x 1.5 PUE = 0.375 kW at the wall; x 26,298 h x $0.10/kWh = $986.175
ELECTRICITY = 0.375 * HOURS * 0.10


@pytest.fixture(scope="module")
def analysis():
    devices = [device("own", tdp="500 W"),  # bought only
               device("tpu", tdp="500 W"),  # rented only, like a TPU
               device("both", tdp="500 W")]  # both prices
    return evaluate(dense_model(1000, 1000), devices, "fp16")


def _plan(analysis, rank_by, **extra):
    req = Requirements(1.0, "inferences/s", price={"own": 10_000.0, "both": 20_000.0},
                       cloud_price={"tpu": 2.0 / 3600, "both": 0.3 / 3600}, rank_by=rank_by, **extra)
    return plan(analysis, req, COSTS)


def test_hand_computed_costs(analysis):
    r = _plan(analysis, "buy")
    assert [d.units for d in r.devices] == [1, 1, 1]  # one unit reaches 1 inference/s
    assert ELECTRICITY == pytest.approx(986.175, rel=1e-12)
    assert r.by_id("own").tco == pytest.approx(10_000 + ELECTRICITY, rel=1e-12)
    assert r.by_id("tpu").cloud_cost == pytest.approx(2.0 * HOURS, rel=1e-12)  # $52,596
    assert r.by_id("both").cloud_cost == pytest.approx(0.3 * HOURS, rel=1e-12)  # $7,889.40
    assert r.by_id("own").lacks == ("rent price",) and r.by_id("tpu").lacks == ("purchase price",)
    assert r.by_id("both").lacks == ()


def test_rank_by_buy_lists_the_rent_only_device_as_unpriced(analysis):
    r = _plan(analysis, "buy")
    assert [d.id for d in r.ranked] == ["own", "both", "tpu"]
    tpu = r.by_id("tpu")
    assert tpu.rank_basis == "" and math.isnan(tpu.rank_cost)
    assert "not costed: no list price (enter a quote)" in tpu.reason
    assert r.by_id("both").rank_cost == pytest.approx(20_000 + ELECTRICITY, rel=1e-12)


def test_rank_by_rent_ranks_the_rent_only_device(analysis):
    r = _plan(analysis, "rent")
    assert [d.id for d in r.ranked] == ["both", "tpu", "own"]
    tpu = r.by_id("tpu")
    assert tpu.rank_basis == "rent" and tpu.rank_cost == pytest.approx(2.0 * HOURS, rel=1e-12)
    assert "rent only: no purchase price" in tpu.reason
    assert "not costed for renting: no cloud price" in r.by_id("own").reason
    # cost per million inferences on the ranking's basis: rent / (1 inference/s x 0.5 x 3 years) x 10^6
    assert tpu.rank_cost_per_million == pytest.approx(2.0 * HOURS / (0.5 * HOURS * 3600) * 1e6, rel=1e-12)


def test_rank_by_cheaper_takes_each_devices_cheaper_basis(analysis):
    r = _plan(analysis, "cheaper")
    assert [(d.id, d.rank_basis) for d in r.ranked] == [("both", "rent"), ("own", "buy"), ("tpu", "rent")]
    assert [d.rank_cost for d in r.ranked] == pytest.approx([0.3 * HOURS, 10_000 + ELECTRICITY, 2.0 * HOURS])
    assert all(d.feasible for d in r.ranked)


def test_a_budget_on_the_rent_basis_pays_the_rent(analysis):
    r = _plan(analysis, "rent", budget=50_000.0)
    assert r.by_id("tpu").within_budget is False and "rent $52.6k is over the $50k budget" in r.by_id("tpu").reason
    assert r.by_id("both").within_budget is True


def test_rank_by_is_checked():
    with pytest.raises(ValueError, match="rank_by: expected one of buy, rent, cheaper"):
        Requirements(rank_by="lease")


def test_rank_by_round_trips_through_the_project_file():
    from explorer.core.session.project import requirements_from_dict, requirements_to_dict

    req = Requirements(2000.0, "tokens/s", price={"own": 10_000.0}, cloud_price={"tpu": 2.0 / 3600},
                       rank_by="cheaper")
    data = requirements_to_dict(req)
    assert data["rank_by"] == "cheaper"
    assert requirements_from_dict(data) == req
    assert "rank_by" not in requirements_to_dict(Requirements())  # the default is not written: old files unchanged
    with pytest.raises(ValueError, match="rank_by"):
        requirements_from_dict({"rank_by": "lease"})
