"""``tensor_bytes.resident_bytes`` counts the tensors only for a format with a per-tensor scale, and ``tensor_bytes``
takes the formats its caller has: both give the floats they gave before, bit for bit, at every storage format (NVFP4's
per-tensor FP32 scale included), on random columns and on Llama-2-7B's work tables."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.core.analysis.device_arrays import device_arrays
from explorer.core.analysis.tensor_bytes import formats_of, resident_bytes, tensor_bytes
from explorer.core.formats import FORMATS, TensorFormats
from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.workload.layers import Context
from explorer.core.workload.model import build_table
from explorer.core.workload.templates import get_template

CATALOG = load_shipped_devices()


def _resident_before(c, fm: TensorFormats) -> tuple[float, float, float]:
    """resident_bytes as it was: every tensor count made, whether or not the format reads it."""
    count = c["count"]
    weights = fm.weights.nbytes(float(np.sum(c["params"] * count)),
                                tensors=float(np.sum((c["params"] > 0) * count)))
    kv = fm.kv_cache.nbytes(float(np.sum(c["kv_cache_elems"] * count)),
                            tensors=float(np.sum((c["kv_cache_elems"] > 0) * count)))
    peak = float(np.max((c["input_elems"] + c["output_elems"]), initial=0.0))
    act = fm.activations.nbytes(peak, tensors=2.0 if peak > 0 else 0.0)
    return float(weights), float(kv), float(act)


def _bits(values) -> tuple:
    return tuple(np.float64(v).tobytes() for v in values)


_COLUMNS = ("count", "params", "kv_cache_elems", "input_elems", "output_elems")
_NUMBER = st.one_of(st.just(0.0), st.floats(1.0, 1e12, allow_nan=False), st.integers(1, 10**9).map(float))


@settings(max_examples=150, deadline=None)
@given(data=st.data(), rows=st.integers(0, 12), weights=st.sampled_from(FORMATS), kv=st.sampled_from(FORMATS),
       act=st.sampled_from(("fp16", "bf16", "fp8", "int8", "nvfp4", "mxfp8")))
def test_resident_bytes_same_bits_at_every_format(data, rows, weights, kv, act):
    c = {name: np.array(data.draw(st.lists(_NUMBER, min_size=rows, max_size=rows)), dtype=float) for name in _COLUMNS}
    try:
        fm = TensorFormats.of("fp16", weights=weights, activations=act, kv_cache=kv)
    except ValueError:  # a combination the formats refuse
        return
    assert _bits(resident_bytes(c, fm)) == _bits(_resident_before(c, fm))


@pytest.mark.parametrize("formats", [None, TensorFormats.of("fp16", weights="nvfp4", kv_cache="nvfp4"),
                                     TensorFormats.of("fp16", weights="int4-g128", kv_cache="fp8")])
@pytest.mark.parametrize("phase", ["prefill", "decode"])
def test_llama_tables_same_bits_with_the_callers_formats(formats, phase):
    table = build_table(get_template("llama2-7b").build(), Context(batch=2, seq_len=700, phase=phase))
    dev = device_arrays([d for d in CATALOG if d.id == "nvidia-a100-sxm4-80gb"] + list(CATALOG[:3]), "fp16", formats)
    fm = formats_of(dev)
    if formats is not None and formats.weights.name == "nvfp4":  # the per-tensor scale's branch is taken
        assert fm.weights.tensor_scale_bits == 32 and fm.kv_cache.tensor_scale_bits == 32
    assert _bits(resident_bytes(table.columns, fm)) == _bits(_resident_before(table.columns, fm))
    a, b = tensor_bytes(table.columns, dev), tensor_bytes(table.columns, dev, fm)
    for name in ("weight", "activation", "kv", "conversions", "device_conversions", "b_bpe"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.shape == y.shape and x.tobytes() == y.tobytes(), name
    assert a.a_bpe == b.a_bpe
