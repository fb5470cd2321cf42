"""The first token from the decode pool (``first_token="decode"``, vLLM's disaggregated-prefill proxy): TTFT = the
prefill + the KV transfer + the decode pool's first step, by hand on constant surfaces, and the estimate within the
issue's 15 % of the simulation; the default (the prefill pool's token, DistServe) unchanged."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from explorer.core.serving.analytic import Setup
from explorer.core.serving.disagg import KvLink, simulate_disaggregated, summarize_disaggregated
from explorer.core.serving.disagg_estimate import estimate_disaggregated
from explorer.core.serving.memory import ReplicaMemory
from explorer.core.serving.serve import device_setup
from explorer.core.serving.simulate import Policy
from explorer.core.serving.surface import StepSurface
from explorer.core.serving.workload import SLO, Lengths, Workload

BIG = ReplicaMemory(capacity=1e15, utilization=0.9, weights=0.0, activation=0.0, kv_per_token=131072.0)
TRANSFER = 131072 * 1024 / 50e9  # 2.684 ms


def test_one_request_at_a_time_by_hand():
    """Prefill steps 20 ms, decode steps 5 ms, a 1024-token prompt over 50 GB/s (2.684 ms), 100-token answers,
    requests 100 s apart: TTFT = 20 + 2.684 + 5 ms; the 99 later tokens 99 x 5 ms after it (the decode pool takes
    100 steps). The default: TTFT 20 ms, the later tokens 2.684 + 99 x 5 ms after it."""
    pre = Setup(StepSurface.constant(0.02), BIG, Policy())
    dec = Setup(StepSurface.constant(0.005), BIG, Policy())
    w = Workload(rate=0.01, arrival="constant", lengths=Lengths.fixed(1024, 100))
    link = KvLink(50e9)
    run = simulate_disaggregated(w, pre, dec, link, 3, first_token="decode")
    np.testing.assert_allclose(run.first - run.requests.arrival, 0.02 + TRANSFER + 0.005)
    np.testing.assert_allclose(run.finish - run.first, 99 * 0.005)
    res = summarize_disaggregated(run, pre, dec, SLO(ttft=0.05), 0.01)
    assert res.ttft.mean == pytest.approx(0.02 + TRANSFER + 0.005) and res.tpot.mean == pytest.approx(0.005)
    (est,) = estimate_disaggregated(w, pre, dec, link, SLO(ttft=0.05), first_token="decode")
    # the estimate's lone request: the same, but for the half step it expects running on arrival (1 - e^-b) / 2
    assert est.ttft.p50 == pytest.approx(0.02 + TRANSFER + 0.005, rel=0.01)
    assert est.tpot.mean == pytest.approx(0.005)
    default = simulate_disaggregated(w, pre, dec, link, 3)
    np.testing.assert_allclose(default.first - default.requests.arrival, 0.02)
    np.testing.assert_allclose(default.finish - default.first, TRANSFER + 99 * 0.005)
    with pytest.raises(ValueError, match="--first-token"):
        simulate_disaggregated(w, pre, dec, link, 3, first_token="both")


def test_a_one_token_answer_is_the_decode_pools_first_step():
    pre = Setup(StepSurface.constant(0.02), BIG, Policy())
    dec = Setup(StepSurface.constant(0.005), BIG, Policy())
    w = Workload(rate=0.01, arrival="constant", lengths=Lengths.fixed(1024, 1))
    run = simulate_disaggregated(w, pre, dec, KvLink(50e9), 2, first_token="decode")
    np.testing.assert_allclose(run.finish - run.requests.arrival, 0.02 + TRANSFER + 0.005)
    np.testing.assert_allclose(run.first, run.finish)


CASES = [(10.0, 1, 1), (20.0, 1, 1), (40.0, 2, 2)]  # H100 SXM5 both pools, KV over 50 GB/s + 5 us


@pytest.mark.parametrize(("rate", "p", "d"), CASES, ids=[f"{r:g}/s {p}:{d}" for r, p, d in CASES])
def test_within_15_percent_of_the_simulation(devices, llama8b, rate, p, d):
    """Llama-3-8B, 1024 -> 256 tokens, Poisson, 4,000 requests, seed 4."""
    w = Workload(rate=rate, lengths=Lengths.fixed(1024, 256))
    h100 = device_setup(llama8b, devices["nvidia-h100-sxm5"], w)
    pre, dec = dataclasses.replace(h100, replicas=p), dataclasses.replace(h100, replicas=d)
    link = KvLink(50e9, 5e-6)
    (a,) = estimate_disaggregated(w, pre, dec, link, SLO(), first_token="decode")
    s = summarize_disaggregated(simulate_disaggregated(w, pre, dec, link, 4000, seed=4, first_token="decode"),
                                pre, dec, SLO(), rate)
    assert a.stable and s.stable
    for name, x, y in (("ttft mean", a.ttft.mean, s.ttft.mean), ("ttft p50", a.ttft.p50, s.ttft.p50),
                       ("tpot", a.tpot.mean, s.tpot.mean), ("batch", a.mean_batch, s.mean_batch),
                       ("throughput", a.throughput, s.throughput), ("e2e mean", a.e2e.mean, s.e2e.mean)):
        assert x == pytest.approx(y, rel=0.15), name
    # the decode pool's first step and the transfer come before the first token: later than the default's
    d0 = summarize_disaggregated(simulate_disaggregated(w, pre, dec, link, 4000, seed=4), pre, dec, SLO(), rate)
    assert s.ttft.mean > d0.ttft.mean + 2.684e-3
