"""Speculative decoding with chunked prefill (issue 19): a chunked step carries each decoder's k drafts and its k + 1
verification tokens beside the prompt chunks, the verification counting against the chunk's token budget, and each
decoder advancing E tokens (Leviathan et al. 2023, "Fast Inference from Transformers via Speculative Decoding", ICML,
https://arxiv.org/abs/2211.17192, eq. 1). A hand-computed schedule on a constant surface, the analytic estimate
within the issue's 15 % of the simulation on stated cases, and the CLI answering instead of refusing."""

from __future__ import annotations

import json

import numpy as np
import pytest

from explorer.__main__ import main
from explorer.core.serving.analytic import estimate
from explorer.core.serving.memory import ReplicaMemory
from explorer.core.serving.serve import device_setup, simulate_replicas, summarize
from explorer.core.serving.simulate import Policy, Speculative, simulate_routed
from explorer.core.serving.surface import StepSurface
from explorer.core.serving.workload import SLO, Lengths, Requests, Workload

BIG = ReplicaMemory(capacity=1e15, utilization=0.9, weights=0.0, activation=0.0, kv_per_token=1.0)


@pytest.mark.parametrize(("spec", "ttft_b"), [
    # k 3: budget 18 - 1 x (3 + 1) = 14 prompt tokens a step -> B's 16 tokens take two chunked steps of 13 ms
    (Speculative(k=3, acceptance=1.0, draft_cost=0.1), 0.009 + 2 * 0.013),
    (Speculative(k=3, acceptance=0.0, draft_cost=0.1), 0.009 + 2 * 0.013),
    # no speculation: budget 18 - 1 = 17 -> one chunked step of 10 ms after A's step ending at 0.110
    (None, 0.005 + 0.010),
])
def test_a_chunked_step_with_speculation_by_hand(spec, ttft_b):
    """Constant surface: 10 ms a target pass (prefill or decode), a draft 10 % of it (1 ms). A (16 -> 401 tokens)
    arrives at 0: its prompt is one chunk (10 ms, first token at 0.010), then speculative steps of 3 x 1 + 10 = 13 ms
    (without speculation 10 ms). B (16 -> 2) arrives at 0.105, during A's eighth step, which ends at
    0.010 + 8 x 0.013 = 0.114 (without speculation the tenth, at 0.110); B's chunks then ride with A's
    verification: TTFT = 0.009 + chunk steps x 13 ms. A's TPOT: 13 ms / E, E = 4 at acceptance 1 (k + 1) and 1 at
    acceptance 0 (drafts wasted)."""
    step = 0.013 if spec else 0.010
    req = Requests(np.array([0.0, 0.105]), np.array([16, 16]), np.array([401, 2]))
    ((idx, run),) = simulate_routed(req, StepSurface.constant(0.01), BIG,
                                    Policy(max_batch=8, chunked=True, chunk=18), spec=spec)
    assert idx.tolist() == [0, 1] and run.ttft[0] == pytest.approx(0.010)
    assert run.ttft[1] == pytest.approx(ttft_b, rel=1e-9)
    assert run.tpot[0] == pytest.approx(step / (spec.tokens_per_step if spec else 1), rel=1e-9)


CASES = [  # (rate, speculative): Llama-3-8B, H100 SXM5, 1024 -> 256 tokens, Poisson, chunked 512, 4000 requests
    (5.0, Speculative(4, 0.8, 0.1)), (10.0, Speculative(4, 0.8, 0.1)), (20.0, Speculative(4, 0.8, 0.1)),
    (10.0, Speculative(3, 0.6, 0.1))]


@pytest.mark.parametrize(("rate", "spec"), CASES, ids=[f"{r:g}/s k{s.k} a{s.acceptance}" for r, s in CASES])
def test_analytic_within_15_percent_of_the_simulation(devices, llama8b, rate, spec):
    w = Workload(rate=rate, lengths=Lengths.fixed(1024, 256))
    setup = device_setup(llama8b, devices["nvidia-h100-sxm5"], w, Policy(chunked=True), spec=spec)
    a = estimate(w, setup, SLO())[0]
    req, runs = simulate_replicas(w, setup, 4000, seed=4)
    s = summarize(req, runs, setup, SLO(), rate)
    for name, x, y in (("ttft mean", a.ttft.mean, s.ttft.mean), ("ttft p50", a.ttft.p50, s.ttft.p50),
                       ("tpot", a.tpot.mean, s.tpot.mean), ("batch", a.mean_batch, s.mean_batch),
                       ("throughput", a.throughput, s.throughput)):
        assert x == pytest.approx(y, rel=0.15), name
    # speculation pays: the TPOT is below the chunked engine's without it
    plain = estimate(w, device_setup(llama8b, devices["nvidia-h100-sxm5"], w, Policy(chunked=True)), SLO())[0]
    assert a.tpot.mean < plain.tpot.mean


def test_the_cli_serves_speculation_with_chunked_prefill(capsys):
    code = main(["serve", "llama3-8b", "-d", "nvidia-h100-sxm5", "--rate", "5/s", "--input", "1024", "--output",
                 "256", "--chunked-prefill", "--spec-k", "4", "--spec-acceptance", "0.8", "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    eng = data["engine"]
    assert eng["chunked_prefill"] and eng["speculative"]["k"] == 4
    assert eng["speculative"]["tokens_per_step"] == pytest.approx((1 - 0.8**5) / 0.2)
    assert data["estimate"]["stable"]
