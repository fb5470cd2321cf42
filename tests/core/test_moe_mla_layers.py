"""Mixture of experts and multi-head latent attention in the work table (layers/moe.py, layers/mla.py,
docs/model-file.md): the expected experts touched per step under uniform routing, total against active parameters,
the weights a decode step reads, and MLA's compressed KV cache. Every expected number is worked out by hand here."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from explorer.core.analysis.evaluate import evaluate
from explorer.core.hardware.device_file import device_from_dict
from explorer.core.workload.layers import Context
from explorer.core.workload.layers.base import run
from explorer.core.workload.layers.moe import expected_experts
from explorer.core.workload.model import LayerSpec, Model, ModelError, build_table

L = LayerSpec.make


def rows_by_name(rows):
    return {r.name.split(".", 1)[1]: r for r in rows}


# ------------------------------------------------------------------------------------ expected experts touched
def test_expected_experts_by_hand():
    assert expected_experts(8, 2, 1) == 2.0  # Mixtral decode, batch 1: exactly its top-2
    assert expected_experts(8, 2, 4) == 8 * (1 - (6 / 8) ** 4) == 5.46875  # batch 4: 5.47 of 8
    assert expected_experts(256, 8, 1) == 8.0  # DeepSeek-V3, one token
    assert expected_experts(256, 8, 64) == pytest.approx(256 * (1 - (248 / 256) ** 64))  # 222.44
    assert expected_experts(8, 2, 4096) == 8.0  # a prefill touches every expert
    assert expected_experts(8, 8, 3) == 8.0


@given(e=st.integers(1, 512), data=st.data(), t=st.integers(1, 100_000), more=st.integers(0, 100_000))
def test_more_tokens_never_touch_fewer_experts(e, data, t, more):
    k = data.draw(st.integers(1, e))
    fewer, many = expected_experts(e, k, t), expected_experts(e, k, t + more)
    assert many >= fewer
    assert k <= fewer <= min(e, k * t)  # at least one token's k experts, at most all of them (or k per token)


# ---------------------------------------------------------------------------------------------- the moe rows
def test_moe_rows_by_hand():
    """hidden 16, 4 SwiGLU experts of width 8, top-2, decode batch 3: 6 (token, expert) pairs; the expected experts
    touched are 4 x (1 - (1/2)^3) = 3.5, so each projection reads 3.5 experts' weights."""
    ctx = Context(batch=3, seq_len=10, phase="decode")
    _, rows = run("moe", {"experts": 4, "top_k": 2, "ffn_hidden": 8}, (1, 16), ctx, "m")
    r = rows_by_name(rows)
    assert list(r) == ["router", "experts_gate", "experts_act", "experts_mul", "experts_up", "experts_down", "combine"]
    assert (r["router"].macs, r["router"].params, r["router"].other_flops) == (3 * 16 * 4, 16 * 4, 3 * 3 * 4)
    for part in ("gate", "up", "down"):
        row = r[f"experts_{part}"]
        assert row.macs == 3 * 2 * 16 * 8  # 3 tokens x top-2 x 16 x 8
        assert row.params == 4 * 16 * 8 and row.active_params == 2 * 16 * 8
        assert row.weight_elems == 3.5 * 16 * 8
    assert r["experts_gate"].gemm == (2, 8, 16) and r["experts_gate"].gemm_count == 4  # 6 pairs over 4 (3.5) GEMMs
    assert r["experts_act"].other_flops == 4 * 3 * 2 * 8  # SiLU on each pair's 8 gate outputs
    assert r["combine"].other_flops == 2 * 6 * 16 and r["combine"].output_elems == 3 * 16


def test_shared_experts_and_router_bias():
    """DeepSeek-style: 1 shared expert (a dense SwiGLU as wide as one expert), a selection bias per expert."""
    _, rows = run("moe", {"experts": 4, "top_k": 1, "ffn_hidden": 8, "shared_experts": 1, "router_bias": True},
                  (5, 16), Context(), "m")
    r = rows_by_name(rows)
    assert r["router"].params == 16 * 4 + 4
    assert [r[f"shared_{p}"].params for p in ("gate", "up", "down")] == [16 * 8] * 3
    assert all(r[f"shared_{p}"].weight_elems == 16 * 8 for p in ("gate", "up", "down"))  # always read
    assert r["combine"].other_flops == 2 * 5 * 16 + 5 * 16  # 5 routed outputs weighted and summed, + the shared one
    total = sum(x.params for x in rows)
    active = sum(x.params if x.active_params is None else x.active_params for x in rows)
    assert total - active == 3 * 3 * 16 * 8  # the 3 experts a token does not use, 3 projections each


def block(phase="prefill", batch=1, **params):
    model = Model.make("b", {"tokens": 6, "hidden": 32}, [L("transformer_block", "h", **params)])
    return build_table(model, Context(batch=batch, phase=phase, seq_len=6))


def test_a_block_with_experts_counts_total_and_active():
    """4 heads, 8 SwiGLU experts of 48, top-2, no biases: attention 4 x 32^2, router 32 x 8, experts 3 x 32 x 48 each,
    two RMSNorms of 32."""
    t = block(heads=4, ffn="swiglu", ffn_hidden=48, bias=False, norm="rmsnorm", experts=8, top_k=2)
    attention, router, expert = 4 * 32 * 32, 32 * 8, 3 * 32 * 48
    assert t.total("params") == attention + router + 8 * expert + 2 * 32
    assert t.total("active_params") == attention + router + 2 * expert + 2 * 32
    dense = block(heads=4, ffn="swiglu", ffn_hidden=48, bias=False, norm="rmsnorm")
    assert dense.total("active_params") == dense.total("params")  # without experts: active = params
    assert t.total("macs") - dense.total("macs") == 6 * (32 * 8 + expert)  # router + a second expert per token
    wide = block(heads=4, ffn="swiglu", ffn_hidden=48, expert_ffn_hidden=16, bias=False, experts=8, top_k=2)
    assert wide.params[wide.names.index("h.moe.experts_up")] == 8 * 32 * 16


def test_decode_reads_the_experts_the_batch_touches():
    """Weight bytes of a decode step: every dense weight, the looked-up embedding rows, and E (1 - (1 - k/E)^B)
    experts (the roofline's weight bytes are these elements at the precision)."""
    model = Model.make("m", {"tokens": 64}, [
        L("embedding", "emb", num_embeddings=100, embedding_dim=32),
        L("transformer_block", "h", repeat=2, heads=4, ffn="swiglu", ffn_hidden=48, bias=False, norm="rmsnorm",
          experts=8, top_k=2),
        L("dense", "head", in_features=32, out_features=100, bias=False)])
    dense_w = 2 * (4 * 32 * 32 + 32 * 8 + 2 * 32) + 32 * 100  # attention, router, norms; the head
    expert = 3 * 32 * 48
    for batch in (1, 2, 4, 64):
        ctx = Context(batch=batch, seq_len=64, phase="decode")
        t = build_table(model, ctx)
        touched = 8 * (1 - (6 / 8) ** batch)
        assert t.total("weight_elems") == pytest.approx(dense_w + batch * 32 + 2 * touched * expert, rel=1e-12)
        dev = device_from_dict({"id": "d", "name": "d", "vendor": "v", "kind": "gpu", "peak": {"fp16": "100 TFLOP/s"},
                                "memory": [{"name": "HBM", "role": "offchip", "capacity": "80 GB",
                                            "bandwidth": "2 TB/s"}]})
        r = evaluate(model, [dev], "fp16", ctx)
        assert float(r.count @ r.weight_bytes) == pytest.approx(2 * t.total("weight_elems"), rel=1e-12)
    one = build_table(model, Context(batch=1, seq_len=64, phase="decode"))
    assert one.total("weight_elems") == one.total("active_params") - 100 * 32 + 32  # batch 1 reads what it uses


@pytest.mark.parametrize("params, message", [
    ({"experts": 8}, "h.top_k: is required with experts"),
    ({"experts": 4, "top_k": 5}, "top_k: 5 is more than the 4 experts"),
    ({"top_k": 2}, "h.top_k: needs a mixture of experts (experts > 0)"),
    ({"shared_experts": 1}, "h.shared_experts: needs a mixture of experts"),
    ({"kv_lora_rank": 16, "qk_nope_head_dim": 8}, "h.v_head_dim: is required with latent attention"),
    ({"kv_lora_rank": 16, "qk_nope_head_dim": 8, "v_head_dim": 8, "kv_heads": 2}, "h.kv_heads: has no meaning"),
    ({"v_head_dim": 8}, "h.v_head_dim: needs latent attention (kv_lora_rank > 0)"),
])
def test_inconsistent_moe_and_mla_params_are_flagged(params, message):
    t = block(heads=4, **params)
    (error,) = t.errors
    assert message in error[1]


def test_model_files_with_moe_round_trip():
    data = {"format": 1, "name": "m", "input": {"tokens": 8}, "layers": [
        {"kind": "embedding", "num_embeddings": 10, "embedding_dim": 16},
        {"kind": "transformer_block", "heads": 2, "experts": 4, "top_k": 2, "ffn": "swiglu", "ffn_hidden": 8},
        {"kind": "moe", "experts": 4, "top_k": 1, "ffn_hidden": 8},
        {"kind": "mla", "heads": 2, "kv_lora_rank": 4, "qk_nope_head_dim": 4, "qk_rope_head_dim": 2,
         "v_head_dim": 4}]}
    model = Model.from_dict(data)
    assert model.to_dict() == data and not build_table(model, Context()).errors
    with pytest.raises(ModelError, match=r"layers\[0\].top_k: is required for .moe."):
        Model.from_dict({**data, "layers": [{"kind": "moe", "experts": 4, "ffn_hidden": 8}]})


# ----------------------------------------------------------------------------------- multi-head latent attention
V3 = {"heads": 128, "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
      "v_head_dim": 128}


def test_mla_parameters_of_a_deepseek_v3_layer():
    """DeepSeek-V3's attention (hidden 7168): q_a 7168 x 1536 + q norm 1536 + q_b 1536 x 128 x 192
    + kv_a 7168 x (512 + 64) + kv norm 512 + kv_b 512 x 128 x (128 + 128) + o 128 x 128 x 7168 = 187,107,328."""
    expected = 7168 * 1536 + 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 + 512 * 128 * 256 + 128 * 128 * 7168
    assert expected == 187_107_328
    for ctx in (Context(seq_len=16), Context(batch=2, seq_len=4096, phase="decode")):
        _, rows = run("mla", V3, (1 if ctx.phase == "decode" else 16, 7168), ctx, "a")
        assert sum(r.params for r in rows) == expected
        assert [r.name for r in rows if r.params] == [f"a.{n}" for n in (
            "q_down", "q_norm", "q_up", "kv_down", "kv_norm", "k_up", "v_up", "out")]


def test_mla_caches_the_latent_only():
    """The KV cache per token and layer is the latent and the rotary key, 512 + 64 numbers (MHA with 128 heads of
    192-wide keys and 128-wide values would keep 128 x (192 + 128) = 40,960)."""
    ctx = Context(batch=2, seq_len=4096, phase="decode")
    _, rows = run("mla", V3, (1, 7168), ctx, "a")
    r = rows_by_name(rows)
    assert r["scores"].kv_cache_elems == 2 * 4096 * (512 + 64)
    assert r["scores"].kv_read_elems == 2 * 4095 * (512 + 64) and r["context"].kv_read_elems == 0  # read once
    # absorbed decode: each head scores 4096 keys over the latent (512 + 64) and sums 4096 latent values (512)
    assert r["scores"].macs == 2 * 128 * 4096 * 576 and r["context"].macs == 2 * 128 * 4096 * 512
    assert r["scores"].gemm == (128, 4096, 576) and r["scores"].gemm_count == 2  # heads share the latent
    assert r["k_up"].macs == 2 * 128 * 128 * 512 and r["v_up"].macs == 2 * 128 * 512 * 128


def test_mla_prefill_expands_keys_and_values():
    """Prefill of 10 causal tokens: 55 pairs per head, q/k heads of 128 + 64, v heads of 128; the cache written
    holds 10 latents."""
    _, rows = run("mla", V3, (10, 7168), Context(), "a")
    r = rows_by_name(rows)
    assert r["scores"].macs == 128 * 55 * 192 and r["context"].macs == 128 * 55 * 128
    assert r["scores"].kv_cache_elems == 10 * 576 and r["scores"].kv_read_elems == 0
    assert r["k_up"].macs == 10 * 512 * 128 * 128 and r["v_up"].macs == 10 * 512 * 128 * 128
    _, none = run("mla", {**V3, "q_lora_rank": 0}, (10, 7168), Context(), "a")  # DeepSeek-V2-Lite: q_proj
    assert rows_by_name(none)["q_proj"].params == 7168 * 128 * 192


def test_a_block_with_mla_and_experts():
    """The transformer_block options together (DeepSeek's MoE layers) keep the block's norms and residuals."""
    model = Model.make("b", {"tokens": 8, "hidden": 64}, [L(
        "transformer_block", "h", heads=4, norm="rmsnorm", bias=False, ffn="swiglu", ffn_hidden=16, experts=4,
        top_k=2, shared_experts=1, router_bias=True, kv_lora_rank=16, q_lora_rank=24, qk_nope_head_dim=8,
        qk_rope_head_dim=4, v_head_dim=8)])
    t = build_table(model, Context())
    attn = 64 * 24 + 24 + 24 * 4 * 12 + 64 * 20 + 16 + 16 * 4 * 8 + 16 * 4 * 8 + 4 * 8 * 64
    moe = 64 * 4 + 4 + 4 * 3 * 64 * 16 + 3 * 64 * 16
    assert t.total("params") == attn + moe + 2 * 64 and not t.errors
    assert t.total("active_params") == t.total("params") - 2 * 3 * 64 * 16


def test_the_new_block_parameters_at_their_defaults_change_nothing():
    """experts 0 and kv_lora_rank 0 (the defaults) are the dense feed-forward and multi-head attention: a file that
    writes them out counts exactly as one written before they existed."""
    old = block(heads=4, kv_heads=2, ffn="swiglu", ffn_hidden=48, phase="decode", batch=3)
    new = block(heads=4, kv_heads=2, ffn="swiglu", ffn_hidden=48, phase="decode", batch=3, experts=0, top_k=0,
                shared_experts=0, expert_ffn_hidden=0, router_bias=False, kv_lora_rank=0, q_lora_rank=0,
                qk_nope_head_dim=0, qk_rope_head_dim=0, v_head_dim=0)
    assert old.names == new.names
    assert all((old.columns[c] == new.columns[c]).all() for c in old.columns)
