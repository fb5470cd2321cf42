"""The GEMM rows' terms per distinct device (analysis/engine_columns.py, used by analysis/gemm_rows.py; issue 22 (d)):
the mapping efficiency is computed once per distinct matrix engine and the square-tile re-reads once per distinct tile
column, then copied to the devices alike; the operands' sizes x bytes per element is folded once per shape only where that reorders exactly.
On device sets with repeated and different devices, every field is the same float as with each device computed on
its own, and as the pass as it was (tests/core/evaluate_reference.py)."""

import dataclasses

import numpy as np
import pytest
from evaluate_reference import reference_evaluate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_evaluate_fast import CATALOG, assert_same, synthetic, synthetic_device

from explorer.core.analysis import engine_columns, gemm_rows
from explorer.core.analysis.device_arrays import device_arrays
from explorer.core.analysis.evaluate import evaluate, time_energy
from explorer.core.analysis.plan import device_plan
from explorer.core.formats import TensorFormats
from explorer.core.workload.layers import Context
from explorer.core.workload.model import LayerSpec, Model, build_table

FIELDS = ("compute_time", "memory_time", "attainable", "memory_bound", "ideal_time", "mapping_efficiency", "time",
          "level_traffic", "level_energy", "compute_energy", "energy", "calibrated_time")


def distinct_gemms(n: int, copies: int = 1) -> Model:
    """Dense layers of growing width with a norm between: no two GEMM shapes alike (``copies`` > 1: that list of
    layers repeated, each shape ``copies`` times)."""
    layers = []
    for c in range(copies):
        for i in range(n):
            layers.append(LayerSpec.make("dense", f"d{c}.{i}", in_features=64 + 8 * i, out_features=72 + 8 * i))
            layers.append(LayerSpec.make("layernorm", f"n{c}.{i}"))
        layers.append(LayerSpec.make("matmul", f"mm{c}", m=48, n=40, k=96, weights=False))
    return Model.make("distinct", {"tokens": 24, "hidden": 64}, layers)


def bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.tobytes() == b.tobytes()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(picks=st.lists(st.sampled_from(CATALOG), min_size=1, max_size=4),
       extra=st.lists(synthetic, max_size=3), repeats=st.integers(1, 4), n=st.integers(1, 8),
       batch=st.integers(1, 8), precision=st.sampled_from(["fp16", "int8", "fp8"]),
       weights=st.sampled_from([None, "int4-g128", "nvfp4"]), attention=st.sampled_from(["naive", "fused"]),
       copies=st.integers(1, 3))
def test_repeated_devices_give_the_same_floats_as_each_on_its_own(picks, extra, repeats, n, batch, precision, weights,
                                                                   attention, copies):
    devices = [*picks, *extra] * repeats  # devices alike: their engines and tiles are computed once
    ctx = Context(batch=batch, seq_len=32, attention=attention)
    formats = TensorFormats.of(precision, weights=weights) if weights else None
    table = build_table(distinct_gemms(n, copies), ctx)
    dev = device_arrays(devices, precision, formats)
    got = evaluate(table, dev, ctx=ctx)
    assert_same(got, reference_evaluate(table, devices, precision, ctx, formats=formats))
    t, e = time_energy(table, dev, attention)
    assert bits_equal(t, got.time) and bits_equal(e, got.energy)
    with pytest.MonkeyPatch.context() as mp:  # each device computed on its own, no fold: the very same floats
        mp.setattr(engine_columns, "_distinct_cols", lambda key: None)
        mp.setattr(gemm_rows, "_exact_fold", lambda *a: None)
        alone = evaluate(dataclasses.replace(table), device_arrays(devices, precision, formats), ctx=ctx)
    for name in FIELDS:
        assert bits_equal(getattr(got, name), getattr(alone, name)), name


def test_the_distinct_columns_of_a_hand_made_device_set():
    a, b = synthetic_device(1, "tensor_core", 2, True, 300.0, 2000.0), synthetic_device(3, "tensor_core", 2, True,
                                                                                        300.0, 2000.0)
    s = synthetic_device(2, "systolic", 1, True, 100.0, 900.0)
    dp = device_plan(device_arrays([a, a, b, s, a, s], "fp16"))
    cs = engine_columns.columns(dp)
    # tensor cores a, a, b, a: a and b differ in SM count (61, 63); each engine's block tile and its half side by side
    params, inv = cs.tensor_core
    assert inv.tolist() == [0, 0, 1, 0] and params[2].tolist() == [61.0, 63.0, 61.0, 63.0]
    assert cs.systolic[1].tolist() == [0, 0] and cs.systolic[0][5].tolist() == [3.0]  # two alike: one engine, 3 units
    # tiles: a and b have the same memories (one column), the systolic device another
    assert cs.tiles_inv.tolist() == [0, 0, 0, 1, 0, 1] and cs.tiles4.shape[-1] == 2
    distinct = device_plan(device_arrays([a, b, s], "fp16"))
    alone = engine_columns.columns(distinct)
    assert alone.tiles_inv is None and alone.tensor_core[1] is None


def test_sizes_times_bytes_per_element_is_folded_only_where_it_reorders_exactly():
    dims, sizes = np.array([[[[64.0]]], [[[128.0]]]]), np.array([[[[3.0 * 7]]], [[[5.0 * 11]]]])
    # a power of two: multiplying by it is exact, so (sizes x x) x bpe == x x (sizes x bpe) for every x
    got = gemm_rows._exact_fold(dims, sizes, np.full_like(dims, 0.5))
    np.testing.assert_array_equal(got, sizes * 0.5)
    x = np.arange(0.0, 2000.0)[None, None, :, None] * 1.0000001  # re-read counts are integers; any float would do here
    np.testing.assert_array_equal((sizes * x) * 0.5, x * got)
    assert gemm_rows._exact_fold(dims, sizes, np.full_like(dims, 0.5625)) is None  # NVFP4: 4.5 bits, not a power of 2
    assert gemm_rows._exact_fold(dims, sizes, np.full_like(dims, np.nan)) is None
    assert gemm_rows._exact_fold(dims, sizes, np.zeros_like(dims)) is None
    assert gemm_rows._exact_fold(dims * 2.0 ** 61, sizes, np.full_like(dims, 2.0)) is None  # near overflow


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(picks=st.lists(st.sampled_from(CATALOG), min_size=1, max_size=4, unique_by=lambda d: d.id),
       extra=st.lists(synthetic, max_size=2), etas=st.lists(st.sampled_from([1.0, 0.7, 0.93, 0.5]), min_size=2,
                                                            max_size=2), n=st.integers(1, 6), batch=st.integers(1, 8))
def test_efficiency_factors_take_the_quotients_themselves(picks, extra, etas, n, batch):
    # with eta_c and eta_m 1 (every catalog device), F / (peak eta_c) and bytes / the slowest level's bandwidth are the
    # roofline's compute and memory times and are taken from them; any other factor on any device divides again
    devices = [d.with_efficiency(*etas) if i % 2 else d for i, d in enumerate([*picks, *extra])]
    ctx = Context(batch=batch, seq_len=32)
    table = build_table(distinct_gemms(n), ctx)
    dev = device_arrays(devices, "fp16")
    r = gemm_rows.roof(device_plan(dev))
    if len(devices) > 1:
        assert r.eta_m_one == (etas[1] == 1.0)
    assert_same(evaluate(table, dev, ctx=ctx), reference_evaluate(table, devices, "fp16", ctx))


def test_the_roofline_quotients_are_shared_only_bit_for_bit():
    a = synthetic_device(1, "tensor_core", 1, True, 300.0, 2000.0)
    plain = gemm_rows.roof(device_plan(device_arrays([a, a.with_efficiency(1.0, 1.0)], "fp16")))
    assert plain.same_peak and plain.same_bw and plain.eta_m_one
    slower = gemm_rows.roof(device_plan(device_arrays([a, a.with_efficiency(0.9, 0.8)], "fp16")))
    assert not slower.same_peak and not slower.same_bw and not slower.eta_m_one
