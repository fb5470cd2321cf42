"""The system pass: sharding by hand, the one-device identity, offload bounded by the host link, invariants."""

from dataclasses import replace

import numpy as np
import pytest
from hand_systems import hgx
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.core.analysis.evaluate import evaluate
from explorer.core.hardware.system import single_device
from explorer.core.parallel.layout import Layout, LayoutError, candidates, check
from explorer.core.parallel.system_pass import Options, analyze_system, model_shape
from explorer.core.workload.layers import Context
from explorer.core.workload.templates import get_template

LLAMA70 = get_template("llama2-70b").build()
DECODE = Context(batch=8, phase="decode", seq_len=4096)


def test_one_device_system_equals_the_single_device_analysis(devices):
    h100 = devices["nvidia-h100-sxm5"]
    for ctx in (DECODE, Context(batch=2, phase="prefill", seq_len=512)):
        r = analyze_system(LLAMA70, single_device(h100.id), h100, [Layout()], "fp16", ctx)
        a = evaluate(LLAMA70, [h100], "fp16", ctx)
        assert r.step_time[0] == pytest.approx(a.totals.time[0], rel=1e-12)
        assert r.memory_bytes[0] == pytest.approx(a.totals.memory_bytes, rel=1e-12)
        assert r.comm_time[0] == 0 and r.send_time[0] == 0


def test_llama2_70b_tp8_weights_and_kv_per_device_by_hand(devices):
    """Llama-2-70B (68,976,648,192 parameters, 64 query heads, 8 KV heads of 128, 80 blocks) at TP 8, fp16.
    Replicated on every device: the 161 RMSNorm weight vectors of 8,192 (1,318,912 parameters); all else / 8."""
    r = analyze_system(LLAMA70, hgx(), devices["nvidia-h100-sxm5"], [Layout(tp=8)], "fp16", DECODE)
    norms = 161 * 8192
    assert r.weight_bytes[0] == 2 * ((68_976_648_192 - norms) / 8 + norms)  # 17,246,470,144 B
    # KV cache: batch 8 x 4,096 positions x 80 blocks x (K and V) x 8 KV heads x 128 x 2 B, over 8 devices = one
    # KV head per device
    assert r.kv_bytes[0] == 8 * 4096 * 80 * 2 * 8 * 128 * 2 / 8 == 1_342_177_280
    assert r.fits[0]
    # off-chip traffic per step: at least the weights and KV cache each device reads
    assert r.memory_names[0] == "HBM3"
    assert r.memory_traffic[0, 0] >= r.weight_bytes[0] + r.kv_bytes[0]
    assert r.memory_traffic[0, 0] < 1.2 * (r.weight_bytes[0] + r.kv_bytes[0])


def test_kv_heads_fewer_than_tp_are_replicated(devices):
    two_nodes = hgx(nodes=2)
    r = analyze_system(LLAMA70, two_nodes, devices["nvidia-h100-sxm5"], [Layout(tp=16)], "fp16", DECODE)
    assert r.kv_bytes[0] == 8 * 4096 * 80 * 2 * 8 * 128 * 2 / 8  # 8 KV heads over 16 devices: each holds one
    assert r.level_bytes[0, 1] > 0  # the TP group spans two nodes: its all-reduces cross the network


def test_offloaded_weights_step_is_bounded_by_the_host_link(devices):
    """Llama-2-70B fp16 on one 80 GB H100 at batch 1: 137.95 GB of weights do not fit. With offload, the excess
    streams over PCIe 5 x16 (128 GB/s bidirectional = 64 GB/s per direction) at every step:
    step = (weights + KV + activations - 80 GB) / 64 GB/s, far above the HBM-bound time."""
    h100 = devices["nvidia-h100-sxm5"]
    one = replace(hgx(devices_per_node=1), devices=1)
    ctx = replace(DECODE, batch=1)
    r = analyze_system(LLAMA70, one, h100, [Layout()], "fp16", ctx, options=Options(offload=True))
    excess = r.weight_bytes[0] + r.kv_bytes[0] + r.activation_bytes[0] - 80e9
    assert r.host_time[0] == pytest.approx(excess / 64e9, rel=1e-12)
    assert r.step_time[0] == pytest.approx(excess / 64e9, rel=1e-12)
    assert 0.9 < r.step_time[0] < 1.0  # about 58.1 GB / 64 GB/s = 0.91 s
    assert r.fits[0]
    assert not analyze_system(LLAMA70, one, h100, [Layout()], "fp16", ctx).fits[0]


def test_pipeline_bubble_and_microbatches(devices):
    h100 = devices["nvidia-h100-sxm5"]
    lays = [Layout(pp=4, dp=2), Layout(pp=4, dp=2, microbatches=4)]
    r = analyze_system(LLAMA70, hgx(), h100, lays, "fp16", DECODE)
    for k, m in enumerate((1, 4)):  # decode: steps follow each other, max(m, pp) stage passes per step
        assert r.step_time[k] == pytest.approx(4 * r.stage_time[k] + r.send_time[k])
        assert r.bubble_time[k] == pytest.approx((4 - m) * r.stage_time[k])
        assert r.latency[k] == pytest.approx(4 * r.stage_time[k] + r.send_time[k])
    prefill = Context(batch=8, phase="prefill", seq_len=512)
    p = analyze_system(LLAMA70, hgx(), h100, lays, "fp16", prefill)
    for k, m in enumerate((1, 4)):  # one pass: fill and drain, (m + pp - 1) stage passes
        assert p.step_time[k] == pytest.approx((m + 3) * p.stage_time[k] + p.send_time[k])
        assert p.bubble_time[k] == pytest.approx(3 * p.stage_time[k])
    assert p.bubble_time[1] / p.step_time[1] < p.bubble_time[0] / p.step_time[0]  # bubble fraction 3/7 < 3/4
    assert p.throughput[1] > p.throughput[0]  # compute-bound prefill: micro-batches fill the pipeline


def test_expert_parallel_mixtral(devices):
    mixtral = get_template("mixtral-8x7b").build()
    ctx = Context(batch=64, phase="decode", seq_len=2048)
    h100 = devices["nvidia-h100-sxm5"]
    r = analyze_system(mixtral, hgx(), h100, [Layout(tp=8), Layout(tp=8, ep=8)], "fp16", ctx)
    assert r.weight_bytes[0] == pytest.approx(r.weight_bytes[1])  # both hold 1/8 of every expert's weights
    assert r.imbalance[0] == 1.0 and r.imbalance[1] > 1.0  # 128 assignments over 8 devices: the busiest is hotter
    # 64 tokens x top-2 = 128 assignments over 8 devices (16 on average); the busiest expects 22.47 (exact)
    from explorer.core.parallel.experts import expected_max_load

    assert r.imbalance[1] == pytest.approx(expected_max_load(128, 8) / 16)
    assert 1.3 < r.imbalance[1] < 1.5
    assert r.level_bytes[1, 0] > 0


def test_bad_layouts_name_the_field():
    shape = model_shape(LLAMA70, DECODE)
    for layout, field in ((Layout(tp=3, dp=1), "tp x pp x dp"), (Layout(tp=8, pp=1, dp=1, ep=2), "ep"),
                          (Layout(pp=8, dp=1, microbatches=3), "microbatches"), (Layout(dp=8, tp=1), None)):
        if field is None:
            check(layout, shape, 8)
            continue
        with pytest.raises(LayoutError, match=field):
            check(layout, shape, 8)
    with pytest.raises(LayoutError, match="^tp: 3 does not divide"):
        check(Layout(tp=3, dp=2), replace(shape, batch=2), 6)
    with pytest.raises(LayoutError, match="^dp: 16 replicas"):
        check(Layout(dp=16), shape, 16)


@settings(max_examples=15, deadline=None)
@given(batch=st.sampled_from([1, 2, 8, 16]), nodes=st.sampled_from([1, 2]))
def test_search_returns_only_valid_layouts_and_weights_never_grow_with_tp(batch, nodes):
    from explorer.core.hardware.catalog_files import load_shipped_devices

    h100 = next(d for d in load_shipped_devices() if d.id == "nvidia-h100-sxm5")
    system = hgx(nodes=nodes)
    ctx = replace(DECODE, batch=batch, seq_len=1024)
    shape = model_shape(LLAMA70, ctx)
    layouts = candidates(shape, system.devices)
    assert layouts
    for lay in layouts:
        check(lay, shape, system.devices)
    r = analyze_system(LLAMA70, system, h100, layouts, "fp16", ctx)
    assert np.all(np.isfinite(r.step_time)) and np.all(r.step_time > 0)
    by_pp_dp = {}
    for lay, w in zip(r.layouts, r.weight_bytes):
        by_pp_dp.setdefault(lay.pp, []).append((lay.tp, w))
    for rows in by_pp_dp.values():
        rows.sort()
        assert all(b[1] <= a[1] for a, b in zip(rows, rows[1:]))
