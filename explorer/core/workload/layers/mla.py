"""Multi-head latent attention (MLA, DeepSeek-V2/V3): keys and values are compressed into one latent vector per token,
and the KV cache holds that latent (``kv_lora_rank`` numbers) plus the shared rotary key (``qk_rope_head_dim``)
instead of full keys and values for every head. That is MLA's point: DeepSeek-V3 caches 512 + 64 = 576 numbers per
token and layer where multi-head attention with its 128 heads of 192 + 128 would cache 40,960.

Projections (as the Hugging Face ``DeepseekV3Attention`` stores them):

* queries: ``q_down`` hidden -> q_lora_rank, ``q_norm`` (RMSNorm), ``q_up`` q_lora_rank -> heads x (nope + rope);
  with ``q_lora_rank`` 0 (DeepSeek-V2-Lite) one ``q_proj`` hidden -> heads x (nope + rope);
* keys and values: ``kv_down`` hidden -> kv_lora_rank + rope (the latent and the shared rotary key: what is cached),
  ``kv_norm`` (RMSNorm of the latent), and the up-projection kv_lora_rank -> heads x (nope + v), counted as two
  rows, ``k_up`` (heads x nope) and ``v_up`` (heads x v), the two halves of the checkpoint's ``kv_b_proj``;
* ``out`` heads x v -> hidden. ``bias`` puts biases on ``q_down`` (or ``q_proj``), ``kv_down`` and ``out``, where the
  checkpoint's ``attention_bias`` puts them.

Prefill expands the latent into per-head keys and values (``k_up``, ``v_up``) and attends as multi-head attention
with q/k heads of nope + rope and v heads of v_head_dim. Decode uses the **absorbed** form that deployed kernels run
(DeepSeek's reference inference, FlashMLA): ``k_up``'s weights are folded into the query (each head's nope part is
mapped into the latent space), every head attends over the cached latents directly (kv_lora_rank + rope per key),
the context stays in the latent space and ``v_up`` maps it to heads x v afterwards. Both forms have the same
parameters and the same MACs in ``k_up`` and ``v_up`` per token; decoding with the expanded form would instead
up-project the whole cache at every step. The cached latent serves as both key and value, so decode reads it once
(counted on ``scores``).

``Context.attention`` as for ``attention``: ``fused`` keeps the scores on chip (no score traffic on the scores, softmax
and context rows) and re-reads the keys and values (in decode, the latent) once per query block (analysis/flash.py).
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
    run,
)


def _dense(name: str, m: int, fin: int, fout: int, bias: bool, out_shape: Shape) -> Row:
    w = fin * fout + (fout if bias else 0)
    return Row(name, "dense", macs=m * fin * fout, other_flops=m * fout if bias else 0, params=w, weight_elems=w,
               input_elems=m * fin, output_elems=m * fout, gemm=(m, fout, fin), gemm_count=1, out_shape=out_shape)


def _per_head(name: str, m: int, heads: int, fin: int, fout: int, s_q: int) -> Row:
    """A per-head projection (absorbed decode): heads GEMMs (m x fin) @ (fin x fout), weights heads x fin x fout."""
    w = heads * fin * fout
    return Row(name, "dense", macs=m * w, params=w, weight_elems=w, input_elems=m * heads * fin,
               output_elems=m * heads * fout, gemm=(m, fout, fin), gemm_count=heads, out_shape=(s_q, heads * fout))


@layer_kind(
    "mla",
    "attention",
    (
        Param("heads", int),
        Param("kv_lora_rank", int, help="width of the compressed key/value latent (what the KV cache holds)"),
        Param("qk_nope_head_dim", int, help="per-head query/key width without rotary encoding"),
        Param("qk_rope_head_dim", int, minimum=0, help="per-head query width with rotary encoding; the rotary key "
                                                       "of this width is shared by all heads and cached"),
        Param("v_head_dim", int, help="per-head value width"),
        Param("q_lora_rank", int, 0, minimum=0, help="width of the compressed query; 0 = no query compression"),
        Param("causal", bool, True),
        Param("bias", bool, False, help="biases on q_down (q_proj), kv_down and out"),
    ),
    "multi-head latent attention (DeepSeek): keys and values compressed into a latent; the KV cache holds "
    "kv_lora_rank + qk_rope_head_dim numbers per token",
)
def mla(p: dict, in_shape: Shape, ctx: Context, name: str):
    if len(in_shape) != 2:
        raise ShapeError(f"'mla' needs tokens (S, H), got {format_shape(in_shape)}")
    s_q, hidden = in_shape
    heads, kvl, ql = p["heads"], p["kv_lora_rank"], p["q_lora_rank"]
    nope, rope, v, bias = p["qk_nope_head_dim"], p["qk_rope_head_dim"], p["v_head_dim"], p["bias"]
    qk = nope + rope
    b = ctx.batch
    m = b * s_q
    decode = ctx.phase == "decode"
    s_kv = (ctx.seq_len or s_q) if decode else s_q
    latent = kvl + rope  # cached per token
    rows: list[Row] = []
    if ql:
        rows.append(_dense(f"{name}.q_down", m, hidden, ql, bias, (s_q, ql)))
        rows += run("rmsnorm", {}, (s_q, ql), ctx, f"{name}.q_norm")[1]
        rows.append(_dense(f"{name}.q_up", m, ql, heads * qk, False, (s_q, heads * qk)))
    else:
        rows.append(_dense(f"{name}.q_proj", m, hidden, heads * qk, bias, (s_q, heads * qk)))
    rows.append(_dense(f"{name}.kv_down", m, hidden, latent, bias, (s_q, latent)))
    rows += run("rmsnorm", {}, (s_q, kvl), ctx, f"{name}.kv_norm")[1]
    cache = b * s_kv * latent if (p["causal"] or decode) else 0  # encoders keep none
    fused = ctx.attention == "fused"
    if decode:  # absorbed: queries into the latent space, attention over the cached latents, v_up afterwards
        scores = b * heads * s_q * s_kv
        moved = 0 if fused else scores  # score entries through memory (none when fused)
        stream = AttentionShape(b, heads, s_q, s_kv, latent, latent, p["causal"])  # the latent serves as K and V
        rows += [
            _per_head(f"{name}.k_up", m, heads, nope, kvl, s_q),
            # all heads share the cached latent: per sequence one GEMM (heads x latent) @ (latent x s_kv)
            Row(f"{name}.scores", "attention_scores", macs=scores * latent, input_elems=m * heads * latent + m * latent,
                kv_read_elems=b * (s_kv - s_q) * latent, output_elems=moved, kv_cache_elems=cache,
                gemm=(heads * s_q, s_kv, latent), gemm_count=b, out_shape=(heads, s_q, s_kv), attention=stream),
            Row(f"{name}.softmax", "softmax", other_flops=3 * scores, input_elems=moved, output_elems=moved,
                out_shape=(heads, s_q, s_kv)),
            Row(f"{name}.context", "attention_context", macs=scores * kvl, input_elems=moved,
                output_elems=m * heads * kvl, gemm=(heads * s_q, kvl, s_kv), gemm_count=b,
                out_shape=(s_q, heads * kvl)),
            _per_head(f"{name}.v_up", m, heads, kvl, v, s_q),
        ]
    else:  # expanded: per-head keys and values from the latent, then multi-head attention
        pairs = s_q * (s_q + 1) / 2 if p["causal"] else s_q * s_q
        scores = b * heads * pairs
        moved = 0 if fused else scores
        d = max(qk, v)
        rows += [
            _dense(f"{name}.k_up", m, kvl, heads * nope, False, (s_q, heads * nope)),
            _dense(f"{name}.v_up", m, kvl, heads * v, False, (s_q, heads * v)),
            Row(f"{name}.scores", "attention_scores", macs=scores * qk,
                input_elems=m * heads * qk + m * heads * nope + m * rope, output_elems=moved, kv_cache_elems=cache,
                gemm=(s_q, s_q, qk), gemm_count=b * heads, out_shape=(heads, s_q, s_q),
                attention=AttentionShape(b * heads, 1, s_q, s_q, qk, d, p["causal"])),
            Row(f"{name}.softmax", "softmax", other_flops=3 * scores, input_elems=moved, output_elems=moved,
                out_shape=(heads, s_q, s_q)),
            Row(f"{name}.context", "attention_context", macs=scores * v, input_elems=moved + m * heads * v,
                output_elems=m * heads * v, gemm=(s_q, v, s_q), gemm_count=b * heads, out_shape=(s_q, heads * v),
                attention=AttentionShape(b * heads, 1, s_q, s_q, v, d, p["causal"])),
        ]
    rows.append(_dense(f"{name}.out", m, heads * v, hidden, bias, (s_q, hidden)))
    return (s_q, hidden), rows
