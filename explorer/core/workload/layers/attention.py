"""Multi-head attention (MHA, GQA, MQA), prefill over a sequence or decode against a KV cache.

Expanded into the operators a kernel library runs: the fused QKV projection, scores Q K^T, softmax, the
context (scores V) and the output projection. In decode each sequence brings one new query token and attends
to ``seq_len`` cached keys and values; the cache is read in full and the new K, V are appended.

Causal attention counts only the unmasked score entries (S*(S+1)/2 per head in prefill), as fused kernels
skip the masked half; non-causal counts all S*S.
"""

from __future__ import annotations

from explorer.core.workload.layers.base import (
    Context,
    Param,
    Row,
    Shape,
    ShapeError,
    format_shape,
    layer_kind,
)


@layer_kind(
    "attention",
    "attention",
    (
        Param("heads", int),
        Param("kv_heads", int, 0, minimum=0, help="key/value heads: = heads (MHA), 1 (MQA), between (GQA); 0 = heads"),
        Param("head_dim", int, 0, minimum=0, help="0 = hidden / heads"),
        Param("causal", bool, True),
        Param("bias", bool, True, help="projections have biases"),
    ),
    "multi-head self-attention with QKV and output projections; KV cache in decode",
)
def attention(p: dict, in_shape: Shape, ctx: Context, name: str):
    if len(in_shape) != 2:
        raise ShapeError(f"'attention' needs tokens (S, H), got {format_shape(in_shape)}")
    s_q, hidden = in_shape
    heads = p["heads"]
    kv_heads = p["kv_heads"] or heads
    head_dim = p["head_dim"] or hidden // heads
    if not p["head_dim"] and hidden % heads:
        raise ShapeError(f"'attention' hidden size {hidden} is not divisible by {heads} heads")
    if heads % kv_heads:
        raise ShapeError(f"'attention' heads={heads} must be a multiple of kv_heads={kv_heads}")
    b = ctx.batch
    decode = ctx.phase == "decode"
    s_kv = (ctx.seq_len or s_q) if decode else s_q  # keys attended to (the cache plus the new token in decode)
    q_dim, kv_dim = heads * head_dim, kv_heads * head_dim
    qkv_out = q_dim + 2 * kv_dim
    bias = p["bias"]
    if p["causal"] and not decode:
        pairs = s_q * (s_q + 1) / 2  # unmasked (query, key) pairs per head
    else:
        pairs = s_q * s_kv
    scores = b * heads * pairs
    kv_new = 2 * b * s_q * kv_dim  # new K and V (written by the QKV projection straight into the cache)
    kv_cached = 2 * b * (s_kv - s_q if decode else 0) * kv_dim  # previous cache read in decode
    m = b * s_q
    qkv_w = hidden * qkv_out + (qkv_out if bias else 0)
    out_w = q_dim * hidden + (hidden if bias else 0)
    rows = [
        Row(f"{name}.qkv", "dense", macs=m * hidden * qkv_out, other_flops=m * qkv_out if bias else 0, params=qkv_w,
            weight_elems=qkv_w, input_elems=m * hidden, output_elems=m * qkv_out,
            gemm=(m, qkv_out, hidden), gemm_count=1, out_shape=(s_q, qkv_out)),
        # Q K^T: per (batch, head) a GEMM (S_q x head_dim) @ (head_dim x S_kv); K comes from the cache in decode
        Row(f"{name}.scores", "attention_scores", macs=scores * head_dim, input_elems=m * q_dim + kv_new / 2,
            kv_read_elems=kv_cached / 2, output_elems=scores,
            kv_cache_elems=2 * b * s_kv * kv_dim if p["causal"] else 0,  # encoders keep no KV cache
            gemm=(s_q, s_kv, head_dim), gemm_count=b * heads, out_shape=(heads, s_q, s_kv)),
        Row(f"{name}.softmax", "softmax", other_flops=3 * scores, input_elems=scores, output_elems=scores,
            out_shape=(heads, s_q, s_kv)),
        # scores @ V: per (batch, head) (S_q x S_kv) @ (S_kv x head_dim)
        Row(f"{name}.context", "attention_context", macs=scores * head_dim, input_elems=scores + kv_new / 2,
            kv_read_elems=kv_cached / 2, output_elems=m * q_dim,
            gemm=(s_q, head_dim, s_kv), gemm_count=b * heads, out_shape=(s_q, q_dim)),
        Row(f"{name}.out", "dense", macs=m * q_dim * hidden, other_flops=m * hidden if bias else 0, params=out_w,
            weight_elems=out_w, input_elems=m * q_dim, output_elems=m * hidden,
            gemm=(m, hidden, q_dim), gemm_count=1, out_shape=(s_q, hidden)),
    ]
    return (s_q, hidden), rows
