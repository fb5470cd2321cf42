"""Weights, activations and KV cache each in their own format: bytes follow each tensor's real bits, the
multiplies compute at the wider operand's precision with the dequantization counted, and a device without a
peak there computes at the nearest wider precision it has, with a note. Unset formats change nothing."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest

from explorer.core.analysis.device_arrays import device_arrays
from explorer.core.analysis.evaluate import evaluate
from explorer.core.analysis.tensor_bytes import tensor_bytes
from explorer.core.formats import TensorFormats
from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.workload.layers import Context
from explorer.core.workload.templates import get_template

DEVICES = {d.id: d for d in load_shipped_devices()}
H100, B200, A100 = DEVICES["nvidia-h100-sxm5"], DEVICES["nvidia-b200"], DEVICES["nvidia-a100-sxm4-80gb"]
LLAMA = get_template("llama2-7b")
PREFILL = Context(batch=1, seq_len=2048, phase="prefill")
DECODE = Context(batch=8, seq_len=4096, phase="decode")


def run(ctx=PREFILL, devices=(H100, B200), **formats):
    return evaluate(LLAMA.build(), devices, "fp16", ctx, formats=TensorFormats.of("fp16", **formats))


FP16 = run()


def test_unset_formats_are_exactly_the_analysis_of_the_precision_alone():
    for ctx in (PREFILL, DECODE):
        plain = evaluate(LLAMA.build(), (H100, B200), "fp16", ctx)
        same = evaluate(LLAMA.build(), (H100, B200), "fp16", ctx, formats=TensorFormats.of("fp16"))
        assert same.devices.formats is None and same.devices.computes == ()
        for f in fields(plain):
            a, b = getattr(plain, f.name), getattr(same, f.name)
            if isinstance(a, np.ndarray):
                assert np.array_equal(a, b, equal_nan=True), f.name
        for f in fields(plain.totals):
            a, b = getattr(plain.totals, f.name), getattr(same.totals, f.name)
            assert np.array_equal(a, b, equal_nan=True) if isinstance(a, np.ndarray) else a == b, f.name


@pytest.mark.parametrize("weights, bits", [("int4-g128", 4.125), ("mxfp4", 4.25), ("int4", 4.0), ("mxfp8", 8.25)])
def test_weight_bytes_are_the_formats_bits_over_sixteen_of_fp16_exactly(weights, bits):
    r = run(weights=weights)
    assert np.array_equal(r.weight_bytes, FP16.weight_bytes * bits / 16)
    assert r.totals.weight_bytes == FP16.totals.weight_bytes * bits / 16
    assert np.array_equal(r.activation_bytes, FP16.activation_bytes)  # activations stay in fp16


def test_w4a16_weights_are_a_quarter_of_fp16_plus_their_scales():
    r = run(weights="int4-g128")
    quarter = FP16.totals.weight_bytes / 4
    assert r.totals.weight_bytes == quarter + quarter * (16 / 128) / 4  # the scales: 1/32 of the int4 bytes
    assert r.totals.weight_bytes == pytest.approx(6.738e9 * 4.125 / 8, rel=1e-3)  # 6.74 B params: 3.47 GB


def test_nvfp4_weights_are_four_and_a_half_bits_plus_one_fp32_per_tensor():
    r = run(weights="nvfp4")
    has_weights = r.table.columns["weight_elems"] > 0
    assert np.array_equal(r.weight_bytes, FP16.weight_bytes * 4.5 / 16 + 4 * has_weights)
    c = r.table.columns
    tensors = float(np.sum((c["params"] > 0) * c["count"]))  # 32 layers x 8 weight tensors + embeddings, norms
    assert r.totals.weight_bytes == FP16.totals.weight_bytes * 4.5 / 16 + 4 * tensors
    assert 4 * tensors < 2e-6 * r.totals.weight_bytes  # negligible but counted


def test_fp8_kv_cache_halves_the_decode_kv_bytes_of_llama2_7b():
    fp16 = run(DECODE)
    fp8 = run(DECODE, kv_cache="fp8")
    assert fp8.totals.kv_cache_bytes == fp16.totals.kv_cache_bytes / 2
    assert fp16.totals.kv_cache_bytes == 2 * 32 * 8 * 4096 * 4096 * 2  # K and V, 32 layers, 8 x 4096 tokens
    kv16, kv8 = (tensor_bytes(r.table.columns, r.devices).kv for r in (fp16, fp8))
    assert kv16.sum() > 0 and np.array_equal(kv8, kv16 / 2)
    assert np.array_equal(fp8.weight_bytes, fp16.weight_bytes)
    # fp8 KV under fp16 multiplies: the cache read is converted, one FLOP per element
    assert np.array_equal(fp8.flops - fp16.flops, fp8.table.columns["kv_read_elems"])


def test_w4a16_computes_in_16_bit_and_counts_one_flop_per_weight_element_dequantized():
    r = run(weights="int4-g128")
    assert r.precision == "fp16" and r.devices.formats.compute == "fp16"
    assert np.array_equal(r.flops - FP16.flops, r.table.columns["weight_elems"])
    assert np.array_equal(r.devices.peak, FP16.devices.peak)
    notes = " ".join(r.devices.formats.notes())
    assert "compute at fp16" in notes and "weights dequantized" in notes and "4.125 bits" in notes
    decode = run(DECODE, weights="int4-g128")  # decode is memory bound: the int4 weights make it faster
    assert np.all(decode.totals.time < run(DECODE).totals.time)


def test_mxfp4_computes_at_fp4_on_b200_and_falls_back_to_fp8_on_h100_with_a_note():
    r = run(weights="mxfp4", activations="mxfp4")
    dev = r.devices
    assert dev.precision == "fp4" and dev.computes == ("fp8", "fp4")
    assert dev.peak[0] == H100.peak_flops("fp8") and dev.peak[1] == B200.peak_flops("fp4") == 9e15
    assert dev.precision_notes[1] == ""
    assert "no fp4 peak: computes at fp8" in dev.precision_notes[0]
    assert "weights and activations converted to fp8" in dev.precision_notes[0]
    # H100 converts the MXFP4 weights and activations to FP8 before its multiplies: one FLOP per element
    c = r.table.columns
    converted = c["weight_elems"] + c["input_elems"] + c["output_elems"]
    assert np.array_equal(r.flops, r.table.flops)  # none at fp4, where B200 computes natively
    assert r.totals.flops[0] - r.totals.flops[1] == pytest.approx(float(c["count"] @ converted), rel=1e-12)


def test_mxfp6_uses_the_fp6_peak_where_the_vendor_prints_one():
    r = run(weights="mxfp6", activations="mxfp6")
    assert r.devices.computes == ("fp8", "fp6") and r.devices.peak[1] == 4.5e15


def test_fp8_preset_falls_back_to_fp16_on_a100():
    r = run(devices=(A100, H100), weights="fp8", activations="fp8", kv_cache="fp8")
    assert r.devices.computes == ("fp16", "fp8")
    assert r.devices.peak[0] == A100.peak_flops("fp16")
    assert "no fp8 peak: computes at fp16" in r.devices.precision_notes[0]
    assert np.array_equal(r.weight_bytes, FP16.weight_bytes / 2)


def test_a_device_without_any_wider_peak_has_no_compute_time(make_device):
    npu = make_device("npu", "100 TOP/s", "100 GB/s", precision="int8")
    r = evaluate(LLAMA.build(), (npu,), "fp16", PREFILL, formats=TensorFormats.of("fp16", weights="int4-g128"))
    assert np.isnan(r.devices.peak[0]) and "nor a wider one" in r.devices.precision_notes[0]


def test_device_arrays_keep_the_old_rule_for_a_precision_alone():
    plain = device_arrays((H100,), "fp4")
    assert np.isnan(plain.peak[0]) and plain.computes == () and plain.precision_notes == ()


def test_the_roofline_and_energy_views_name_the_fallback_precision():
    from explorer.core.analysis.energy_view import compute_energy_view
    from explorer.core.analysis.roofline_view import compute_roofline

    r = run(weights="mxfp4", activations="mxfp4")
    h100 = compute_roofline(r, device_index=0)
    assert h100.focus_note == "" and "no fp4 peak: computes at fp8" in h100.precision_note
    assert h100.devices[0].ceiling.precision == "fp8" and h100.devices[0].ceiling.flops == 1979e12
    assert all(c.precision != "fp8" for c in h100.devices[0].other_ceilings)
    assert h100.devices[1].ceiling.precision == "fp4" and h100.devices[1].missing == ""
    b200 = compute_roofline(r, device_index=1)
    assert b200.focus_note == b200.precision_note == ""
    assert compute_energy_view(r, 0).precision == "fp8" and compute_energy_view(r, 1).precision == "fp4"
    plain = compute_roofline(run(), device_index=0)
    assert plain.precision_note == "" and plain.devices[0].ceiling.precision == "fp16"
