"""Attention as deployed kernels run it: decode attention is a batched matrix-vector product over the KV cache
(layers/attention.py), fused (FlashAttention-style) attention never writes the S x S scores (analysis/flash.py),
the LM head in prefill, LoRA adapters. Every expected figure is worked out by hand in the test."""

import pytest

from explorer.core.analysis.evaluate import evaluate
from explorer.core.hardware.device_file import device_from_dict
from explorer.core.workload.layers import Context
from explorer.core.workload.model import build_table
from explorer.core.workload.templates import get_template


def gpu(smem="256 KiB", **extra):
    """An H100-like GPU: tensor cores (the 128 x 128 thread-block tile), HBM and a per-SM shared memory."""
    data = {"id": "gpu", "name": "gpu", "vendor": "v", "kind": "gpu", "peak": {"fp16": "989 TFLOP/s"},
            "memory": [{"name": "HBM", "role": "offchip", "capacity": "80 GB", "bandwidth": "3.35 TB/s"},
                       {"name": "SMEM", "role": "onchip", "capacity": smem, "instances": 132}],
            "matrix_engine": {"type": "tensor_core", "sm_count": 132}}
    data.update(extra)
    return device_from_dict(data)


def decode(template_id, **ctx):
    t = get_template(template_id)
    return t.build(), Context(**{"batch": 1, "seq_len": 4096, "phase": "decode", **ctx})


# ------------------------------------------------------------------------------- decode attention is a GEMV
def test_llama2_7b_decode_attention_streams_the_kv_cache():
    """Llama-2-7B decode at 4096 tokens, batch 1, fp16: per layer the scores read q (4096) and the K cache
    (4095 cached positions + the new one, 4096 wide) and write 32 heads x 4096 scores; the context reads the scores
    and the V cache. Not padded to a tensor-core tile: mapping efficiency 1, the time is the bytes over the
    bandwidth (memory-bound)."""
    model, ctx = decode("llama2-7b")
    r = evaluate(model, [gpu()], "fp16", ctx)
    t = r.table
    s, c = t.names.index("layers.attn.scores"), t.names.index("layers.attn.context")
    kv_cache = 4096 * 4096  # K (or V) of one layer: 4096 positions x 32 heads x 128
    assert t.kv_read_elems[s] + t.kv_read_elems[c] + 2 * 4096 == 2 * kv_cache  # cached + the new token's K, V
    assert r.bytes[s] == 2 * (4096 + kv_cache + 32 * 4096)
    assert r.bytes[c] == 2 * (32 * 4096 + kv_cache + 4096)
    for i in (s, c):
        assert t.gemm_count[i] == 0 and tuple(t.gemm[i]) == (0, 0, 0)  # a batched GEMV, not a GEMM
        assert r.mapping_efficiency[i, 0] == 1.0
        assert r.memory_bound[i, 0]
        assert r.time[i, 0] == pytest.approx(r.bytes[i] / 3.35e12, rel=1e-12)
        assert r.level_traffic[i, 0, 0] == r.bytes[i]  # no tile re-reads: the cache crosses HBM once


def test_gqa_decode_reads_each_kv_head_once():
    """Llama-3-8B (32 query heads, 8 KV heads of 128): decode reads the K cache once per KV head,
    4096 positions x 8 x 128, a quarter of what 32 heads would read; each element feeds G = 4 query heads."""
    model, ctx = decode("llama3-8b")
    r = evaluate(model, [gpu()], "fp16", ctx)
    t = r.table
    s = t.names.index("layers.attn.scores")
    assert t.kv_read_elems[s] + 8 * 128 == 4096 * 8 * 128
    assert t.macs[s] == 32 * 4096 * 128  # every query head's dot products
    assert r.bytes[s] == 2 * (32 * 128 + 4096 * 8 * 128 + 32 * 4096)
    assert r.mapping_efficiency[s, 0] == 1.0
    assert r.time[s, 0] == pytest.approx(r.bytes[s] / 3.35e12, rel=1e-12)  # was 64 x padded tensor-core work
    # the batch does not share caches: batch 8 reads 8 caches, at the same intensity
    r8 = evaluate(model, [gpu()], "fp16", Context(batch=8, seq_len=4096, phase="decode"))
    assert r8.bytes[s] == 8 * r.bytes[s] and r8.intensity[s] == r.intensity[s]
