"""The pass on long layer-by-layer models (issue 22 (d)): grouped by distinct row (analysis/row_classes.py) and by
distinct GEMM shape (analysis/gemm_rows.py), and with the other rows' time as the roofline of the slowest level, it
gives the same floats as the pass over every row, and the pass as it was (tests/core/evaluate_reference.py), on random
repeated models, device sets, precisions and formats."""

import numpy as np
import pytest
from evaluate_reference import reference_evaluate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_evaluate_fast import CATALOG, assert_same, synthetic

from explorer.core.analysis import gemm_rows, row_classes
from explorer.core.analysis.device_arrays import device_arrays
from explorer.core.analysis.evaluate import evaluate, time_energy
from explorer.core.analysis.kernel import Workspace
from explorer.core.analysis.plan import device_plan, table_plan
from explorer.core.formats import TensorFormats
from explorer.core.hardware.device_file import device_from_dict
from explorer.core.workload.layers import Context
from explorer.core.workload.model import LayerSpec, Model, build_table

HIDDEN = 64
PALETTE = [("dense", {"in_features": HIDDEN, "out_features": HIDDEN}), ("layernorm", {}), ("gelu", {}), ("add", {}),
           ("attention", {"heads": 4}), ("matmul", {"m": 48, "n": HIDDEN, "k": 96}),
           ("matmul", {"m": HIDDEN, "n": HIDDEN, "k": 32, "weights": False})]
FIELDS = ("compute_time", "memory_time", "attainable", "memory_bound", "ideal_time", "mapping_efficiency", "time",
          "level_traffic", "level_energy", "compute_energy", "energy", "calibrated_time", "calibrated")


def repeated_model(block: list[int], repeats: int, extra: list[int]) -> Model:
    """``repeats`` copies of a block of palette layers, then a few more: a model built layer by layer."""
    picks = block * repeats + extra
    layers = [LayerSpec.make(PALETTE[p][0], f"l{i}", **PALETTE[p][1]) for i, p in enumerate(picks)]
    return Model.make("repeated", {"tokens": 32, "hidden": HIDDEN}, layers)


@pytest.fixture
def grouped_always(monkeypatch):
    monkeypatch.setattr(row_classes, "MIN_CELLS", 0)
    monkeypatch.setattr(row_classes, "MIN_DEVICES", 1)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(block=st.lists(st.integers(0, len(PALETTE) - 1), min_size=1, max_size=6), repeats=st.integers(2, 12),
       extra=st.lists(st.integers(0, len(PALETTE) - 1), max_size=3), batch=st.integers(1, 16),
       phase=st.sampled_from(["prefill", "decode"]), precision=st.sampled_from(["fp16", "int8", "fp8"]),
       catalog=st.lists(st.sampled_from(CATALOG), min_size=1, max_size=5, unique_by=lambda d: d.id),
       extra_devices=st.lists(synthetic, max_size=3), weights=st.sampled_from([None, "int4-g128", "fp8"]))
def test_grouped_pass_equals_every_row_and_the_pass_as_it_was(grouped_always, block, repeats, extra, batch, phase,
                                                              precision, catalog, extra_devices, weights):
    model = repeated_model(block, repeats, extra)
    ctx = Context(batch=batch, seq_len=32, phase=phase)
    devices = [*catalog, *extra_devices]
    formats = TensorFormats.of(precision, weights=weights) if weights else None
    got = evaluate(model, devices, precision, ctx, formats=formats)
    assert_same(got, reference_evaluate(model, devices, precision, ctx, formats=formats))
    with pytest.MonkeyPatch.context() as mp:  # every row computed: the very same floats
        mp.setattr(row_classes, "MIN_CELLS", 1 << 62)
        plain = evaluate(model, devices, precision, ctx, formats=formats)
        dev = got.devices
        t_plain, e_plain = time_energy(got.table, dev, ctx.attention)
    for name in FIELDS:
        assert np.array_equal(getattr(got, name), getattr(plain, name), equal_nan=True), name
    for name in ("time", "calibrated_time", "energy", "energy_by_level", "mapping_efficiency", "ideal_time"):
        assert np.array_equal(getattr(got.totals, name), getattr(plain.totals, name), equal_nan=True), name
    t, e = time_energy(got.table, dev, ctx.attention, Workspace())
    assert np.array_equal(t, t_plain, equal_nan=True) and np.array_equal(e, e_plain, equal_nan=True)
    assert np.array_equal(t, got.time, equal_nan=True) and np.array_equal(e, got.energy, equal_nan=True)


def test_distinct_rows_and_shapes_of_a_hand_made_model(grouped_always):
    # 10 x (dense, gelu, dense, layernorm): the two dense layers are one row; three distinct rows in all
    model = repeated_model([0, 2, 0, 1], 10, [])
    table = build_table(model, Context(batch=2))
    tp = table_plan(table)
    cls = row_classes.row_classes(table, tp, n_dev=8, attention="naive")
    assert len(cls.table) == 3 and len(cls.inv) == 40
    assert np.array_equal(cls.inv[:4], [cls.inv[0], cls.inv[1], cls.inv[0], cls.inv[3]])
    assert len(set(cls.inv[:4].tolist())) == 3 and np.array_equal(cls.inv, np.tile(cls.inv[:4], 10))
    assert row_classes.row_classes(table, tp, n_dev=8, attention="fused") is None  # K/V re-reads per row: not grouped
    dev = device_arrays(CATALOG[:3], "fp16")
    rp = tp.rows(table, dev, device_plan(dev))
    gs = gemm_rows.gemm_shapes(tp, rp)  # 20 GEMM rows of one shape (1024 x 64 x 64: 2 x 32 tokens x 64 features)
    assert gs.n_shapes == 1 and len(gs.inv) == 20 and gs.m[0, 0] == 64 and gs.n[0, 0] == 64 and gs.k[0, 0] == 64
    assert np.array_equal(gs.rows, np.tile([1, 0, 1, 0], 10))


def test_rows_that_do_not_repeat_are_not_grouped(grouped_always):
    layers = [LayerSpec.make("matmul", f"m{i}", m=8 + i, n=16, k=16) for i in range(12)]
    table = build_table(Model.make("distinct", {"tokens": 8, "hidden": 16}, layers), Context())
    assert row_classes.row_classes(table, table_plan(table), n_dev=50, attention="naive") is None
    dev = device_arrays(CATALOG[:4], "fp16")
    tp = table_plan(table)
    assert gemm_rows.gemm_shapes(tp, tp.rows(table, dev, device_plan(dev))).inv is None  # each GEMM row its own


def level_device(name: str, bandwidths: list[str | None]):
    memory = [{"name": f"M{j}", "role": "offchip" if j == 0 else "onchip", "capacity": "1 GB",
               **({"bandwidth": bw} if bw else {})} for j, bw in enumerate(bandwidths)]
    return device_from_dict({"id": name, "name": name, "vendor": "v", "kind": "gpu",
                             "peak": {"fp16": "100 TFLOP/s"}, "memory": memory})


def test_the_roofline_rows_shortcut_holds_only_where_it_gives_the_same_floats():
    # the slowest level of a device is its least bandwidth x eta_m, over the levels of known bandwidth
    dev = device_arrays([level_device("a", ["2 TB/s", "9 TB/s"]), level_device("b", ["1 TB/s"])], "fp16")
    r = gemm_rows.roof(device_plan(dev))
    assert r.ok and not r.all_present  # the second device has one level of two
    np.testing.assert_array_equal(r.bw[0], np.array([2e12, 1e12]) * dev.eta_m)
    unknown = device_plan(device_arrays([level_device("c", ["2 TB/s", None])], "fp16"))
    assert gemm_rows.roof(unknown).ok  # an on-chip level of unknown bandwidth has no time: the HBM's is the slowest



def test_what_the_pass_keeps_of_a_table_goes_with_it(grouped_always):
    import gc

    from explorer.core.analysis import plan

    model = repeated_model([0, 1, 4], 6, [5])
    dev = device_arrays(CATALOG[:4], "fp16")
    gc.collect()
    before = (len(plan._TABLES), len(gemm_rows._SHAPES), len(row_classes._CLASSES))
    table = build_table.__wrapped__(model, Context(batch=2, seq_len=32))
    evaluate(table, dev, ctx=Context(batch=2, seq_len=32))
    assert len(row_classes._CLASSES) == before[2] + 1 and len(gemm_rows._SHAPES) > before[1]
    del table
    gc.collect()
    assert (len(plan._TABLES), len(gemm_rows._SHAPES), len(row_classes._CLASSES)) == before


def test_devices_without_a_known_bandwidth_take_the_roofline_memory_time_on_the_fast_path():
    # ten catalog devices (Groq's LPU, Cerebras WSE-3, edge NPUs, ...) state no bandwidth: their memory time is
    # (bytes / bandwidth) / eta_m, NaN, on every row, as in the pass as it was; the other devices keep the shortcut
    dev = device_arrays(CATALOG, "fp16")
    r = gemm_rows.roof(device_plan(dev))
    no_bw = [j for j in range(len(CATALOG)) if not np.any(np.isfinite(dev.level_bw[j]))]
    assert r.ok and no_bw and list(r.fallback) == no_bw
    model = repeated_model([0, 1, 4, 5], 3, [])
    ctx = Context(batch=4, seq_len=32)
    got = evaluate(model, CATALOG, "fp16", ctx)
    assert_same(got, reference_evaluate(model, CATALOG, "fp16", ctx))
    assert np.all(np.isnan(got.time[:, no_bw]))
