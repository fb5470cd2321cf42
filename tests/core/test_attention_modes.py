"""Attention as deployed kernels run it: decode attention is a batched matrix-vector product over the KV cache
(layers/attention.py), fused (FlashAttention-style) attention never writes the S x S scores (analysis/flash.py),
the LM head in prefill, LoRA adapters. Every expected figure is worked out by hand in the test."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.core.analysis.evaluate import evaluate
from explorer.core.analysis.flash import block_rows, floor_sum, keys_read
from explorer.core.analysis.tiling_view import compute_tiling_view
from explorer.core.hardware.device_file import device_from_dict
from explorer.core.workload.layers import AttentionShape, Context
from explorer.core.workload.layers.base import run
from explorer.core.workload.model import LayerSpec, Model, build_table
from explorer.core.workload.templates import get_template


def gpu(smem="256 KiB", **extra):
    """An H100-like GPU: tensor cores (the 128 x 128 thread-block tile), HBM, L2 and a per-SM shared memory (the
    catalog's H100 levels; an L2 bandwidth unknown, as there)."""
    data = {"id": "gpu", "name": "gpu", "vendor": "v", "kind": "gpu", "peak": {"fp16": "989 TFLOP/s"},
            "memory": [{"name": "HBM", "role": "offchip", "capacity": "80 GB", "bandwidth": "3.35 TB/s"},
                       {"name": "L2", "role": "onchip", "capacity": "50 MB"},
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


def test_llama2_7b_fused_decode_moves_exactly_the_kv_cache():
    """Fused decode attention writes no scores: the scores and context rows move q, the K and V caches (4096
    positions x 4096 wide each, the new token's included) and the output; the softmax moves nothing."""
    model, ctx = decode("llama2-7b", attention="fused")
    r = evaluate(model, [gpu()], "fp16", ctx)
    t = r.table
    s, sm, c = (t.names.index(f"layers.attn.{x}") for x in ("scores", "softmax", "context"))
    assert r.bytes[s] + r.bytes[sm] + r.bytes[c] == 2 * (2 * 4096 * 4096 + 2 * 4096)  # K, V caches; q, output
    assert r.bytes[sm] == 0 and t.flops[sm] == 3 * 32 * 4096
    naive = evaluate(model, [gpu()], "fp16", decode("llama2-7b")[1])
    assert naive.bytes[s] - r.bytes[s] == 2 * 32 * 4096  # the scores no longer written
    assert (naive.flops == r.flops).all()


# ------------------------------------------------------------------------------------ fused (FlashAttention)

def sram_only(smem):
    """HBM feeding a per-core on-chip memory directly (FlashAttention's model: no L2 in between)."""
    return device_from_dict({"id": "s", "name": "s", "vendor": "v", "kind": "gpu", "peak": {"fp16": "100 TFLOP/s"},
                             "memory": [{"name": "HBM", "role": "offchip", "capacity": "16 GB",
                                         "bandwidth": "1 TB/s"},
                                        {"name": "SRAM", "role": "onchip", "capacity": smem, "instances": 8}],
                             "matrix_engine": {"type": "tensor_core", "sm_count": 8}})


def attention_model(tokens, hidden, **params):
    return Model.make("a", {"tokens": tokens, "hidden": hidden},
                      [LayerSpec.make("attention", "attn", bias=False, **params)])


def core_traffic(model, device, ctx, level=0):
    """Bytes crossing a memory level for the scores, softmax and context rows together."""
    r = evaluate(model, [device], "fp16", ctx)
    rows = [r.table.names.index(f"attn.{x}") for x in ("scores", "softmax", "context")]
    return r, float(sum(r.level_traffic[i, 0, level] for i in rows))


def test_flashattention_block_size_on_a_small_case():
    """Dao et al. 2022, Algorithm 1: with M = 16 KiB = 8192 fp16 elements and d = 64, Bc = ceil(8192 / (4 x 64)) = 32
    and Br = min(32, 64) = 32. Non-causal, 100 tokens, 2 heads of 64: K and V are read ceil(100 / 32) = 4 times, so per
    (batch, head) 4 x 100 x 64 x 2 x 2 B; Q is read and O written once."""
    assert block_rows(16 * 1024, 64, 2) == 32
    assert block_rows(1024 * 1024, 64, 2) == 64  # Br <= d
    assert block_rows(float("nan"), 64, 2) == float("inf")  # unknown: one block
    model = attention_model(100, 128, heads=2, causal=False)
    fused = Context(batch=1, phase="prefill", attention="fused")
    r, traffic = core_traffic(model, sram_only("16 KiB"), fused)
    q = o = 100 * 128
    assert traffic == 2 * (q + o) + 2 * (4 * 100 * 64 * 2 * 2)
    # the roofline's bytes count K and V once; only the level traffic carries the re-reads
    assert sum(r.bytes[r.table.names.index(f"attn.{x}")] for x in ("scores", "softmax", "context")) == 2 * 4 * 100 * 128
    # the same FLOPs as the naive kernel, which also writes and reads the 100 x 100 scores of each head
    naive = evaluate(model, [sram_only("16 KiB")], "fp16", Context(batch=1, phase="prefill"))
    assert (naive.flops == r.flops).all()
    assert float(naive.bytes.sum() - r.bytes.sum()) == 2 * 4 * 2 * 100 * 100


def test_causal_blocks_read_the_lower_triangle():
    """Causal, 100 tokens, Br = 32: the four query blocks read the keys up to their last query, 32 + 64 + 96 + 100 =
    292 positions where every key once is 100 (the FLOPs count the 100 x 101 / 2 pairs: both follow the triangle)."""
    shape = AttentionShape(streams=1, group=1, queries=100, keys=100, width=64, dim=64, causal=True)
    assert keys_read(shape, 32) == 32 + 64 + 96 + 100
    model = attention_model(100, 128, heads=2)
    r, traffic = core_traffic(model, sram_only("16 KiB"), Context(phase="prefill", attention="fused"))
    assert traffic == 2 * (2 * 100 * 128 + 2 * (32 + 64 + 96 + 100) * 128)
    assert r.table.macs[r.table.names.index("attn.scores")] == 2 * 100 * 101 / 2 * 64


def test_grouped_heads_share_one_stream():
    """G = 2 query heads per KV head, 10 tokens, Br = 4 (d = 16, M = 512 B): a stream serves 20 packed rows in 5
    blocks of 2 positions, reading 2 + 4 + 6 + 8 + 10 = 30 key positions; decode (one position) reads the cache once."""
    shape = AttentionShape(streams=1, group=2, queries=10, keys=10, width=16, dim=16, causal=True)
    assert block_rows(512, 16, 2) == 4
    assert keys_read(shape, 4) == 30
    assert keys_read(AttentionShape(1, 8, 1, 4096, 128, 128, True), 128) == 4096  # decode: 8 heads, one read
    assert keys_read(AttentionShape(1, 8, 1, 4096, 128, 128, True), 4) == 2 * 4096  # G > Br: ceil(8 / 4) reads
    window = AttentionShape(1, 1, 10, 10, 16, 16, True, window=3)  # keys max(0, p - 2) .. p; blocks of 4 positions
    assert keys_read(window, 4) == 4 + 6 + 4  # blocks [0-3]: keys 0-3, [4-7]: 2-7, [8-9]: 6-9


def test_an_l2_between_hbm_and_the_cores_takes_the_rereads():
    """With a 50 MB L2 inside HBM, the queries are blocked at floor(50e6 / (4 x 128 x 2)) = 48,828 rows for the HBM
    traffic: Llama-2-7B's 4096 tokens are one block, so HBM streams K and V once and the re-reads fall on the L2."""
    t = get_template("llama2-7b")
    ctx = Context(batch=1, seq_len=4096, phase="prefill", attention="fused")
    r = evaluate(t.build(), [gpu()], "fp16", ctx)
    s = r.table.names.index("layers.attn.scores")
    assert r.level_traffic[s, 0, 0] == r.bytes[s]
    kv_reads = 128 * 32 * 33 / 2  # causal blocks of 128 rows (Br = d = 128 from 256 KiB)
    assert r.level_traffic[s, 0, 1] == r.bytes[s] + 2 * 32 * 128 * (kv_reads - 4096)


def test_fused_is_a_context_setting_and_naive_is_the_default():
    assert Context().attention == "naive" and Context().lm_head == "last"
    model = attention_model(64, 128, heads=2)
    default = evaluate(model, [gpu()], "fp16", Context())
    naive = evaluate(model, [gpu()], "fp16", Context(attention="naive"))
    assert (default.time == naive.time).all() and (default.bytes == naive.bytes).all()


def brute_keys_read(shape, br):
    g, s_q, keys, w = shape.group, shape.queries, shape.keys, shape.window
    rows = g * s_q
    br = int(min(br, rows))
    total, off = 0, keys - s_q
    for start in range(0, rows, br):
        first, last = start // g, (min(start + br, rows) - 1) // g
        if shape.causal:
            lo = max(0, first + off - w + 1) if w else 0
            total += last + off + 1 - lo
        else:
            total += keys if not w or w >= keys else min(keys, last - first + w)
    return total


@given(st.integers(0, 60), st.integers(1, 40), st.integers(0, 500), st.integers(0, 500))
def test_floor_sum_matches_the_sum(n, m, a, b):
    assert floor_sum(n, m, a, b) == sum((a * i + b) // m for i in range(n))


@given(g=st.integers(1, 8), s_q=st.integers(1, 60), extra=st.integers(0, 60), w=st.integers(0, 70),
       br=st.integers(1, 100), causal=st.booleans())
def test_keys_read_closed_form_matches_the_blocks(g, s_q, extra, w, br, causal):
    shape = AttentionShape(1, g, s_q, s_q + extra, 8, 8, causal, w)
    assert keys_read(shape, br) == brute_keys_read(shape, br)
    assert keys_read(shape, br) >= min(shape.keys, w or shape.keys)  # every key attended is read at least once


@settings(deadline=None, max_examples=150)
@given(tokens=st.integers(1, 300), heads=st.sampled_from([(4, 4), (4, 2), (4, 1), (8, 2)]),
       head_dim=st.sampled_from([16, 64, 128]), causal=st.booleans(), window=st.integers(0, 64),
       phase=st.sampled_from(["prefill", "decode"]), smem=st.sampled_from([16, 64, 256]))
def test_fused_never_moves_more_than_naive(tokens, heads, head_dim, causal, window, phase, smem):
    """Invariants: the same FLOPs; a fused kernel's bytes (each tensor once) are never above the naive kernel's, nor
    is its off-chip traffic (with the re-reads) when the on-chip memory holds blocks of at least d rows
    (M >= 4 d^2 b: each extra pass over K and V, 2 d elements per key, then costs at most 2 per (query, key) pair,
    under the 4 score entries per pair the naive kernel moves, even when the last block is ragged). At d/2 rows a
    ragged last block breaks it: 33 causal tokens in blocks of 32 re-read K and V for one query row (found by this
    test at M = 2 d^2 b). Below that a short sequence's few scores can cost less than re-reading K and V. Causal
    attention never counts more FLOPs than full attention."""
    h, kv = heads
    smem = f"{max(smem, 4 * head_dim * head_dim * 2 // 1024)} KiB"
    model = attention_model(tokens, h * head_dim, heads=h, kv_heads=kv, causal=causal, window=window)
    for device in (gpu(smem), sram_only(smem)):
        ctx = Context(batch=2, seq_len=tokens, phase=phase)
        naive = evaluate(model, [device], "fp16", ctx)
        fused = evaluate(model, [device], "fp16", Context(batch=2, seq_len=tokens, phase=phase, attention="fused"))
        assert (fused.flops == naive.flops).all()
        assert (fused.bytes <= naive.bytes).all()
        off_chip = fused.level_traffic[:, 0, 0].sum(), naive.level_traffic[:, 0, 0].sum()
        assert off_chip[0] <= off_chip[1] * (1 + 1e-12)
    full = build_table(attention_model(tokens, h * head_dim, heads=h, kv_heads=kv, causal=False, window=window), ctx)
    assert build_table(model, ctx).total("flops") <= full.total("flops")


def test_the_tiling_view_prices_a_fused_row_with_its_rereads():
    """The tiling panel re-evaluates one GEMM row at nearby sizes; for a fused attention row its current size costs
    what the analysis says (the K/V re-reads included)."""
    model = attention_model(1000, 512, heads=4)
    r = evaluate(model, [sram_only("64 KiB")], "fp16",
                 Context(phase="prefill", attention="fused"))
    row = r.table.names.index("attn.scores")
    view = compute_tiling_view(r, row, 0)
    current = next(o for o in view.options if o.action == "current")
    assert current.time == pytest.approx(r.time[row, 0], rel=1e-12)


# --------------------------------------------------------------------------------------------- the LM head
def test_lm_head_last_computes_one_position_per_sequence():
    """Llama-2-7B prefill of 4096 tokens, batch 2: with lm_head 'all' the head computes 2 x 4096 x 4096 x 32000 MACs
    (training, scoring), with 'last' (the default) 2 x 4096 x 32000 (serving: the next token). Its weights are read
    either way; nothing else changes, and decode (one position) is the same under both."""
    t = get_template("llama2-7b")
    model = t.build()
    every = build_table(model, Context(batch=2, seq_len=4096, phase="prefill", lm_head="all"))
    last = build_table(model, Context(batch=2, seq_len=4096, phase="prefill"))
    h = every.names.index("lm_head")
    assert every.macs[h] == 2 * 4096 * 4096 * 32000 and last.macs[h] == 2 * 4096 * 32000
    assert last.input_elems[h] == 2 * 4096 and last.output_elems[h] == 2 * 32000
    assert last.weight_elems[h] == every.weight_elems[h] == 4096 * 32000
    assert last.out_shapes[h] == (1, 32000)
    assert every.total("macs") - last.total("macs") == 2 * 4095 * 4096 * 32000
    assert [n for n in every.names if (every.macs != last.macs)[every.names.index(n)]] == ["lm_head"]
    d_every = build_table(model, Context(batch=2, seq_len=4096, phase="decode", lm_head="all"))
    d_last = build_table(model, Context(batch=2, seq_len=4096, phase="decode"))
    assert d_every.total("macs") == d_last.total("macs")


def test_only_a_dense_marked_head_is_cut():
    """The head is the ``dense`` with ``head: true`` (the templates and the Hugging Face import mark it); another
    dense over the sequence keeps every position."""
    ctx = Context(batch=1, phase="prefill", lm_head="last")
    out, (row,) = run("dense", {"in_features": 8, "out_features": 3}, (5, 8), ctx, "proj")
    assert out == (5, 3) and row.macs == 5 * 8 * 3
    out, (row,) = run("dense", {"in_features": 8, "out_features": 3, "head": True}, (5, 8), ctx, "lm_head")
    assert out == (1, 3) and row.macs == 8 * 3
    for tid in ("gpt2", "llama3-8b", "mixtral-8x7b"):
        heads = [s for s in get_template(tid).build().layers if s.params.get("head")]
        assert [s.name for s in heads] == ["lm_head"]


# --------------------------------------------------------------------------------------------------- LoRA
def with_lora(template_id, **lora):
    model = get_template(template_id).build()
    layers = tuple(s.with_params(**lora) if s.kind == "transformer_block" else s for s in model.layers)
    return Model(model.name, model.input, layers)


def test_lora_rank_16_on_llama2_7b_by_hand():
    """Rank 16 on q, k, v, o of Llama-2-7B (4096 wide, 32 heads of 128): 32 layers x 4 x 16 x (4096 + 4096) =
    16,777,216 parameters; per token 16 x (4096 + 4096) MACs per projection, 2 x 16,777,216 FLOPs over the model."""
    base = get_template("llama2-7b").build()
    ctx = Context(batch=1, seq_len=4096, phase="prefill")
    plain, adapted = build_table(base, ctx), build_table(with_lora("llama2-7b", lora_rank=16), ctx)
    assert adapted.total("params") - plain.total("params") == 32 * 4 * 16 * (4096 + 4096) == 16_777_216
    assert adapted.total("macs") - plain.total("macs") == 4096 * 16_777_216  # per token x 4096 tokens
    assert adapted.total("flops") - plain.total("flops") == 4096 * 2 * 16_777_216
    i = adapted.names.index("layers.attn_lora")
    assert adapted.count[i] == 32 and adapted.kinds[i] == "lora" and adapted.gemm_count[i] == 0
    assert adapted.input_elems[i] == 4096 * 4 * 4096 + 4096 * 16 * 4  # the projections' inputs, the intermediates
    assert [n for n in adapted.names if n not in plain.names] == ["layers.attn_lora"]
    # decode: one token per sequence, the same adapter weights read
    step = build_table(with_lora("llama2-7b", lora_rank=16), Context(batch=1, seq_len=4096, phase="decode"))
    j = step.names.index("layers.attn_lora")
    assert step.macs[j] == 4 * 16 * 8192 and step.weight_elems[j] == 4 * 16 * 8192


def test_lora_on_every_projection_and_several_adapters():
    """'all' on Llama-2-7B adds gate, up (4096 -> 11008) and down (11008 -> 4096): 16 x (4 x 8192 + 3 x 15104) per
    layer. Four adapters store four times the parameters; a token computes with one; a decode batch of 8 sequences
    reads 4 x (1 - (3/4)^8) = 3.6 adapters' weights (uniform choice), one sequence reads one."""
    per_layer = 16 * (4 * 8192 + 3 * 15104)
    ctx = Context(batch=8, seq_len=4096, phase="decode")
    plain = build_table(get_template("llama2-7b").build(), ctx)
    t = build_table(with_lora("llama2-7b", lora_rank=16, lora_targets="all", lora_adapters=4), ctx)
    assert t.total("params") - plain.total("params") == 4 * 32 * per_layer
    assert t.total("active_params") - plain.total("active_params") == 32 * per_layer
    assert t.total("macs") - plain.total("macs") == 8 * 32 * per_layer  # 8 tokens, one adapter each
    ffn = t.names.index("layers.ffn_lora")
    assert t.weight_elems[ffn] == pytest.approx(4 * (1 - 0.75**8) * 16 * 3 * 15104)
    one = build_table(with_lora("llama2-7b", lora_rank=16, lora_targets="q,v", lora_adapters=4),
                      Context(batch=1, seq_len=4096, phase="decode"))
    i = one.names.index("layers.attn_lora")
    assert one.weight_elems[i] == one.active_params[i] == 2 * 16 * 8192
    gqa = build_table(with_lora("llama3-8b", lora_rank=8, lora_targets="k,v"), ctx)  # k, v are 1024 wide
    assert gqa.params[gqa.names.index("layers.attn_lora")] == 2 * 8 * (4096 + 1024)


@pytest.mark.parametrize("params, message", [
    ({"lora_targets": "q,v"}, "h.lora_targets: needs LoRA adapters (lora_rank > 0)"),
    ({"lora_adapters": 3}, "h.lora_adapters: needs LoRA adapters"),
    ({"lora_rank": 8, "lora_targets": "q,x"}, "h.lora_targets: expected 'all' or distinct names"),
    ({"lora_rank": 8, "lora_targets": "gate"}, "h.lora_targets: expected"),  # a GELU feed-forward has no gate
    ({"lora_rank": 8, "lora_adapters": 0}, "h.lora_adapters: must be at least 1"),
])
def test_inconsistent_lora_params_are_flagged(params, message):
    model = Model.make("m", {"tokens": 8, "hidden": 32}, [LayerSpec.make("transformer_block", "h", heads=4, **params)])
    (error,) = [msg for _, msg in build_table(model, Context()).errors]
    assert message in error


def test_latent_attention_fused_moves_no_scores():
    """DeepSeek-V3 decode (absorbed): 128 heads share the cached latent (512 + 64 per token). Fused, the scores,
    softmax and context rows move no scores; the latent is still read once per sequence at HBM (the 50 MB L2 blocks
    all 128 query rows together), and from the L2 ceil(128 / 56) = 3 times (Br = floor(256 KiB / (4 x 576 x 2)))."""
    t = get_template("deepseek-v3")
    ctx = Context(batch=1, seq_len=4096, phase="decode", attention="fused")
    naive = evaluate(t.build(), [gpu()], "fp16", Context(batch=1, seq_len=4096, phase="decode"))
    r = evaluate(t.build(), [gpu()], "fp16", ctx)
    names = r.table.names
    s = next(i for i, n in enumerate(names) if n.endswith("attn.scores"))
    sm, c = s + 1, s + 2
    scores = 128 * 4096
    assert naive.bytes[s] - r.bytes[s] == 2 * scores and r.bytes[sm] == 0
    assert naive.bytes[c] - r.bytes[c] == 2 * scores
    assert r.level_traffic[s, 0, 0] == r.bytes[s]
    assert r.level_traffic[s, 0, 1] == r.bytes[s] + 2 * (3 - 1) * 4096 * 576
    assert block_rows(256 * 1024, 576, 2) == 56
