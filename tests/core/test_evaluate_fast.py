"""The analysis pass with its plans (explorer/core/analysis/plan.py) and cross terms (kernel.py) equals the pass as it
was (tests/core/evaluate_reference.py: main 5a6f242's ``evaluate``, kept verbatim) on random models, contexts,
precisions, tensor formats and device sets, field by field, to 1e-12 relative (in practice the same floats); the
lean ``time_energy`` and its reused buffers give evaluate's numbers; results own their arrays (a later pass never
changes an earlier result, and the arrays shared with the plans are read-only); the plans are cached by object and
dropped with it."""

import gc
import weakref

import numpy as np
import pytest
from evaluate_reference import reference_evaluate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from explorer.core.analysis import plan
from explorer.core.analysis.device_arrays import device_arrays
from explorer.core.analysis.evaluate import evaluate, time_energy
from explorer.core.analysis.kernel import Workspace
from explorer.core.formats import TensorFormats
from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.hardware.device_file import device_from_dict
from explorer.core.workload.layers import Context
from explorer.core.workload.model import LayerSpec, Model, build_table
from explorer.core.workload.templates import get_template

CATALOG = load_shipped_devices()
TEMPLATES = ("gpt2", "llama2-7b", "mixtral-8x7b", "bert-base", "resnet50")
SKIP = {"devices", "model", "table", "ctx"}


def synthetic_device(i: int, engine: str, levels: int, known_bw: bool, peak: float, bw: float):
    """A device of each kind the pass branches on: systolic (each dataflow), tensor cores (with and without a block
    tile), no engine; one to three memory levels, an on-chip bandwidth unknown."""
    eng = {"systolic": {"type": "systolic", "rows": 128, "cols": 96, "dataflow": ("ws", "os", "is")[i % 3],
                        "units": 1 + i % 4},
           "tensor_core": {"type": "tensor_core", "sm_count": 60 + i, **({"block_tile": {"m": 128, "n": 64}} if i % 2 else {})},
           "none": None}[engine]
    memory = [{"name": "HBM", "role": "offchip", "capacity": "32 GB", "bandwidth": f"{bw:.0f} GB/s"}]
    if levels > 1:
        memory.append({"name": "L2", "role": "onchip", "capacity": "40 MB",
                       **({"bandwidth": "9 TB/s"} if known_bw else {})})
    if levels > 2:
        memory.append({"name": "SMEM", "role": "onchip", "capacity": "228 KiB", "bandwidth": "30 TB/s"})
    data = {"id": f"s{i}", "name": f"s{i}", "vendor": "test", "kind": "gpu",
            "peak": {"fp16": f"{peak:.1f} TFLOP/s", "int8": f"{2 * peak:.1f} TFLOP/s"}, "memory": memory}
    if eng:
        data["matrix_engine"] = eng
    return device_from_dict(data)


synthetic = st.builds(synthetic_device, st.integers(0, 50), st.sampled_from(["systolic", "tensor_core", "none"]),
                      st.integers(1, 3), st.booleans(), st.floats(20, 2000), st.floats(200, 8000))
catalog_subset = st.lists(st.sampled_from(CATALOG), min_size=1, max_size=6, unique_by=lambda d: d.id)


def assert_same(got, want: dict) -> None:
    for name, ref in want.items():
        if name in SKIP:
            continue
        if name == "totals":
            for field, r in ref.items():
                assert_close(getattr(got.totals, field), r, f"totals.{field}")
            continue
        assert_close(getattr(got, name), ref, name)


def assert_close(a, b, name: str) -> None:
    if isinstance(b, np.ndarray):
        a = np.asarray(a)
        assert a.shape == b.shape, name
        if b.dtype.kind in "fc":
            assert np.array_equal(np.isnan(a), np.isnan(b)), name
            ok = ~np.isnan(b)
            np.testing.assert_allclose(a[ok], b[ok], rtol=1e-12, atol=0, err_msg=name)
        else:
            assert np.array_equal(a, b), name
    elif isinstance(b, float):
        assert (a == pytest.approx(b, rel=1e-12)) or (np.isnan(a) and np.isnan(b)), name
    else:
        assert a == b, name


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(template=st.sampled_from(TEMPLATES), batch=st.integers(1, 64), seq=st.integers(1, 4096),
       phase=st.sampled_from(["prefill", "decode"]), attention=st.sampled_from(["naive", "fused"]),
       precision=st.sampled_from(["fp16", "bf16", "int8", "fp8"]), catalog=catalog_subset,
       extra=st.lists(synthetic, max_size=3),
       weights=st.sampled_from([None, "int4-g128", "nvfp4", "fp8"]))
def test_the_planned_pass_equals_the_pass_as_it_was(template, batch, seq, phase, attention, precision, catalog, extra,
                                                    weights):
    model = get_template(template).build()
    ctx = Context(batch=batch, seq_len=seq if model.default_seq_len() else None, phase=phase, attention=attention)
    devices = [*catalog, *extra]
    formats = TensorFormats.of(precision, weights=weights) if weights else None
    try:
        want = reference_evaluate(model, devices, precision, ctx, formats=formats)
    except ValueError:  # a context the model does not take: both refuse it
        with pytest.raises(ValueError):
            evaluate(model, devices, precision, ctx, formats=formats)
        return
    got = evaluate(model, devices, precision, ctx, formats=formats)
    assert_same(got, want)
    again = evaluate(model, devices, precision, ctx, formats=formats)  # from the cached plans: the same
    assert_same(again, want)


def test_a_model_with_no_rows_and_devices_of_every_kind():
    devices = [synthetic_device(i, e, lv, kb, 300.0, 2000.0) for i, (e, lv, kb) in
               enumerate([("systolic", 3, True), ("tensor_core", 2, False), ("none", 1, True)])]
    empty = Model.make("empty", {"tokens": 8, "hidden": 16}, [])
    assert_same(evaluate(empty, devices), reference_evaluate(empty, devices))
    layers = [LayerSpec.make("dense", f"d{i}", in_features=16 * (i + 1), out_features=24) for i in range(3)]
    only_gemms = Model.make("gemms", {"tokens": 8, "hidden": 16}, [layers[0]])
    assert_same(evaluate(only_gemms, devices), reference_evaluate(only_gemms, devices))


def test_time_energy_is_evaluates_and_its_buffers_are_reused():
    devices = CATALOG[:7]
    model = get_template("llama2-7b").build()
    dev = device_arrays(devices, "fp16")
    work = Workspace()
    for ctx in (Context(batch=8, seq_len=2048, phase="prefill"), Context(batch=2, seq_len=128, phase="decode"),
                Context(batch=4, seq_len=700, phase="decode", attention="fused")):
        table = build_table(model, ctx)
        full = evaluate(table, dev, ctx=ctx)
        for ws in (None, work):
            t, e = time_energy(table, dev, ctx.attention, ws)
            assert np.array_equal(t, full.time, equal_nan=True) and np.array_equal(e, full.energy, equal_nan=True)
    first = work.buffers["traffic"]
    time_energy(build_table(model, Context(batch=1, seq_len=64, phase="decode")), dev, "naive", work)
    assert work.buffers["traffic"] is first  # a smaller pass reuses the buffer, no new allocation


def test_a_later_pass_never_changes_an_earlier_result_and_shared_arrays_are_read_only():
    model = get_template("gpt2").build()
    a = evaluate(model, CATALOG[:5], "fp16", Context(batch=4, seq_len=256))
    kept = {name: np.copy(getattr(a, name)) for name in ("time", "energy", "level_traffic", "flops", "bytes")}
    evaluate(model, CATALOG[:5], "int8", Context(batch=4, seq_len=256))
    evaluate(model, CATALOG[:5], "fp16", Context(batch=4, seq_len=256))
    for name, value in kept.items():
        assert np.array_equal(getattr(a, name), value, equal_nan=True), name
    for name in ("flops", "bytes", "intensity", "regime", "weight_bytes", "activation_bytes"):
        with pytest.raises(ValueError):  # shared with the table's plan: read-only
            getattr(a, name)[0] = 1.0
    a.time[0, 0] = 1.0  # the rows x devices arrays are the result's own


def test_plans_are_kept_per_object_and_dropped_with_it():
    model = get_template("gpt2").build()
    table = build_table.__wrapped__(model, Context(batch=3, seq_len=100))
    assert plan.table_plan(table) is plan.table_plan(table)
    dev = device_arrays(CATALOG[:3], "fp16")
    assert plan.device_plan(dev) is plan.device_plan(dev)
    # weak references, not the caches' sizes: a worker thread left by an earlier test (the app's design-space
    # sweep) may add plans of its own tables meanwhile
    kept = [weakref.ref(plan.table_plan(table)), weakref.ref(plan.device_plan(dev))]
    del table, dev
    gc.collect()
    assert [ref() for ref in kept] == [None, None]
    same = plan.cached_device_arrays(CATALOG[:3], "fp16")
    assert plan.cached_device_arrays(list(CATALOG[:3]), "fp16") is same
    assert plan.cached_device_arrays(CATALOG[:3], "int8") is not same
    other = device_from_dict({"id": CATALOG[0].id, "name": "x", "vendor": "v", "kind": "gpu",
                              "peak": {"fp16": "1 TFLOP/s"},
                              "memory": [{"name": "HBM", "role": "offchip", "capacity": "1 GB",
                                          "bandwidth": "1 TB/s"}]})
    assert plan.cached_device_arrays([other, *CATALOG[1:3]], "fp16").devices[0] is other
