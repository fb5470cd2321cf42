"""The estimate-first pool search (explorer/core/serving/disagg_search.py): on every stated case it picks the same
(P, D) as simulating every size (the brute force, ``disagg.search_pools``), simulating fewer sizes, and says how
many it simulated.

Cases (Llama-3-8B, fp16, 1024 -> 256 tokens, Poisson, KV over 50 GB/s + 5 us, 800 simulated requests, seed 0):
  1-4  40 requests/s, H100 prefill and decode, pools up to 2 each, the four service levels of
       test_disagg.py's search test: (1, 1), (2, 1), (1, 2), (2, 2)
  5    20 requests/s, H100 prefill, A100 80GB decode, up to 3 each, TTFT P90 50 ms, TPOT P90 12 ms: (1, 2)
  6    the same, TTFT P90 30 ms, TPOT P90 10 ms: (2, 2)
  7    case 2 without prices (the fewest devices): (2, 1)
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from explorer.__main__ import main
from explorer.core.serving.disagg import KvLink, search_pools
from explorer.core.serving.disagg_search import near_boundary, search
from explorer.core.serving.result import Latency, ServingResult, slo_checks
from explorer.core.serving.serve import device_setup
from explorer.core.serving.workload import SLO, Lengths, Workload

LINK = KvLink(50e9, 5e-6)
W40 = Workload(rate=40.0, lengths=Lengths.fixed(1024, 256))
W20 = Workload(rate=20.0, lengths=Lengths.fixed(1024, 256))


@pytest.fixture(scope="module")
def cases(devices, llama8b):
    h40 = device_setup(llama8b, devices["nvidia-h100-sxm5"], W40)
    h20 = device_setup(llama8b, devices["nvidia-h100-sxm5"], W20)
    a20 = device_setup(llama8b, devices["nvidia-a100-sxm4-80gb"], W20)
    unpriced = dataclasses.replace(h40, usd_per_s=None)
    return [
        (W40, h40, h40, SLO(ttft=1.0, tpot=0.05), 2, (1, 1)),
        (W40, h40, h40, SLO(ttft=0.05, tpot=0.05), 2, (2, 1)),
        (W40, h40, h40, SLO(ttft=1.0, tpot=0.008), 2, (1, 2)),
        (W40, h40, h40, SLO(ttft=0.05, tpot=0.008), 2, (2, 2)),
        (W20, h20, a20, SLO(ttft=0.05, tpot=0.012), 3, (1, 2)),
        (W20, h20, a20, SLO(ttft=0.03, tpot=0.01), 3, (2, 2)),
        (W40, unpriced, unpriced, SLO(ttft=0.05, tpot=0.05), 2, (2, 1)),
    ]


def test_estimate_then_simulate_picks_what_simulating_all_picks(cases):
    total_sim = total_sizes = 0
    for w, pre, dec, slo, most, pools in cases:
        brute, tried = search_pools(w, pre, dec, LINK, slo, n=800, max_replicas=most)
        fast = search(w, pre, dec, LINK, slo, n=800, max_replicas=most)
        assert (brute.prefill_replicas, brute.decode_replicas) == pools  # the stated answer
        assert (fast.best.prefill_replicas, fast.best.decode_replicas) == pools, slo
        assert fast.best.cost == brute.cost
        # the chosen size's simulation is the brute force's own (same seed, same pools): equal numbers
        assert fast.best.simulated and fast.best.result.ttft.p90 == brute.result.ttft.p90
        assert len(fast.tried) == len(tried) == most * most
        assert 1 <= fast.simulated == sum(c.simulated for c in fast.tried) < most * most
        total_sim, total_sizes = total_sim + fast.simulated, total_sizes + most * most
    assert total_sim <= total_sizes / 3  # 9 of the 38 sizes simulated on these cases


def _result(stable: bool, ttft: float, target: float = 0.1) -> ServingResult:
    lat = Latency(ttft, ttft, ttft, ttft)
    return ServingResult(method="analytic", rate=1.0, replicas=1, devices=1, ttft=lat, tpot=lat, e2e=lat,
                         request_throughput=1.0, throughput=1.0, goodput=1.0,
                         slo=slo_checks(SLO(ttft=target), lat, lat, lat), kv_utilization=0.0, mean_batch=1.0,
                         stable=stable)


def test_near_the_boundary_by_hand():
    # TTFT P90 against a 100 ms target at (rate / 1.15, rate, rate x 1.15)
    assert not near_boundary([_result(True, 0.05), _result(True, 0.06), _result(True, 0.07)])  # 0.6: clear pass
    assert near_boundary([_result(True, 0.07), _result(True, 0.086), _result(True, 0.095)])  # 0.86: near
    assert near_boundary([_result(True, 0.10), _result(True, 0.114), _result(True, 0.13)])  # 1.14: near
    assert not near_boundary([_result(True, 0.2), _result(True, 0.3), _result(False, 0.4)])  # 3.0: clear fail
    assert near_boundary([_result(True, 0.05), _result(True, 0.06), _result(False, 0.07)])  # capacity at 1.15x
    assert near_boundary([_result(True, 0.05), _result(False, 0.06), _result(False, 0.07)])


def test_an_unknown_method_is_refused(cases):
    w, pre, dec, slo, *_ = cases[0]
    with pytest.raises(ValueError, match="--pool-search"):
        search(w, pre, dec, LINK, slo, n=10, max_replicas=1, method="guess")


def test_the_json_says_how_many_sizes_were_simulated(capsys):
    base = ["serve", "llama3-8b", "--device", "nvidia-h100-sxm5", "--rate", "40/s", "--ttft-p90", "50ms",
            "--tpot-p90", "8ms", "--disaggregate", "auto", "--max-pool", "2", "--kv-link", "50 GB/s", "--requests",
            "800", "--json"]
    answers = {}
    for method in ("estimate", "simulate"):
        assert main([*base, "--pool-search", method]) == 0
        d = json.loads(capsys.readouterr().out)["disaggregated"]
        answers[method] = (d["prefill_replicas"], d["decode_replicas"])
        assert d["pool_search"]["method"] == method and d["pool_search"]["sizes"] == 4
        assert d["pool_search"]["simulated"] == sum(c["simulated"] for c in d["search"])
        if method == "simulate":
            assert d["pool_search"]["simulated"] == 4
        else:
            assert d["pool_search"]["simulated"] < 4
    assert answers["estimate"] == answers["simulate"] == (2, 2)
