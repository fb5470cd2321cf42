"""The layer options the LLM families need (docs/model-file.md, docs/hf-config.md): sliding-window attention, biases
on q/k/v only (Qwen2), the GeGLU feed-forward (Gemma) and the extra post-sublayer norms (Gemma 2). Every expected
number is worked out by hand in the test."""

import pytest

from explorer.core.workload.layers import Context
from explorer.core.workload.layers.base import run
from explorer.core.workload.model import LayerSpec, Model, build_table


def rows_by_name(rows):
    return {r.name.split(".", 1)[1]: r for r in rows}


def test_sliding_window_caps_the_causal_prefill_pairs():
    # 10 tokens, window 4: query i attends to min(i, 4) keys -> 1 + 2 + 3 + 4 x 7 = 34 pairs per head
    _, rows = run("attention", {"heads": 2, "window": 4, "bias": False}, (10, 16), Context(), "a")
    r = rows_by_name(rows)
    assert r["scores"].macs == 2 * 34 * 8 and r["context"].macs == 2 * 34 * 8
    assert r["softmax"].other_flops == 3 * 2 * 34
    assert r["scores"].kv_cache_elems == 2 * 4 * 16  # a rolling cache of the last 4 positions
    _, full = run("attention", {"heads": 2, "bias": False}, (10, 16), Context(), "a")
    assert rows_by_name(full)["scores"].macs == 2 * 55 * 8  # 10 x 11 / 2 without a window
    _, wide = run("attention", {"heads": 2, "window": 10, "bias": False}, (10, 16), Context(), "a")
    assert [x.macs for x in wide] == [x.macs for x in full]  # a window as long as the sequence changes nothing


def test_sliding_window_in_decode_reads_only_the_window():
    ctx = Context(batch=3, seq_len=100, phase="decode")
    _, rows = run("attention", {"heads": 4, "kv_heads": 2, "window": 32, "bias": False}, (1, 64), ctx, "a")
    r = rows_by_name(rows)
    kv_dim = 2 * 16
    assert r["scores"].out_shape == (4, 1, 32) and r["scores"].macs == 3 * 4 * 32 * 16
    assert r["scores"].kv_read_elems == 3 * 31 * kv_dim  # the 31 cached keys before the new token
    assert r["scores"].kv_cache_elems == 3 * 2 * 32 * kv_dim
    _, no_window = run("attention", {"heads": 4, "kv_heads": 2, "bias": False}, (1, 64), ctx, "a")
    assert rows_by_name(no_window)["scores"].kv_cache_elems == 3 * 2 * 100 * kv_dim


def test_qkv_bias_puts_biases_on_q_k_v_only():
    hidden, heads, kv_heads = 64, 8, 2  # head_dim 8: q 64, k 16, v 16
    _, rows = run("attention", {"heads": heads, "kv_heads": kv_heads, "bias": False, "qkv_bias": True},
                  (5, hidden), Context(), "a")
    r = rows_by_name(rows)
    assert r["qkv"].params == hidden * 96 + 96 and r["qkv"].other_flops == 5 * 96
    assert r["out"].params == 64 * hidden and r["out"].other_flops == 0
    _, both = run("attention", {"heads": heads, "kv_heads": kv_heads}, (5, hidden), Context(), "a")
    assert rows_by_name(both)["out"].params == 64 * hidden + hidden  # bias=true: the output projection too


def block(**params):
    model = Model.make("b", {"tokens": 6, "hidden": 32}, [LayerSpec.make("transformer_block", "h", **params)])
    return build_table(model, Context())


def test_geglu_is_swiglu_with_gelu_on_the_gate():
    geglu, swiglu = block(heads=4, ffn="geglu", ffn_hidden=48, bias=False), block(heads=4, ffn="swiglu",
                                                                                   ffn_hidden=48, bias=False)
    assert geglu.total("params") == swiglu.total("params") == 4 * 32 * 32 + 3 * 32 * 48 + 2 * 2 * 32
    assert geglu.kinds[geglu.names.index("h.ffn_act")] == "gelu"
    act = geglu.names.index("h.ffn_act")
    assert geglu.other_flops[act] == 8 * 6 * 48  # gelu: 8 FLOP per element of the gate
    assert geglu.total("macs") == swiglu.total("macs")


def test_post_norms_add_two_norms_per_block():
    gemma2 = block(heads=4, ffn="geglu", ffn_hidden=48, norm="rmsnorm", bias=False, post_norms=True)
    plain = block(heads=4, ffn="geglu", ffn_hidden=48, norm="rmsnorm", bias=False)
    norms = [n for n, k in zip(gemma2.names, gemma2.kinds) if k == "rmsnorm"]
    assert norms == ["h.norm1", "h.post_attn_norm", "h.norm2", "h.post_ffn_norm"]
    assert gemma2.total("params") - plain.total("params") == 2 * 32
    bad = block(heads=4, norm_position="post", post_norms=True)
    assert bad.errors and "h.post_norms" in bad.errors[0][1]


def test_blocks_pass_window_and_qkv_bias_to_their_attention():
    t = block(heads=4, kv_heads=2, window=3, qkv_bias=True, bias=False, ffn="swiglu", ffn_hidden=16)
    qkv, scores = t.names.index("h.attn.qkv"), t.names.index("h.attn.scores")
    assert t.params[qkv] == 32 * 64 + 64  # q 32 + k 16 + v 16 outputs, each with a bias
    assert t.macs[scores] == 4 * (1 + 2 + 3 * 4) * 8  # 6 tokens, window 3


@pytest.mark.parametrize("param, value", [("window", -1), ("qkv_bias", 1), ("ffn", "reglu")])
def test_bad_option_values_name_the_parameter(param, value):
    t = block(heads=4, **{param: value})
    assert t.errors and f"h.{param}" in t.errors[0][1]
