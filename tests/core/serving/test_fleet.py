"""The planner's serving fleet: per device the fewest replicas meeting the service levels, and their cost, against
hand-computed cases."""

import math

import pytest

from explorer.core.parallel.layout_cost import JOULES_PER_KWH
from explorer.core.serving.analytic import capacity, estimate
from explorer.core.serving.fleet import SECONDS_PER_YEAR, size_fleet, slo_rate
from explorer.core.serving.serve import device_setup
from explorer.core.serving.workload import SLO, Lengths, Workload
from explorer.core.session.results import Results
from explorer.core.session.serving_choice import ServingChoice
from explorer.core.session.state import State

W = Workload(rate=40.0, lengths=Lengths.fixed(1024, 256))
SLO_ = SLO(ttft=0.5, tpot=0.05)


@pytest.fixture(scope="module")
def setups(devices, llama8b):
    ids = ("nvidia-l4", "nvidia-a100-sxm4-80gb", "nvidia-h100-sxm5")
    return [devices[i] for i in ids], [device_setup(llama8b, devices[i], W) for i in ids]


def test_the_slo_rate_is_the_edge_of_meeting_every_target(setups):
    _, (l4, a100, h100) = setups
    for s in (a100, h100):
        r = slo_rate(W, s, SLO_)
        assert 0 < r <= capacity(W, s)
        below, above = estimate(W, s, SLO_, [r * 0.999, r * 1.01])
        assert below.slo_met and below.stable and not (above.slo_met and above.stable)
    assert slo_rate(W, l4, SLO_) == 0.0  # the L4's decode step alone is over 50 ms: no load meets TPOT 50 ms
    assert slo_rate(W, h100, SLO(ttft=10.0)) == pytest.approx(capacity(W, h100), rel=1e-6)  # TTFT-bound: capacity


def test_fleet_replicas_and_costs_by_hand(setups):
    devices, ss = setups
    rows = {r.device_id: r for r in size_fleet(W, ss, devices, SLO_, {"nvidia-h100-sxm5": 25000.0}, 3.0, 0.12, 1.3)}
    h = rows["nvidia-h100-sxm5"]
    per = slo_rate(W, ss[2], SLO_)
    assert h.replicas == math.ceil(40.0 / per) and h.capital == h.replicas * 25000.0 and h.price_source == "quote"
    busy = estimate(W, ss[2], SLO_, [40.0 / h.replicas])[0].busy_share
    seconds = 3.0 * SECONDS_PER_YEAR
    tco = h.capital + h.replicas * 700.0 * busy * 1.3 * seconds / JOULES_PER_KWH * 0.12
    assert h.tco == pytest.approx(tco, rel=1e-12)
    assert h.cost_per_million == pytest.approx(tco / (40.0 * 256 * seconds) * 1e6, rel=1e-12)
    cloud = devices[2].cloud_price.value
    assert h.rented_per_million == pytest.approx(h.replicas * cloud / (40.0 * 256) * 1e6, rel=1e-12)
    l4 = rows["nvidia-l4"]
    assert l4.replicas == 0 and not l4.feasible and "service levels" in l4.reason
    order = [r.device_id for r in size_fleet(W, ss, devices, SLO_, {"nvidia-h100-sxm5": 25000.0})]
    assert order[-1] == "nvidia-l4"  # infeasible last


def test_the_results_entry_reads_the_state(devices, llama8b):
    h100 = devices["nvidia-h100-sxm5"]
    state = State(model=llama8b, device_ids=(h100.id,), serving=ServingChoice(rate=40.0))
    r = Results(state, [h100])
    fleet = r.serving_fleet
    assert fleet[0].replicas == math.ceil(40.0 / slo_rate(W, r.serving_setups[0], SLO_))
