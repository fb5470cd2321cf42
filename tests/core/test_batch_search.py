"""The planner's batch search (issue 23): the power of two that meets the latency limit at the lowest cost,
hand-computed on one dense layer that is memory-bound at every batch."""

import numpy as np
import pytest
from test_procurement import dense_model, device

from explorer.core.analysis.batch_search import batches_up_to, search_batch
from explorer.core.analysis.cost import CostAssumptions
from explorer.core.analysis.procurement import Requirements
from explorer.core.workload.layers import Context

COSTS = CostAssumptions(years=3.0, electricity_usd_per_kwh=0.10, pue=1.5, utilization=0.5)
# 1000 x 1000 FP16 weights = 2 MB; activations in + out = batch x 2000 values x 2 B = 4000 B per request.
# Peak 1000 PFLOP/s makes compute negligible, so a pass takes t(b) = (2e6 + 4000 b) B / bandwidth.


def t(b, bandwidth=1e12):
    return (2e6 + 4000 * b) / bandwidth


def search(latency=2.3e-6, cap=256, rank_by="buy"):
    devices = [device("fast", tdp="500 W"), device("slow", bw="0.5 TB/s", tdp="500 W")]
    req = Requirements(1e8, "inferences/s", latency=latency, price={"fast": 10_000.0, "slow": 1_000.0},
                       rank_by=rank_by)
    return search_batch(dense_model(1000, 1000), devices, "fp16", Context(), req, COSTS, cap=cap)


def test_the_cheapest_batch_meeting_the_limit_by_hand():
    s = search()
    assert s.batches == (1, 2, 4, 8, 16, 32, 64, 128, 256)
    # t(64) = 2.256 us meets 2.3 us; t(128) = 2.512 us does not. Units for 10^8 inferences/s:
    # ceil(1e8 / (64 / 2.256e-6)) = ceil(3.525) = 4 at batch 64; ceil(1e8 / (32 / 2.128e-6)) = 7 at batch 32
    assert t(64) == pytest.approx(2.256e-6) and t(128) == pytest.approx(2.512e-6)
    assert s.latency[:, 0] == pytest.approx([t(b) for b in s.batches])
    assert s.units[5:7, 0].tolist() == [7, 4]
    assert s.feasible[:, 0].tolist() == [True] * 7 + [False] * 2
    assert s.batch_of("fast") == 64
    fast = s.result.by_id("fast")
    assert fast.batch == 64 and fast.units == 4 and fast.rank == 1
    electricity = 0.375 * 3 * 365.25 * 24 * 0.10  # 500 W x 0.5 x 1.5 PUE, 3 years at $0.10/kWh
    assert fast.tco == pytest.approx(4 * (10_000 + electricity), rel=1e-12)
    assert "batch 64: the lowest cost" in s.why[0] and "at batch 128: bandwidth" in s.why[0]


def test_no_batch_meets_the_limit_is_said():
    s = search()
    # the slow device: t(1) = 4.008 us > 2.3 us at every batch
    assert not s.feasible[:, 1].any() and s.batch_of("slow") == 1
    assert "no batch from 1 to 256 meets" in s.why[1]
    assert s.result.by_id("slow").feasible is False and s.result.by_id("slow").rank == 2


def test_without_a_latency_limit_the_cap_wins_and_says_so():
    s = search(latency=None, cap=100)
    assert s.batches[-1] == 64 and s.batch_of("fast") == 64 and "the cap, 64, was reached" in s.why[0]
    assert np.all(np.diff(s.units[:, 0]) <= 0)  # more requests per pass never needs more units here


def test_cap_is_checked():
    assert batches_up_to(1) == (1,) and batches_up_to(300)[-1] == 256
    with pytest.raises(ValueError, match="max_batch"):
        batches_up_to(0)
