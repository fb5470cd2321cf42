"""The step-time surfaces built once per model and grid (explorer/core/serving/surfaces.py) equal the surfaces of
the per-device algorithm they replace (each grid point's table built per device, one evaluate per device; kept
here as the reference) to 1e-12, on several models and devices; they are cached by key; a CNN is refused as not
a token model before any work."""

import numpy as np
import pytest

from explorer.core.analysis.evaluate import evaluate
from explorer.core.parallel.system_pass import _concat as concat_tables
from explorer.core.serving import surfaces
from explorer.core.serving.serve import device_setup, device_setups, grid_for
from explorer.core.serving.simulate import Policy
from explorer.core.serving.surface import Grid, _contexts, _lengths, grid
from explorer.core.serving.surfaces import device_surface
from explorer.core.serving.workload import SLO, Lengths, Workload
from explorer.core.workload.layers import Context
from explorer.core.workload.model import build_table
from explorer.core.workload.templates import get_template

DEVICES = ("nvidia-h100-sxm5", "nvidia-l4", "amd-mi300x", "google-tpu-v5e")


def reference_surface(model, device, g, precision="fp16", formats=None, attention="fused"):
    """The algorithm before the stacked cache: per device, every grid point's table, one evaluate."""
    batch, ctxs = grid(g.max_batch, g.points), _contexts(g)
    pbatch, lengths = grid(g.max_prefill_batch, max(g.points // 2, 3)), _lengths(g)
    points = [Context(batch=int(b), seq_len=int(c), phase="decode", attention=attention) for b in batch for c in ctxs]
    points += [Context(batch=int(n), seq_len=int(L), phase="prefill", attention=attention)
               for n in pbatch for L in lengths]
    tables = [build_table(model, ctx) for ctx in points]
    starts = np.cumsum([0] + [len(t) for t in tables])[:-1]
    r = evaluate(concat_tables(tables), [device], precision, points[0], model, formats)
    seconds = np.add.reduceat(r.count * r.time[:, 0], starts)
    n_dec = len(batch) * len(ctxs)
    return (batch, ctxs, seconds[:n_dec].reshape(len(batch), len(ctxs)), pbatch, lengths,
            seconds[n_dec:].reshape(len(pbatch), len(lengths)))


@pytest.mark.parametrize("template", ["llama3-8b", "mixtral-8x7b", "gpt2", "mistral-7b"])
@pytest.mark.parametrize("precision", ["fp16", "int8"])
def test_the_stacked_surfaces_equal_the_per_device_ones(devices, template, precision):
    model = get_template(template).build()
    g = Grid(max_batch=64, max_context=1280, max_prefill_batch=8, max_length=4096, points=6, anchors=(1024,))
    surfaces.SURFACES.clear()
    fast = surfaces.device_surfaces(model, [devices[i] for i in DEVICES], g, precision)
    for d, s in zip(DEVICES, fast):
        ref = reference_surface(model, devices[d], g, precision)
        assert s.source == d
        for got, want in zip((s.batch, s.context, s.decode_s, s.prefill_batch, s.length, s.prefill_s), ref):
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
        assert np.all(s.decode_s > 0) and np.all(s.prefill_s > 0)


def test_surfaces_are_cached_by_key_and_one_device_equals_many(devices, llama8b):
    g = Grid(max_batch=32, max_context=600, max_prefill_batch=4, max_length=2048, points=5)
    surfaces.SURFACES.clear()
    h100, l4 = devices["nvidia-h100-sxm5"], devices["nvidia-l4"]
    both = surfaces.device_surfaces(llama8b, [h100, l4], g)
    assert surfaces.SURFACES.misses == 2
    assert device_surface(llama8b, l4, g) is both[1]  # a hit: no work
    assert surfaces.SURFACES.hits == 0 or surfaces.device_surfaces(llama8b, [l4], g)[0] is both[1]
    other = surfaces.device_surfaces(llama8b, [l4], g, "int8")  # another precision: another key
    assert other[0] is not both[1] and not np.allclose(other[0].decode_s, both[1].decode_s)
    surfaces.SURFACES.clear()
    alone = device_surface(llama8b, l4, g)
    assert alone is not both[1]
    np.testing.assert_array_equal(alone.decode_s, both[1].decode_s)  # one device or two: the same numbers
    np.testing.assert_array_equal(alone.prefill_s, both[1].prefill_s)


def test_device_setups_equal_device_setup_one_by_one(devices, llama8b):
    w = Workload(rate=2.0, lengths=Lengths.fixed(512, 64))
    pol = Policy(max_batch=64)
    many = device_setups(llama8b, [devices[i] for i in DEVICES], w, pol)
    surfaces.SURFACES.clear()
    for d, s in zip(DEVICES, many):
        one = device_setup(llama8b, devices[d], w, pol)
        np.testing.assert_array_equal(one.surface.decode_s, s.surface.decode_s)
        assert one.memory == s.memory and one.busy_w == s.busy_w and one.usd_per_s == s.usd_per_s
    assert grid_for(w, pol).max_batch == 64


def test_a_cnn_is_not_a_token_model_and_builds_nothing(devices):
    surfaces.WORK.clear()
    with pytest.raises(ValueError, match=r"^model: ResNet-50 \(torchvision, v1.5\) is not a token model"):
        device_setup(get_template("resnet50").build(), devices["nvidia-l4"],
                     Workload(rate=1.0, lengths=Lengths.fixed(128, 16)))
    assert surfaces.WORK.misses == 0


def reference_capacity(workload, setup):
    """The capacity search before the batched midpoints: doubling, then 50 halvings, one rate per call."""
    from explorer.core.serving.analytic import _fixed_point, _prompt

    i_mean, p, o = _prompt(workload, setup)
    c = i_mean + o / 2
    lo, hi = 0.0, 1.0
    while _fixed_point(setup, np.array([hi]), p, o, c)[3][0] and hi < 1e9:
        lo, hi = hi, hi * 2
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _fixed_point(setup, np.array([mid]), p, o, c)[3][0] else (lo, mid)
    return lo


@pytest.mark.parametrize("chunked", [False, True])
@pytest.mark.parametrize("lengths", [(1024, 256), (128, 16), (4000, 900)])
def test_the_batched_capacity_search_equals_the_one_rate_bisection(devices, llama8b, chunked, lengths):
    from explorer.core.serving.analytic import capacity

    w = Workload(rate=1.0, lengths=Lengths.fixed(*lengths))
    pol = Policy(max_batch=128, chunked=chunked)
    found = []
    for setup in device_setups(llama8b, [devices[i] for i in DEVICES], w, pol):
        want = reference_capacity(w, setup)  # 0 where the weights leave no KV cache (the TPU v5e's 16 GB)
        assert capacity(w, setup) == want  # the same midpoints tested: the very same float
        found.append(want)
    assert sum(x > 0 for x in found) >= 3


def test_the_capacity_search_by_hand_on_a_constant_surface():
    from explorer.core.serving.analytic import Setup, capacity
    from explorer.core.serving.memory import ReplicaMemory
    from explorer.core.serving.surface import StepSurface

    # 2 s per prefill, 10 ms per decode step, 15 decode steps per request, at most 64 sequences: the decode batch
    # b = lambda x 15 x 0.01 / (1 - 2 lambda) reaches the cap of 64 at lambda = 64 / (128 + 0.15)
    surface = StepSurface.constant(0.01, prefill_s=2.0)
    memory = ReplicaMemory(capacity=1e12, utilization=0.9, weights=0.0, activation=0.0, kv_per_token=1.0)
    w = Workload(rate=1.0, lengths=Lengths.fixed(128, 16))
    setup = Setup(surface, memory, Policy(max_batch=64))
    assert capacity(w, setup) == reference_capacity(w, setup)
    assert capacity(w, setup) == pytest.approx(64 / 128.15, rel=1e-12)


def reference_slo_rate(workload, setup, slo, points=48):
    """The service-level rate search before the batched midpoints: one estimate per halving."""
    from explorer.core.serving.analytic import capacity, estimate

    cap = capacity(workload, setup)
    if not cap > 0:
        return 0.0
    rates = np.linspace(cap / points, cap, points)
    ok = np.array([r.stable and r.slo_met for r in estimate(workload, setup, slo, rates)])
    if not ok.any():
        lo, hi = 0.0, float(rates[0])
    else:
        j = int(np.flatnonzero(ok)[-1])
        if j == points - 1:
            return float(rates[-1])
        lo, hi = float(rates[j]), float(rates[j + 1])
    for _ in range(24):
        mid = (lo + hi) / 2
        r = estimate(workload, setup, slo, [mid])[0]
        lo, hi = (mid, hi) if (r.stable and r.slo_met) else (lo, mid)
    return lo


@pytest.mark.parametrize("slo", [SLO(ttft=0.5, tpot=0.05), SLO(ttft=0.2, tpot=0.02, ttft_pct="p99"), SLO(ttft=30.0)])
def test_the_batched_slo_rate_search_equals_the_one_rate_bisection(devices, llama8b, slo):
    from explorer.core.serving import fleet

    w = Workload(rate=1.0, lengths=Lengths.fixed(1024, 256))
    setups = device_setups(llama8b, [devices[i] for i in DEVICES], w, Policy(max_batch=128))
    got = [fleet.slo_rate(w, s, slo) for s in setups]
    assert got == [reference_slo_rate(w, s, slo) for s in setups]
    assert any(x > 0 for x in got)
    fleet.SLO_RATES.clear()
    assert fleet.cached_slo_rate(w, setups[0], slo) == got[0] and fleet.SLO_RATES.misses == 1
    assert fleet.cached_slo_rate(w, setups[0], slo) == got[0] and fleet.SLO_RATES.hits == 1
