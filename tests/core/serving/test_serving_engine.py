"""The simulation against hand-computed and closed-form cases, and the analytic estimate against the simulation."""

import math

import numpy as np
import pytest

from explorer.core.analysis.evaluate import evaluate
from explorer.core.serving.analytic import Setup, capacity, estimate
from explorer.core.serving.memory import ReplicaMemory
from explorer.core.serving.serve import device_setup, simulate_replicas, summarize
from explorer.core.serving.simulate import (
    Cancelled,
    Policy,
    Speculative,
    cached_tokens,
    simulate,
    simulate_routed,
)
from explorer.core.serving.surface import StepSurface
from explorer.core.serving.workload import SLO, Lengths, Requests, Workload
from explorer.core.workload.layers import Context

BIG = ReplicaMemory(capacity=1e15, utilization=0.9, weights=0.0, activation=0.0, kv_per_token=1.0)


@pytest.fixture(scope="module")
def h100(devices, llama8b):
    w = Workload(rate=1.0, lengths=Lengths.fixed(1024, 256))
    return device_setup(llama8b, devices["nvidia-h100-sxm5"], w)


def test_one_request_at_a_time_ttft_is_prefill_and_tpot_the_decode_step(devices, llama8b, h100):
    """Requests 100 s apart (constant arrivals) never share a step: TTFT = one prefill of 1024 tokens,
    TPOT = the decode step of one sequence at its mean context 1024 + 1 + 254 / 2 = 1152 tokens; both against
    the single-device pass directly (fused attention, as the surface is built)."""
    w = Workload(rate=0.01, arrival="constant", lengths=Lengths.fixed(1024, 256))
    _req, runs = simulate_replicas(w, h100, 5)
    run = runs[0][1]
    dev = devices["nvidia-h100-sxm5"]
    prefill = evaluate(llama8b, [dev], "fp16", Context(1, 1024, "prefill", "fused")).totals.time[0]
    decode = evaluate(llama8b, [dev], "fp16", Context(1, 1152, "decode", "fused")).totals.time[0]
    np.testing.assert_allclose(run.ttft, prefill, rtol=1e-9)
    # the context grid interpolates linearly between its points (645 and 1625 tokens): 0.1 % here
    np.testing.assert_allclose(run.tpot, decode, rtol=1e-3)
    assert run.preemptions == 0
    assert np.all(run.steps_by_batch[2:] == 0)


def _mg1_requests(lam, mean_out, n, seed):
    rng = np.random.default_rng(seed)
    arrival = np.cumsum(rng.exponential(1 / lam, n))
    out = rng.geometric(1 / mean_out, n)  # P(N = k) = (1 - p)^(k-1) p, k >= 1
    return Requests(arrival - arrival[0], np.full(n, 16), out)


def test_batch_one_queue_matches_pollaczek_khinchine():
    """max_batch 1, every step 10 ms (prefill too), answers of geometric length (mean 10 tokens) arriving as a
    Poisson stream: an M/G/1 queue whose service S = N x 10 ms. Pollaczek-Khinchine:
    W_q = lambda E[S^2] / (2 (1 - rho)), E[N^2] = (2 - p) / p^2. With lambda = 6/s: rho = 0.6,
    E[S] = 0.1 s, E[S^2] = (10 ms)^2 x (2 - 0.1) / 0.1^2 = 0.019 s^2, W_q = 6 x 0.019 / 0.8 = 0.1425 s. The geometric
    service is the discrete twin of M/M/1's exponential (whose W_q = rho / (mu - lambda) = 0.15 s)."""
    t, lam, mean_out, p = 0.01, 6.0, 10.0, 0.1
    es, es2 = mean_out * t, t * t * (2 - p) / p**2
    wq = lam * es2 / (2 * (1 - lam * es))
    assert wq == pytest.approx(0.1425)
    req = _mg1_requests(lam, mean_out, 40000, 3)
    run = simulate(req, StepSurface.constant(t), BIG, Policy(max_batch=1))
    waits = run.ttft - t  # the first token comes with the prefill step
    assert waits.mean() == pytest.approx(wq, rel=0.06)
    assert np.nanmean(run.e2e) == pytest.approx(wq + es, rel=0.05)


def test_littles_law_in_the_simulation(h100):
    """Mean number in the system over a window = arrival rate x mean time in the system (rate 15/s, Poisson)."""
    w = Workload(rate=15.0, lengths=Lengths.fixed(1024, 256))
    req, runs = simulate_replicas(w, h100, 3000, seed=1)
    run = runs[0][1]
    t0, t1 = 40.0, 160.0
    # number in system, integrated over [t0, t1] from each request's own interval
    overlap = np.clip(np.minimum(run.finish, t1) - np.maximum(req.arrival, t0), 0, None)
    n_mean = overlap.sum() / (t1 - t0)
    inside = (req.arrival >= t0) & (req.arrival < t1)
    lam = inside.sum() / (t1 - t0)
    w_mean = run.e2e[inside].mean()
    assert n_mean == pytest.approx(lam * w_mean, rel=0.03)


def test_above_capacity_the_queue_grows_and_goodput_falls(h100):
    slo = SLO(ttft=0.5, tpot=0.05)
    cap = capacity(Workload(rate=1.0, lengths=Lengths.fixed(1024, 256)), h100)
    assert 20 < cap < 40  # requests/s of 1024 -> 256 tokens on one H100 (the estimate)
    results = {}
    for share in (0.5, 1.5):
        w = Workload(rate=share * cap, lengths=Lengths.fixed(1024, 256))
        req, runs = simulate_replicas(w, h100, 3000, seed=2)
        results[share] = (summarize(req, runs, h100, slo, w.rate), runs[0][1])
    low, high = results[0.5][0], results[1.5][0]
    ttft_high = results[1.5][1].ttft
    assert low.stable and not high.stable
    assert np.median(ttft_high[-500:]) > 10 * np.median(ttft_high[:500])  # the queue keeps growing
    assert low.goodput == pytest.approx(low.request_throughput, rel=0.01)  # every request meets the SLOs
    assert high.goodput < 0.5 * low.goodput
    over = estimate(Workload(rate=1.5 * cap, lengths=Lengths.fixed(1024, 256)), h100, slo)[0]
    assert not over.stable
    # above capacity the estimate runs the replica as at its capacity (it was negative throughput and a TPOT of
    # 10^10 ms on an L4 at 7x its capacity): the served rate is the capacity, near the simulation's
    at_cap = estimate(Workload(rate=cap, lengths=Lengths.fixed(1024, 256)), h100, slo)[0]
    assert at_cap.stable and over.request_throughput == pytest.approx(cap, rel=1e-12)
    assert over.tpot.p90 == pytest.approx(at_cap.tpot.p90, rel=1e-9) and math.isinf(over.ttft.p90)
    assert over.request_throughput == pytest.approx(high.request_throughput, rel=0.05)  # 28.61 vs 28.77 req/s


CASES = [  # (chunked, rate): Llama-3-8B, H100 SXM5, 1024 -> 256 tokens, Poisson, 4000 requests
    (False, 5.0), (False, 10.0), (False, 20.0), (True, 5.0), (True, 10.0), (True, 20.0)]


@pytest.mark.parametrize(("chunked", "rate"), CASES)
def test_analytic_within_15_percent_of_the_simulation(devices, llama8b, chunked, rate):
    """Mean TTFT, P50 TTFT, mean TPOT, mean batch and throughput of the estimate within 15 % of the simulation
    at up to ~75 % of capacity (the tails, P90/P99, are rougher: see docs/serving.md)."""
    w = Workload(rate=rate, lengths=Lengths.fixed(1024, 256))
    setup = device_setup(llama8b, devices["nvidia-h100-sxm5"], w, Policy(chunked=chunked))
    slo = SLO()
    a = estimate(w, setup, slo)[0]
    req, runs = simulate_replicas(w, setup, 4000, seed=4)
    s = summarize(req, runs, setup, slo, rate)
    for name, x, y in (("ttft mean", a.ttft.mean, s.ttft.mean), ("ttft p50", a.ttft.p50, s.ttft.p50),
                       ("tpot", a.tpot.mean, s.tpot.mean), ("batch", a.mean_batch, s.mean_batch),
                       ("throughput", a.throughput, s.throughput)):
        assert x == pytest.approx(y, rel=0.15), name


def test_kv_blocks_to_concurrent_sequences_by_hand(devices, llama8b):
    """Llama-3-8B in fp16 on an H100 SXM5 (80 GB): KV per token = 2 (K, V) x 32 layers x 8 KV heads x 128 x
    2 B = 131,072 B; a block of 16 tokens 2,097,152 B. Usable 0.9 x 80e9 = 72e9 B, less the weights
    16,060,522,496 B and the activation peak of an 8192-token prefill step; the blocks, and the sequences of
    1280 tokens (80 blocks each) that fit, follow by hand."""
    w = Workload(rate=1.0, lengths=Lengths.fixed(1024, 256))
    mem = device_setup(llama8b, devices["nvidia-h100-sxm5"], w).memory
    assert mem.kv_per_token == 2 * 32 * 8 * 128 * 2 == 131072
    assert mem.weights == 16_060_522_496
    budget = 72e9 - 16_060_522_496 - mem.activation
    assert mem.blocks == int(budget // (16 * 131072))
    assert mem.max_sequences(1280) == mem.blocks // 80
    hand = ReplicaMemory(capacity=24e9, utilization=0.9, weights=16e9, activation=0.5e9, kv_per_token=131072)
    assert hand.kv_budget == pytest.approx(21.6e9 - 16.5e9)
    assert hand.blocks == 2431  # floor(5.1e9 / 2,097,152) = 2431.8
    assert hand.max_sequences(1280) == 30  # 2431 // 80
    assert hand.max_sequences(1281) == 30  # 81 blocks each: 2431 // 81 = 30.01
    assert hand.max_sequences(1297) == 29  # 82 blocks each: 2431 // 82 = 29.6


def test_preemption_when_kv_runs_out_is_counted_and_every_request_finishes():
    """40 blocks of 16 tokens for 8 sequences of 100 + 100 tokens (13 blocks each at the end): the batch
    outgrows the cache, the last admitted sequences are preempted and recomputed, and all finish."""
    mem = ReplicaMemory(capacity=40 * 16 / 0.9, utilization=0.9, weights=0.0, activation=0.0, kv_per_token=1.0)
    assert mem.blocks == 40
    req = Requests(np.zeros(8), np.full(8, 100), np.full(8, 100))
    run = simulate(req, StepSurface.constant(0.01), mem, Policy(max_batch=8))
    assert run.preemptions > 0
    assert np.all(np.isfinite(run.finish))
    assert np.all(run.finish >= run.first)


@pytest.mark.parametrize("chunked", [False, True])
def test_near_the_kv_limit_preemption_does_not_thrash(devices, llama8b, chunked):
    """Llama-3-8B on an L4 (24 GB) at 1 request/s of 1024 -> 256 tokens: its KV cache holds 28 such sequences and
    the estimate's mean batch is 18, so the cache runs full now and then. A preempted sequence once went straight
    back into the blocks it had freed, was recomputed and preempted again: ~150,000 preemptions for 2,000 requests
    and a TTFT P50 of 22 s. With vLLM's admission (a block of growth kept for each running sequence, no admission
    after a preemption until the running sequences have generated a token) preemptions are rare and the
    simulation agrees with the estimate."""
    w = Workload(rate=1.0, lengths=Lengths.fixed(1024, 256))
    setup = device_setup(llama8b, devices["nvidia-l4"], w, Policy(chunked=chunked))
    a = estimate(w, setup, SLO())[0]
    req, runs = simulate_replicas(w, setup, 2000, seed=0)
    s = summarize(req, runs, setup, SLO(), 1.0)
    assert s.preemptions < 100
    assert s.ttft.p50 == pytest.approx(a.ttft.p50, rel=0.15)
    assert s.tpot.mean == pytest.approx(a.tpot.mean, rel=0.15)
    assert s.throughput == pytest.approx(a.throughput, rel=0.05)


def test_prefix_hit_rate_one_leaves_only_uncached_tokens_in_prefill(h100):
    """A 512-token shared prefix, hit rate 1: its 32 whole blocks are cached, the prefill computes the other
    1024 - 512 = 512 tokens; a 500-token prefix caches 496 (31 blocks)."""
    for prefix, cached in ((512, 512), (500, 496)):
        w = Workload(rate=0.01, arrival="constant", lengths=Lengths.fixed(1024, 16), prefix_tokens=prefix,
                     prefix_hit_rate=1.0)
        req, runs = simulate_replicas(w, h100, 3)
        run = runs[0][1]
        assert np.all(run.prefill_tokens == 1024 - cached)
        np.testing.assert_allclose(run.ttft, h100.surface.prefill(1, 1024 - cached), rtol=2e-3)
    req = Requests(np.zeros(4), np.array([10, 17, 600, 2000]), np.ones(4, dtype=int))
    assert cached_tokens(req, 512, 1.0, 16).tolist() == [0, 16, 512, 512]  # one token is always computed


def test_speculative_decoding_expected_tokens_per_step():
    """Leviathan et al. 2023, "Fast Inference from Transformers via Speculative Decoding" (ICML 2023,
    https://arxiv.org/abs/2211.17192), eq. (1): E = (1 - a^(k+1)) / (1 - a)."""
    assert Speculative(k=4, acceptance=0.0).tokens_per_step == 1.0
    assert Speculative(k=4, acceptance=1.0).tokens_per_step == 5.0
    assert Speculative(k=4, acceptance=0.8).tokens_per_step == pytest.approx((1 - 0.8**5) / 0.2)  # 3.3616
    # in the simulation, acceptance 1 with k = 3: 4 tokens a step; each step = 3 drafts at 10 % of a 10 ms
    # target step + one verification (10 ms on the constant surface): TPOT = 13 ms / 4
    req = Requests(np.array([0.0]), np.array([16]), np.array([401]))
    spec = Speculative(k=3, acceptance=1.0, draft_cost=0.1)
    run = simulate(req, StepSurface.constant(0.01), BIG, Policy(max_batch=1), spec=spec)
    assert run.tpot[0] == pytest.approx(0.013 / 4)
    run0 = simulate(req, StepSurface.constant(0.01), BIG, Policy(max_batch=1),
                    spec=Speculative(k=3, acceptance=0.0, draft_cost=0.1))
    assert run0.tpot[0] == pytest.approx(0.013)  # acceptance 0: one token a step, drafts wasted


def test_round_robin_replicas_share_the_load(h100):
    w = Workload(rate=20.0, lengths=Lengths.fixed(1024, 256))
    two = Setup(h100.surface, h100.memory, h100.policy, replicas=2)
    req, runs = simulate_replicas(w, two, 400, seed=5)
    assert len(runs) == 2 and sorted(np.concatenate([i for i, _ in runs]).tolist()) == list(range(400))
    res = summarize(req, runs, two, SLO(), 20.0)
    assert res.throughput_per_device == pytest.approx(res.throughput / 2)
    assert math.isfinite(res.ttft.p99)


def test_least_outstanding_router_by_hand():
    """Every step 10 ms. Request 0 (t = 0, 1000 tokens, busy until 10 s) goes to replica 0; request 1 (t = 0.1 s,
    2 tokens) to replica 1, the one with nothing outstanding; it finishes at 0.12 s, so request 2 (t = 1 s) finds
    replica 0 holding one request and replica 1 none: replica 1. Round robin sends request 2 to replica 0, where it
    waits behind request 0's decode steps (batch 1)."""
    req = Requests(np.array([0.0, 0.1, 1.0]), np.full(3, 16), np.array([1000, 2, 2]))
    pol = Policy(max_batch=1)
    lo = simulate_routed(req, StepSurface.constant(0.01), BIG, pol, replicas=2, router="least-outstanding")
    assert [i.tolist() for i, _ in lo] == [[0], [1, 2]]
    rr = simulate_routed(req, StepSurface.constant(0.01), BIG, pol, replicas=2, router="round-robin")
    assert [i.tolist() for i, _ in rr] == [[0, 2], [1]]
    assert lo[1][1].ttft.tolist() == pytest.approx([0.01, 0.01])
    assert rr[0][1].ttft[1] == pytest.approx(10.0 - 1.0 + 0.01)  # after request 0's 1000 steps
    with pytest.raises(ValueError, match="--router"):
        simulate_routed(req, StepSurface.constant(0.01), BIG, pol, replicas=2, router="random")


def test_least_outstanding_balances_mixed_lengths(h100):
    """Long and short answers alternating: round robin puts every long one on replica 0; least outstanding
    spreads them, and its P99 end-to-end latency is lower."""
    n = 600
    out = np.where(np.arange(n) % 2 == 0, 1000, 20)
    req = Requests(np.arange(n) * 0.05, np.full(n, 512), out)
    p99 = {}
    for router in ("round-robin", "least-outstanding"):
        runs = simulate_routed(req, h100.surface, h100.memory, h100.policy, replicas=2, router=router)
        e2e = np.concatenate([r.e2e for _, r in runs])
        p99[router] = np.percentile(e2e, 99)
        longs = [int((out[i] == 1000).sum()) for i, _ in runs]
        if router == "round-robin":
            assert longs == [300, 0]
        else:
            assert min(longs) > 100
    assert p99["least-outstanding"] < p99["round-robin"]


def test_energy_per_token_and_cost_per_million_by_hand():
    """Every step 10 ms, a request of 10 tokens every second (100 of them): the replica runs steps 10 x 10 ms =
    0.1 s a request, 10 s of the 99.1 s from the first arrival to the last token. At 700 W busy and 100 W idle:
    (700 x 10 + 100 x 89.1) J / 1000 tokens = 15.91 J per token; at 3600 USD/h (1 USD/s):
    99.1 USD / 1000 tokens = 99,100 USD per million tokens."""
    setup = Setup(StepSurface.constant(0.01), BIG, Policy(), busy_w=700.0, idle_w=100.0, usd_per_s=1.0)
    w = Workload(rate=1.0, arrival="constant", lengths=Lengths.fixed(16, 10))
    req, runs = simulate_replicas(w, setup, 100)
    res = summarize(req, runs, setup, SLO(), 1.0)
    assert res.duration_s == pytest.approx(99.1)
    assert res.busy_share == pytest.approx(10 / 99.1)
    assert res.energy_per_token == pytest.approx(15.91)
    assert res.cost_per_million == pytest.approx(99_100)
    unknown = Setup(StepSurface.constant(0.01), BIG, Policy())
    assert all(math.isnan(x) for x in unknown.energy_and_cost(0.5, 100.0))


def test_progress_is_reported_and_cancels():
    req = Requests(np.arange(500) * 0.1, np.full(500, 16), np.full(500, 8))
    seen = []
    simulate_routed(req, StepSurface.constant(0.01), BIG, progress=seen.append)
    assert seen[0] == 0.0 and seen[-1] == pytest.approx(0.99) and seen == sorted(seen)
    with pytest.raises(Cancelled):
        simulate_routed(req, StepSurface.constant(0.01), BIG, progress=lambda f: f < 0.5)


FEATURE_CASES = [  # (name, workload, speculative), Llama-3-8B on an H100 SXM5, prefill steps, 4000 requests
    ("speculative k 4, acceptance 0.8", Workload(rate=10.0, lengths=Lengths.fixed(1024, 256)),
     Speculative(4, 0.8, 0.1)),
    ("512-token prefix, hit rate 0.5", Workload(rate=15.0, lengths=Lengths.fixed(1024, 256), prefix_tokens=512,
                                                prefix_hit_rate=0.5), None),
    ("uniform 256-2048 -> 64-512", Workload(rate=8.0, lengths=Lengths("uniform", (256, 2048), (64, 512))), None),
]


@pytest.mark.parametrize(("name", "w", "spec"), FEATURE_CASES, ids=[c[0] for c in FEATURE_CASES])
def test_analytic_within_15_percent_with_the_engine_features(devices, llama8b, name, w, spec):
    setup = device_setup(llama8b, devices["nvidia-h100-sxm5"], w, Policy(), spec=spec)
    a = estimate(w, setup, SLO())[0]
    req, runs = simulate_replicas(w, setup, 4000, seed=4)
    s = summarize(req, runs, setup, SLO(), w.rate)
    for what, x, y in (("ttft mean", a.ttft.mean, s.ttft.mean), ("ttft p50", a.ttft.p50, s.ttft.p50),
                       ("tpot", a.tpot.mean, s.tpot.mean), ("batch", a.mean_batch, s.mean_batch),
                       ("throughput", a.throughput, s.throughput)):
        assert x == pytest.approx(y, rel=0.15), what


def test_a_model_without_layers_is_refused_naming_the_model(devices):
    """A new, empty model with a device checked (what the app starts with): one ValueError naming the model, which
    the Serving panel and the planner show, instead of an IndexError from an empty step-time table."""
    from explorer.core.session.state import State

    with pytest.raises(ValueError, match="^model: it has no layers to serve"):
        device_setup(State().model, devices["nvidia-h100-sxm5"],
                     Workload(rate=1.0, lengths=Lengths.fixed(128, 16)))
