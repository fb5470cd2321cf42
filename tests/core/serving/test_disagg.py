"""Disaggregated prefill and decode pools: the KV transfer by hand, one request through both pools, the pool search."""

import dataclasses

import numpy as np
import pytest

from explorer.core.serving.analytic import Setup
from explorer.core.serving.disagg import (
    KvLink,
    kv_bytes_per_token,
    search_pools,
    simulate_disaggregated,
    summarize_disaggregated,
)
from explorer.core.serving.memory import ReplicaMemory
from explorer.core.serving.serve import device_setup
from explorer.core.serving.simulate import Policy
from explorer.core.serving.surface import StepSurface
from explorer.core.serving.workload import SLO, Lengths, Workload

BIG = ReplicaMemory(capacity=1e15, utilization=0.9, weights=0.0, activation=0.0, kv_per_token=131072.0)


def test_kv_transfer_of_a_llama3_8b_prompt_by_hand(devices, llama8b):
    """2 (K, V) x 32 layers x 8 KV heads x 128 head dim x 1024 tokens x 2 B = 134,217,728 B; over 50 GB/s per
    direction with 10 us latency: 10 us + 2.684 ms."""
    setup = device_setup(llama8b, devices["nvidia-h100-sxm5"], Workload(lengths=Lengths.fixed(1024, 16)))
    per_token = kv_bytes_per_token(setup)
    assert per_token == 2 * 32 * 8 * 128 * 2
    link = KvLink(50e9, 10e-6)
    assert float(link.seconds(per_token * 1024)) == pytest.approx(10e-6 + 134_217_728 / 50e9)
    with pytest.raises(ValueError, match="--kv-link"):
        KvLink(0.0)


def test_one_request_through_both_pools():
    """Prefill steps 20 ms, decode steps 5 ms, 1024-token prompt over 50 GB/s (2.684 ms): TTFT = 20 ms;
    the 99 later tokens finish 2.684 ms + 99 x 5 ms after the first."""
    pre = Setup(StepSurface.constant(0.02), BIG, Policy())
    dec = Setup(StepSurface.constant(0.005), BIG, Policy())
    w = Workload(rate=0.01, arrival="constant", lengths=Lengths.fixed(1024, 100))
    link = KvLink(50e9)
    run = simulate_disaggregated(w, pre, dec, link, 3)
    transfer = 131072 * 1024 / 50e9
    np.testing.assert_allclose(run.first - run.requests.arrival, 0.02)
    np.testing.assert_allclose(run.finish - run.first, transfer + 99 * 0.005)
    res = summarize_disaggregated(run, pre, dec, SLO(ttft=0.05), 0.01)
    assert res.tpot.mean == pytest.approx((transfer + 99 * 0.005) / 99)
    assert res.slo_met and res.replicas == 2


def test_search_finds_the_cheapest_pools_for_each_service_level(devices, llama8b):
    """Llama-3-8B on H100s at 40 requests/s of 1024 -> 256 tokens, up to two replicas per pool (800 requests):
    one prefill replica queues prompts (TTFT P90 about 70 ms, two: 20 ms), one decode replica runs a batch of
    about 74 (TPOT P90 about 9.6 ms, two: 6.2 ms). So a tight TTFT asks for a second prefill replica, a tight
    TPOT for a second decode replica, both for both; the cheapest first (the catalog's cloud price per hour;
    the fewest devices without one)."""
    w = Workload(rate=40.0, lengths=Lengths.fixed(1024, 256))
    h100 = device_setup(llama8b, devices["nvidia-h100-sxm5"], w)
    link = KvLink(50e9, 5e-6)
    for slo, pools in ((SLO(ttft=1.0, tpot=0.05), (1, 1)), (SLO(ttft=0.05, tpot=0.05), (2, 1)),
                       (SLO(ttft=1.0, tpot=0.008), (1, 2)), (SLO(ttft=0.05, tpot=0.008), (2, 2))):
        best, tried = search_pools(w, h100, h100, link, slo, n=800, max_replicas=2)
        assert len(tried) == 4 and best.cost_unit == "USD/h"  # the catalog's cloud price of the H100
        assert (best.prefill_replicas, best.decode_replicas) == pools
        assert best.cost == pytest.approx(sum(pools) * h100.usd_per_s * 3600)
    unpriced = dataclasses.replace(h100, usd_per_s=None)
    best, _ = search_pools(w, unpriced, unpriced, link, SLO(ttft=0.05, tpot=0.05), n=800, max_replicas=2)
    assert best.cost_unit == "devices" and best.cost == 3
