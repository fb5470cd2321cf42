"""The design-space sweep (explorer/core/sweep): each point equals the single-context analysis of that point,
the Pareto front is non-dominated and complete, and the value lists parse as documented (docs/sweep.md)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.core.analysis.cost import CostAssumptions, compute_cost
from explorer.core.analysis.evaluate import evaluate
from explorer.core.sweep.grid import Grid, parse_names, parse_values
from explorer.core.sweep.pareto import pareto_mask
from explorer.core.sweep.run import sweep
from explorer.core.workload.layers import Context
from explorer.core.workload.templates import get_template
from explorer.store.engine import open_catalog

# priced (list price + TDP), cloud-priced only, unpriced, and devices without some precisions' peaks
DEVICE_IDS = ("nvidia-h100-sxm5", "nvidia-b200", "nvidia-h200-sxm", "amd-mi300x", "amd-mi250x", "google-tpu-v5p",
              "nvidia-rtx-4090", "intel-gaudi3", "nvidia-jetson-orin-nano-8gb")


@pytest.fixture(scope="module")
def devices():
    with open_catalog() as repo:
        return repo.devices(DEVICE_IDS)


def _single(model, device, precision, ctx):
    """The one-point answer: evaluate() on one context (what `hwexplorer analyze` runs) and the cost panel."""
    r = evaluate(model, [device], precision, ctx)
    return r, compute_cost(r, CostAssumptions())


@pytest.mark.parametrize("template, phases", [("llama2-7b", ("prefill", "decode")), ("gpt2", ("prefill", "decode"))])
def test_random_points_equal_the_single_analysis(devices, template, phases):
    model = get_template(template).build()
    grid = Grid(batches=(1, 3, 16, 64), seq_lens=(128, 1000, 4096), phases=phases,
                precisions=("fp16", "fp8", "int8"))
    res = sweep(model, devices, grid)
    assert len(res) == 4 * 3 * 2 * 3 * len(devices) and res.passes == 3
    c = res.columns
    rng = np.random.default_rng(22)
    for i in rng.choice(len(res), size=40, replace=False):
        dev = next(d for d in devices if d.id == c["device"][i])
        ctx = Context(batch=int(c["batch"][i]), seq_len=int(c["seq_len"][i]), phase=c["phase"][i])
        r, cost = _single(model, dev, c["precision"][i], ctx)
        tokens = ctx.batch if ctx.phase == "decode" else ctx.batch * ctx.seq_len
        t = r.totals
        np.testing.assert_allclose(c["latency_s"][i], t.time[0], rtol=1e-12)
        # analyze's throughput is tokens/s in decode, inferences (sequences)/s in prefill
        per_token = 1 if ctx.phase == "decode" else ctx.seq_len
        np.testing.assert_allclose(c["throughput_per_device_tok_s"][i], t.throughput[0] * per_token, rtol=1e-12)
        np.testing.assert_allclose(c["energy_per_token_j"][i], t.energy[0] / tokens, rtol=1e-12)
        assert c["memory_bytes"][i] == pytest.approx(t.memory_bytes, rel=1e-12)
        assert bool(c["fits"][i]) == bool(t.fits[0])
        expected = {"list price": cost.cost_per_million[0], "cloud price": cost.cloud_cost_per_million[0]}.get(
            c["cost_source"][i], math.nan) / per_token
        if math.isnan(expected):
            assert math.isnan(c["cost_per_million_tokens_usd"][i]) and c["cost_source"][i] == ""
            assert not (math.isfinite(cost.cost_per_million[0]) or math.isfinite(cost.cloud_cost_per_million[0]))
        else:
            np.testing.assert_allclose(c["cost_per_million_tokens_usd"][i], expected, rtol=1e-12)
            if c["cost_source"][i] == "cloud price":  # the purchase price wins when it is known
                assert not math.isfinite(cost.cost_per_million[0])


def test_unknown_cost_and_peak_are_said(devices):
    res = sweep(get_template("llama2-7b").build(), devices, Grid(batches=(1,), seq_lens=(512,)))
    c = res.columns
    unpriced = c["device"] == "amd-mi250x"  # the catalog has neither its list price nor a cloud price
    assert np.isnan(c["cost_per_million_tokens_usd"][unpriced]).all()
    assert any("cost unknown" in n and "amd-mi250x" in n for n in res.notes)


def test_a_context_the_model_cannot_take_names_it(make_device):
    from explorer.core.workload.model import Model

    model = Model.from_dict({"format": 1, "name": "bad", "input": {"features": 8},
                             "layers": [{"kind": "conv2d", "name": "c", "out_channels": 4,
                                         "kernel_size": 3}]})
    with pytest.raises(ValueError, match="batch 1.*layer 0"):
        sweep(model, [make_device("d", "1 TFLOP/s", "1 TB/s")], Grid())


# ------------------------------------------------------------------------------------------------ Pareto front
MIN = (True, False, True, True)  # latency min, throughput max, cost min, energy min


def test_pareto_hand_made_case():
    nan = math.nan
    points = {
        "A": (1, 100, 10, 1.0),
        "B": (2, 200, 5, 1.0),  # slower than A but more throughput and cheaper: on the front
        "C": (2, 100, 10, 1.0),  # A is as good everywhere and faster: dominated
        "D": (1, 100, 10, 1.0),  # a duplicate of A: kept with it
        "E": (3, 50, nan, 0.5),  # the least energy; its cost unknown: still on the front
        "F": (3, 50, nan, 0.6),  # as E with more energy (the unknown costs tie): dominated by E
        "G": (0.5, 10, nan, 5.0),  # the fastest, cost unknown: on the front
        "H": (4, 200, 5, 1.0),  # B is as good everywhere and faster: dominated
        "I": (0.5, 10, 99, 5.0),  # as G but a known cost beats an unknown one: dominates G
    }
    names = list(points)
    mask = pareto_mask(np.array(list(points.values()), dtype=float), MIN)
    assert {n for n, m in zip(names, mask) if m} == {"A", "B", "D", "E", "I"}


def _brute_force(values, minimize):
    costs = np.where(np.asarray(minimize)[None, :], values, -values)
    costs = np.where(np.isnan(costs), np.inf, costs)
    n = len(costs)
    return np.array([not any(np.all(costs[j] <= costs[i]) and np.any(costs[j] < costs[i])
                             for j in range(n) if j != i) for i in range(n)], dtype=bool)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(*[st.one_of(st.integers(0, 4).map(float), st.just(math.nan))] * 4),
                min_size=1, max_size=30))
def test_pareto_is_non_dominated_and_complete(rows):
    values = np.array(rows, dtype=float)
    mask = pareto_mask(values, MIN)
    np.testing.assert_array_equal(mask, _brute_force(values, MIN))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(*[st.one_of(st.integers(0, 4).map(float), st.just(math.nan))] * 4),
                min_size=1, max_size=60), st.integers(1, 9),
       st.lists(st.integers(1, 7), max_size=3), st.integers(1, 64))
def test_pareto_in_blocks_equals_brute_force(rows, chunk, thin, pairs):
    """The thinning passes (blocks of ``THIN`` points), the sort-and-sweep in blocks of ``CHUNK`` and the
    comparison arrays cut at ``PAIRS`` give the same front as brute force, duplicates and NaN included."""
    from explorer.core.sweep import pareto

    values = np.array(rows, dtype=float)
    saved = pareto.CHUNK, pareto.THIN, pareto.PAIRS
    pareto.CHUNK, pareto.THIN, pareto.PAIRS = chunk, tuple(thin), pairs
    try:
        mask = pareto_mask(values, MIN)
    finally:
        pareto.CHUNK, pareto.THIN, pareto.PAIRS = saved
    np.testing.assert_array_equal(mask, _brute_force(values, MIN))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(50, 400))
def test_pareto_of_many_correlated_points_equals_brute_force(seed, n):
    """Points like a sweep's (objectives that move together, ties, unknowns, 4 * THIN[0] points and more, so
    the thinning passes run at their real sizes) against brute force."""
    rng = np.random.default_rng(seed)
    base = rng.integers(1, 20, size=(n, 1)).astype(float)
    values = np.column_stack([base + rng.integers(0, 3, (n, 1)), 100 / base + rng.integers(0, 3, (n, 1)),
                              base * rng.integers(1, 4, (n, 1)), rng.integers(0, 6, (n, 1))]).astype(float)
    values[rng.random(values.shape) < 0.05] = math.nan
    np.testing.assert_array_equal(pareto_mask(values, MIN), _brute_force(values, MIN))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(*[st.one_of(st.integers(0, 4).map(float), st.just(math.nan))] * 4), min_size=1,
                max_size=40), st.integers(1, 12), st.integers(0, 2**32 - 1))
def test_points_dominated_by_a_neighbour_leave_the_same_front(rows, offset, seed):
    """dominated_by_offset flags only points their neighbour (``offset`` away, both candidates) dominates, so the
    front of the candidates left equals the front of every candidate (NaN and ties included)."""
    from explorer.core.sweep.pareto import dominated_by_offset

    values = np.array(rows, dtype=float)
    candidate = np.random.default_rng(seed).random(len(values)) < 0.8
    flagged = dominated_by_offset(values, MIN, candidate, offset)
    assert not (flagged & ~candidate).any()
    costs = np.where(np.isnan(np.where(MIN, values, -values)), np.inf, np.where(MIN, values, -values))
    for i in np.flatnonzero(flagged):
        assert any(0 <= j < len(values) and candidate[j] and np.all(costs[j] <= costs[i]) and np.any(costs[j] < costs[i])
                   for j in (i - offset, i + offset))
    front = np.zeros(len(values), dtype=bool)
    left = np.flatnonzero(candidate & ~flagged)
    front[left] = pareto_mask(values[left], MIN)
    want = np.zeros(len(values), dtype=bool)
    want[candidate] = _brute_force(values[candidate], MIN)
    np.testing.assert_array_equal(front, want)


def test_sweep_front_only_fitting_points_and_non_dominated(devices):
    res = sweep(get_template("llama2-7b").build(), devices,
                Grid(batches=(1, 8, 64, 256), seq_lens=(512, 8192, 32768), precisions=("fp16", "fp8")))
    c = res.columns
    front = c["pareto"]
    assert front.any() and not (front & ~c["fits"]).any()
    fit = np.flatnonzero(c["fits"])
    vals = np.column_stack([c[n] for n in ("latency_s", "throughput_per_device_tok_s",
                                           "cost_per_million_tokens_usd", "energy_per_token_j")])[fit]
    np.testing.assert_array_equal(front[fit], _brute_force(vals, MIN))


# ------------------------------------------------------------------------------------------------ value lists
@pytest.mark.parametrize("text, expected", [
    ("1,2,4..256", (1, 2, 4, 8, 16, 32, 64, 128, 256)),
    ("512..32768", (512, 1024, 2048, 4096, 8192, 16384, 32768)),
    ("3..10", (3, 6, 10)),  # doubling from 3, then the end itself
    ("7", (7,)),
    ("8,1,8", (1, 8)),
])
def test_parse_values(text, expected):
    assert parse_values(text, "--batch") == expected


@pytest.mark.parametrize("text, message", [
    ("0", "--batch: values must be whole numbers >= 1"), ("1..x", "not a whole number"),
    ("", "expected values"), ("8..2", "ends below its start"), ("1.5", "not a whole number"),
    ("-1", "not a whole number|>= 1"),
])
def test_parse_values_rejects(text, message):
    with pytest.raises(ValueError, match=message):
        parse_values(text, "--batch")


def test_parse_names_and_grid_checks():
    assert parse_names("FP16, fp8,fp16", "--precision", ("fp16", "fp8")) == ("fp16", "fp8")
    with pytest.raises(ValueError, match="--precision: unknown value 'fp17'"):
        parse_names("fp17", "--precision", ("fp16",))
    with pytest.raises(ValueError, match="batches"):
        Grid(batches=(0,))
    with pytest.raises(ValueError, match="precisions"):
        Grid(precisions=("fp17",))


# ------------------------------------------------------------------------------------------------ systems
def test_system_points_are_the_best_layout_of_the_system_pass(devices):
    from explorer.core.parallel.compare import size_on_systems
    from explorer.core.sweep.run import combine
    from explorer.core.sweep.systems import sweep_systems
    from explorer.store.resolve import resolve_system

    model = get_template("llama2-7b").build()
    system = resolve_system("nvidia-dgx-h100")
    h100 = next(d for d in devices if d.id == system.device_id)
    grid = Grid(batches=(1, 64), seq_lens=(1024,), phases=("prefill", "decode"), precisions=("fp16", "fp8"))
    res = sweep_systems(model, [(system, h100)], grid)
    c = res.columns
    assert len(res) == 8 and set(c["device"]) == {"nvidia-dgx-h100"} and all(c["layout"])
    for i in range(len(res)):
        ctx = Context(batch=int(c["batch"][i]), seq_len=1024, phase=c["phase"][i])
        (one,) = size_on_systems(model, [(system, h100)], c["precision"][i], ctx, objective="throughput",
                                 costs=CostAssumptions())
        r, k = one.analysis, one.chosen
        per_token = 1024 if ctx.phase == "prefill" else 1
        assert c["layout"][i] == r.layouts[k].label()
        assert c["latency_s"][i] == pytest.approx(r.step_time[k], rel=1e-12)
        assert c["throughput_per_device_tok_s"][i] == pytest.approx(r.throughput_per_device[k] * per_token,
                                                                    rel=1e-12)
        assert c["cost_per_million_tokens_usd"][i] == pytest.approx(one.cost.cost_per_million[k] / per_token,
                                                                    rel=1e-12)
        # one decode step makes `batch` tokens on the whole system: energy of its 8 devices / tokens
        assert c["energy_per_token_j"][i] == pytest.approx(
            r.device_energy[k] * system.devices / (ctx.batch * per_token), rel=1e-12)
    # with the single devices, one front over both
    both = combine([sweep(model, [h100], grid), res])
    assert len(both) == 16 and both.columns["pareto"].any()
    fit = np.flatnonzero(both.columns["fits"])
    vals = np.column_stack([both.columns[n] for n in ("latency_s", "throughput_per_device_tok_s",
                                                      "cost_per_million_tokens_usd", "energy_per_token_j")])[fit]
    np.testing.assert_array_equal(both.columns["pareto"][fit], _brute_force(vals.astype(float), MIN))


def test_fused_attention_points_equal_the_single_analysis(devices):
    """The fused-attention K/V re-reads depend on each row's attention shape: they survive the stacking."""
    model = get_template("llama2-7b").build()
    res = sweep(model, devices[:3], Grid(batches=(2, 32), seq_lens=(2048, 16384), phases=("prefill", "decode"),
                                         precisions=("fp16",), attention="fused"))
    c = res.columns
    for i in range(len(res)):
        dev = next(d for d in devices if d.id == c["device"][i])
        ctx = Context(batch=int(c["batch"][i]), seq_len=int(c["seq_len"][i]), phase=c["phase"][i],
                      attention="fused")
        r = evaluate(model, [dev], "fp16", ctx)
        np.testing.assert_allclose(c["latency_s"][i], r.totals.time[0], rtol=1e-12)
        tokens = ctx.batch if ctx.phase == "decode" else ctx.batch * ctx.seq_len
        np.testing.assert_allclose(c["energy_per_token_j"][i], r.totals.energy[0] / tokens, rtol=1e-12)
    naive = sweep(model, devices[:3], Grid(batches=(2, 32), seq_lens=(2048, 16384), phases=("prefill", "decode"),
                                           precisions=("fp16",)))
    assert not np.allclose(naive.columns["latency_s"], c["latency_s"])  # the setting reaches the pass


@pytest.mark.parametrize("distinct", [True, False])
def test_blocks_of_contexts_give_the_same_points(devices, monkeypatch, distinct):
    """A grid too big for one pass is split into blocks: of distinct rows (each passed once, its results gathered
    for every context: sweep/distinct.py), or of contexts (where the distinct rows' results would not stay small,
    DISTINCT_CELLS): the very same floats, more passes."""
    from explorer.core.sweep import run as run_mod
    from explorer.core.sweep.distinct import distinct_rows
    from explorer.core.workload.context_axis import stack_contexts

    model = get_template("gpt2").build()
    grid = Grid(batches=(1, 2, 8), seq_lens=(128, 512), phases=("prefill", "decode"), precisions=("fp16", "fp8"))
    if not distinct:
        monkeypatch.setattr(run_mod, "DISTINCT_CELLS", 0)
    whole = run_mod.sweep(model, devices, grid)
    monkeypatch.setattr(run_mod, "MAX_CELLS", 1)  # every distinct row, or every context, its own pass
    split = run_mod.sweep(model, devices, grid)
    rows = len(distinct_rows(stack_contexts(model, run_mod.contexts_of(model, grid)).table)[0])
    assert rows < 12 * 15  # gpt2's 12 contexts of 15 rows: a decode step's projections repeat at both lengths
    assert whole.passes == 2 and split.passes == 2 * (rows if distinct else 12)
    for name in ("latency_s", "energy_per_token_j", "memory_bytes", "cost_per_million_tokens_usd"):
        np.testing.assert_array_equal(split.columns[name], whole.columns[name])
    np.testing.assert_array_equal(split.columns["pareto"], whole.columns["pareto"])


def test_a_large_grid_leaves_the_table_cache_alone(devices):
    """A sweep of more contexts than build_table's cache holds (64) would evict every table in it and miss on each
    of its own: it builds its tables without the cache, so the caller's cached table stays."""
    from explorer.core.workload.model import build_table

    model = get_template("gpt2").build()
    mine = build_table(model, Context(batch=3, seq_len=100))
    sweep(model, devices[:1], Grid(batches=tuple(range(1, 41)), seq_lens=(128, 256), phases=("decode",)))
    assert build_table(model, Context(batch=3, seq_len=100)) is mine
