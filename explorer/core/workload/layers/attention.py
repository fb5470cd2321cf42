"""Multi-head attention (MHA, GQA, MQA), prefill over a sequence or decode against a KV cache.

Expanded into the operators a kernel library runs: the fused QKV projection, scores Q K^T, softmax, the
context (scores V) and the output projection. In decode each sequence brings one new query token and attends
to ``seq_len`` cached keys and values; the cache is read in full and the new K, V are appended.

Causal attention counts only the unmasked score entries (S*(S+1)/2 per head in prefill), as fused kernels
skip the masked half; non-causal counts all S*S.

Sliding-window attention (Mistral, Gemma 2, Phi-3): with ``window`` W > 0 each query attends to at most W keys,
itself included (the W most recent positions). Prefill counts sum_i min(i, W) unmasked pairs per head (causal) or
S * min(S, W) (non-causal); decode attends to min(seq_len, W) cached keys, and the KV cache holds min(seq_len, W)
positions (a rolling buffer). W = 0, or W >= the sequence, is full attention. The GEMM shapes for tiling stay those of
the full (S x S) product: windowed kernels still tile the band in blocks of that shape.

Decode attention is a batched matrix-vector product over the KV cache, not a GEMM: each sequence's one new query per
head meets that sequence's own cached keys and values, so nothing is shared across the batch and every cached element
is used by the G = heads / kv_heads query heads of its KV head only (G FLOP pairs per element read: memory-bound). The
K and V of a KV head are read once for its G query heads (the cache is counted once, per KV head), and the rows carry
no GEMM shape (``gemm_count`` 0): they are not padded to a matrix engine's tile, their compute is counted at the
device's peak and their time is that of the bytes they stream. Prefill products stay GEMMs, one per (batch, head).

How the kernel runs (``Context.attention``): ``naive`` writes the scores to memory, the softmax reads and writes
them, the context reads them (the scores, softmax and context rows each move the unmasked entries). ``fused``
(FlashAttention) keeps them on chip: those rows move no scores, the FLOPs are the same, and K and V are re-read once
per query block, a count that depends on the device's on-chip memory: the rows carry an ``AttentionShape`` for
``analysis/flash.py``.
"""

from __future__ import annotations

from explorer.core.workload.layers.base import (
    AttentionShape,
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
        Param("qkv_bias", bool, False, help="biases on the q, k, v projections only, not the output (Qwen2)"),
        Param("window", int, 0, minimum=0, help="sliding window: keys each query attends to, itself included; "
                                                "0 = full attention"),
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
    window = p["window"]
    s_kv = (ctx.seq_len or s_q) if decode else s_q  # keys attended to (the cache plus the new token in decode)
    if decode and window:
        s_kv = min(s_kv, window)  # the rolling cache holds the last `window` positions
    q_dim, kv_dim = heads * head_dim, kv_heads * head_dim
    qkv_out = q_dim + 2 * kv_dim
    bias = p["bias"]
    qkv_bias = bias or p["qkv_bias"]
    w = min(window, s_q) if window else s_q  # keys per query in prefill
    if p["causal"] and not decode:
        pairs = w * (w + 1) / 2 + (s_q - w) * w  # unmasked (query, key) pairs per head: sum of min(i, W)
    else:
        pairs = s_q * (s_kv if decode else w)
    scores = b * heads * pairs
    kv_new = 2 * b * s_q * kv_dim  # new K and V (written by the QKV projection straight into the cache)
    kv_cached = 2 * b * (s_kv - s_q if decode else 0) * kv_dim  # previous cache read in decode
    m = b * s_q
    fused = ctx.attention == "fused"
    moved = 0 if fused else scores  # the score entries written to and read from memory (none when fused)
    kv = AttentionShape(b * kv_heads, heads // kv_heads, s_q, s_kv, head_dim, head_dim, p["causal"], window)
    # prefill: per (batch, head) a GEMM; decode: a batched GEMV (no matrix-engine shape, see the module docstring)
    scores_gemm, context_gemm, per = ((0, 0, 0), (0, 0, 0), 0) if decode else (
        (s_q, s_kv, head_dim), (s_q, head_dim, s_kv), b * heads)
    qkv_w = hidden * qkv_out + (qkv_out if qkv_bias else 0)
    out_w = q_dim * hidden + (hidden if bias else 0)
    rows = [
        Row(f"{name}.qkv", "dense", macs=m * hidden * qkv_out, other_flops=m * qkv_out if qkv_bias else 0, params=qkv_w,
            weight_elems=qkv_w, input_elems=m * hidden, output_elems=m * qkv_out,
            gemm=(m, qkv_out, hidden), gemm_count=1, out_shape=(s_q, qkv_out)),
        # Q K^T: per (batch, head) a GEMM (S_q x head_dim) @ (head_dim x S_kv); K comes from the cache in decode
        Row(f"{name}.scores", "attention_scores", macs=scores * head_dim, input_elems=m * q_dim + kv_new / 2,
            kv_read_elems=kv_cached / 2, output_elems=moved,
            kv_cache_elems=2 * b * (s_kv if decode else w) * kv_dim if p["causal"] else 0,  # encoders keep none
            gemm=scores_gemm, gemm_count=per, out_shape=(heads, s_q, s_kv), attention=kv),
        Row(f"{name}.softmax", "softmax", other_flops=3 * scores, input_elems=moved, output_elems=moved,
            out_shape=(heads, s_q, s_kv)),
        # scores @ V: per (batch, head) (S_q x S_kv) @ (S_kv x head_dim)
        Row(f"{name}.context", "attention_context", macs=scores * head_dim, input_elems=moved + kv_new / 2,
            kv_read_elems=kv_cached / 2, output_elems=m * q_dim,
            gemm=context_gemm, gemm_count=per, out_shape=(s_q, q_dim), attention=kv),
        Row(f"{name}.out", "dense", macs=m * q_dim * hidden, other_flops=m * hidden if bias else 0, params=out_w,
            weight_elems=out_w, input_elems=m * q_dim, output_elems=m * hidden,
            gemm=(m, hidden, q_dim), gemm_count=1, out_shape=(s_q, hidden)),
    ]
    return (s_q, hidden), rows
