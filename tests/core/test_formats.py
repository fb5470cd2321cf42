"""Storage formats with their real bits (OCP MX v1.0, NVIDIA NVFP4, group quantization) and the per-tensor
assignment: which precision the multiplies compute at, which tensors are dequantized."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.core.formats import (
    FALLBACK,
    FORMATS,
    NVIDIA_NVFP4,
    OCP_MX,
    PRESETS,
    TensorFormats,
    fallback_precision,
    get_format,
)
from explorer.core.precision import BYTES_PER_ELEMENT, PRECISIONS


@pytest.mark.parametrize("name, bits", [
    ("int4-g128", 4 + 16 / 128),  # 4.125
    ("int4-g64", 4.25), ("int4-g32", 4.5), ("int8-g128", 8.125),
    ("mxfp8", 8 + 8 / 32),  # 8.25
    ("mxfp6", 6.25), ("mxfp4", 4 + 8 / 32), ("mxint8", 8.25),
    ("nvfp4", 4 + 8 / 16),  # 4.5, plus the per-tensor FP32 counted per tensor
])
def test_block_formats_count_their_scales(name, bits):
    f = get_format(name)
    assert f.bits == bits and f.bytes_per_element == bits / 8
    assert not f.plain


def test_the_formats_name_their_elements_and_scales_and_cite_their_sources():
    mx4, nv4 = get_format("mxfp4"), get_format("nvfp4")
    assert (mx4.element, mx4.scale, mx4.block, mx4.compute) == ("FP4 (E2M1)", "E8M0", 32, "fp4")
    assert (nv4.element, nv4.scale, nv4.block, nv4.tensor_scale_bits, nv4.compute) == (
        "FP4 (E2M1)", "FP8 E4M3", 16, 32, "fp4")
    assert get_format("mxfp8").compute == "fp8" and get_format("mxfp6").compute == "fp6"
    assert mx4.source == OCP_MX and "opencompute.org" in OCP_MX and "v1-0" in OCP_MX
    assert nv4.source == NVIDIA_NVFP4 and "developer.nvidia.com" in NVIDIA_NVFP4
    assert mx4.describe() == "mxfp4: FP4 (E2M1) + one E8M0 scale per 32 = 4.25 bits per element"
    assert nv4.describe().endswith("= 4.5 bits per element (+ one FP32 scale per tensor)")


def test_plain_precisions_are_formats_of_their_own_bytes():
    for p in PRECISIONS:
        f = get_format(p)
        assert f.plain and f.compute == p and f.bytes_per_element == BYTES_PER_ELEMENT[p]
    assert set(PRECISIONS) < set(FORMATS)


def test_nbytes_adds_one_per_tensor_scale_per_nonempty_tensor():
    nv4 = get_format("nvfp4")
    assert nv4.nbytes(4096 * 4096) == 4096 * 4096 * 4.5 / 8 + 4
    assert list(nv4.nbytes(np.array([0.0, 16.0, 32.0]))) == [0.0, 9.0 + 4, 18.0 + 4]
    assert nv4.nbytes(1600.0, tensors=10) == 1600 * 4.5 / 8 + 40
    assert get_format("mxfp4").nbytes(32) == 17.0  # 16 bytes of E2M1 + one E8M0 byte


def test_unknown_formats_are_refused_naming_the_field():
    for bad in ("int3", "mxfp5", "int4-g0", "int4-g", ""):
        with pytest.raises(ValueError, match="weights: unknown format"):
            get_format(bad, "weights")
    assert get_format(" MXFP4 ").name == "mxfp4" and get_format("int4-g256").bits == 4 + 16 / 256


@pytest.mark.parametrize("w, a, compute, converted", [
    ("int4-g128", "fp16", "fp16", ("weights",)),  # W4A16: dequantized, computes in 16-bit
    ("int8", "int8", "int8", ()),  # W8A8
    ("fp8", "fp8", "fp8", ()),
    ("mxfp4", "mxfp4", "fp4", ()),
    ("nvfp4", "fp8", "fp8", ("weights",)),  # W4A8: FP4 weights widened to FP8
    ("int4-g128", "int8", "int8", ("weights",)),  # W4A8 integer
    ("int8", "fp8", "fp8", ("weights",)),  # a tie goes to the activations
])
def test_compute_is_the_wider_operand_and_the_narrower_is_dequantized(w, a, compute, converted):
    t = TensorFormats.of("fp16", w, a, a)
    assert t.compute == compute
    assert t.converted() == converted
    assert not t.uniform


def test_unset_tensors_follow_the_precision_shorthand():
    t = TensorFormats.of("bf16")
    assert t.uniform and t.compute == "bf16" and t.notes() == () and t.label() == "bf16"
    w4 = TensorFormats.of("fp16", weights="int4-g128", kv_cache="fp8")
    assert (w4.activations.name, w4.kv_cache.name) == ("fp16", "fp8")
    assert w4.converted() == ("weights", "kv_cache")
    notes = " ".join(w4.notes())
    assert "4.125 bits" in notes and "compute at fp16" in notes and "1 FLOP per element" in notes
    assert w4.to_dict()["bits"] == {"weights": 4.125, "activations": 16.0, "kv_cache": 8.0}


def test_presets_name_known_formats():
    for w, a, kv in PRESETS.values():
        TensorFormats.of("fp16", w, a, kv)
    assert PRESETS["w4a16"][:2] == ("int4-g128", "fp16") and PRESETS["fp8"] == ("fp8", "fp8", "fp8")


def test_fallback_goes_to_the_nearest_wider_precision_the_device_has():
    h100 = {"fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8"}
    assert fallback_precision("fp4", h100) == "fp8"  # MXFP4 on an H100
    assert fallback_precision("fp6", h100) == "fp8"
    assert fallback_precision("int4", h100) == "int8"
    assert fallback_precision("fp8", {"fp16", "int8"}) == "fp16"  # never narrower
    assert fallback_precision("fp16", {"int8"}) is None
    assert fallback_precision("fp4", {"fp4"}) == "fp4"
    for p, wider in FALLBACK.items():
        assert all(BYTES_PER_ELEMENT[q] >= BYTES_PER_ELEMENT[p] for q in wider), p
