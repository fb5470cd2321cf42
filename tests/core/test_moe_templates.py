"""The mixture-of-experts templates (mixtral-8x7b, deepseek-v3 in explorer/core/workload/llm_templates.py) against
their published parameter counts, total and active, each worked out by hand from the checkpoint's config.json sizes;
and what a decode step reads: the experts its tokens touch, and (DeepSeek) the latent KV cache."""

import pytest

from explorer.core.workload.layers import Context
from explorer.core.workload.model import build_table
from explorer.core.workload.templates import get_template


def table(template_id, **ctx):
    t = get_template(template_id)
    return build_table(t.build(), t.context(**ctx))


def published(template_id, quantity):
    (figure,) = [f for f in get_template(template_id).published if f.quantity == quantity]
    assert "https://" in figure.citation
    return figure.value


# ---------------------------------------------------------------------------------------------------- Mixtral
H, V = 4096, 32000
MIXTRAL_ATTN = H * H + 2 * H * 1024 + H * H  # q, k and v (8 KV heads of 128), o
MIXTRAL_EXPERT = 3 * H * 14336  # SwiGLU: gate, up, down
MIXTRAL_ROUTER = H * 8


def test_mixtral_total_is_the_published_count():
    """Mixtral-8x7B-v0.1 (Jiang et al. 2024; KerasHub's mixtral_8_7b_en preset: 46,702,792,704 params):
    32 x (attention + router + 8 experts + 2 norms) + embedding + final norm + untied head."""
    by_hand = 32 * (MIXTRAL_ATTN + MIXTRAL_ROUTER + 8 * MIXTRAL_EXPERT + 2 * H) + 2 * V * H + H
    assert by_hand == published("mixtral-8x7b", "params") == 46_702_792_704
    assert table("mixtral-8x7b").total("params") == by_hand


def test_mixtral_active_is_the_published_12_9_billion():
    """Per token 2 of the 8 experts compute: 12,879,925,248, Mistral's 12.9B (the paper's 13B)."""
    by_hand = 32 * (MIXTRAL_ATTN + MIXTRAL_ROUTER + 2 * MIXTRAL_EXPERT + 2 * H) + 2 * V * H + H
    assert by_hand == 12_879_925_248
    assert table("mixtral-8x7b").total("active_params") == by_hand
    assert round(by_hand / 1e8) / 10 == published("mixtral-8x7b", "active_params") / 1e9 == 12.9
    assert round(by_hand / 1e9) == 13  # Jiang et al.: "13B active parameters"


def test_mixtral_decode_reads_the_experts_its_batch_touches():
    """Decode at batch 1 reads exactly 2 of the 8 experts of each layer; batch 4 reads 8 (1 - (6/8)^4) = 5.47;
    a prefill of 4096 tokens reads them all (uniform independent routing)."""
    for phase, batch, touched in (("decode", 1, 2.0), ("decode", 4, 5.46875), ("prefill", 1, 8.0)):
        tab = table("mixtral-8x7b", batch=batch, phase=phase)
        for part in ("gate", "up", "down"):
            i = tab.names.index(f"layers.moe.experts_{part}")
            assert tab.weight_elems[i] == touched * H * 14336 and tab.count[i] == 32
    one = table("mixtral-8x7b")  # batch 1 reads every weight it computes with, and one row of the embedding
    assert one.total("weight_elems") == 12_879_925_248 - V * H + H


def test_mixtral_decode_work_is_the_active_weights_plus_attention():
    """One decode token does a MAC per active weight it multiplies (not the embedding lookup, not the norms) plus
    the scores and context over the 4096 cached positions (32 layers x 32 heads x 4096 x 128, twice)."""
    tab = table("mixtral-8x7b")
    weights = 12_879_925_248 - V * H - (32 * 2 * H + H)
    assert tab.total("macs") == weights + 2 * 32 * 32 * 4096 * 128


# -------------------------------------------------------------------------------------------------- DeepSeek-V3
D = 7168
MLA = D * 1536 + 1536 + 1536 * 128 * 192 + D * 576 + 512 + 512 * 128 * 256 + 128 * 128 * D  # 187,107,328
DENSE_FFN = 3 * D * 18432
DS_EXPERT = 3 * D * 2048
DS_ROUTER = D * 256 + 256  # gate.weight and the selection bias gate.e_score_correction_bias
DS_EMBED = 129280 * D


def test_deepseek_v3_total_is_the_published_671_billion():
    """DeepSeek-V3's main model (DeepSeek-V3 Technical Report, arXiv 2412.19437: 671B total; README_WEIGHTS.md:
    the Hub's 685B add the multi-token-prediction module), worked out from the config's sizes:

      3 dense layers:  MLA 187,107,328 + 2 norms of 7168 + SwiGLU 3 x 7168 x 18432            =    583,483,392 each
      58 MoE layers:   MLA + 2 norms + router 7168 x 256 + 256 biases + 257 experts x 44,040,192 = 11,507,286,272 each
      embedding and untied head 2 x 129280 x 7168, final norm 7168

    which is 671,026,419,200: the published 671B to its three figures (a tensor-by-tensor listing of the
    checkpoint's main model gives the same total, with the 256 e_score_correction_bias of each MoE layer)."""
    dense = MLA + 2 * D + DENSE_FFN
    moe = MLA + 2 * D + DS_ROUTER + 257 * DS_EXPERT
    assert (MLA, dense, moe) == (187_107_328, 583_483_392, 11_507_286_272)
    by_hand = 3 * dense + 58 * moe + 2 * DS_EMBED + D
    assert by_hand == 671_026_419_200 and table("deepseek-v3").total("params") == by_hand
    assert round(by_hand / 1e9) * 1e9 == published("deepseek-v3", "params")


def test_deepseek_v3_active_is_the_published_37_billion():
    """Per token: the dense layers, and in each MoE layer 8 routed experts + the shared one + the router:
    37,552,297,472 with the embedding table (the app's convention, Mistral's). DeepSeek leaves the input embedding
    out (a lookup reads one row): 36,625,618,432, README_WEIGHTS.md's 36.6B, the paper's 37B."""
    dense = MLA + 2 * D + DENSE_FFN
    moe = MLA + 2 * D + DS_ROUTER + 9 * DS_EXPERT
    by_hand = 3 * dense + 58 * moe + 2 * DS_EMBED + D
    assert by_hand == 37_552_297_472 and table("deepseek-v3").total("active_params") == by_hand
    deepseek = by_hand - DS_EMBED
    assert deepseek == 36_625_618_432 and round(deepseek / 1e8) / 10 == 36.6
    assert round(deepseek / 1e9) * 1e9 == published("deepseek-v3", "active_params")


@pytest.mark.parametrize("seq_len", [4096, 32768])
def test_deepseek_v3_caches_576_numbers_per_token_and_layer(seq_len):
    """MLA's point: the KV cache holds the 512-wide latent and the 64-wide rotary key per token and layer; 128 heads
    of full keys (192) and values (128) would hold 40,960."""
    tab = table("deepseek-v3", seq_len=seq_len, batch=2)
    assert tab.total("kv_cache_elems") == 2 * 61 * seq_len * (512 + 64)
    assert tab.total("kv_read_elems") == 2 * 61 * (seq_len - 1) * (512 + 64)
    assert 128 * (192 + 128) / (512 + 64) == pytest.approx(71.1, abs=0.05)


def test_deepseek_v3_layers_and_template_defaults():
    t = get_template("deepseek-v3")
    model = t.build()
    dense, moe = model.layers[1], model.layers[2]
    assert (dense.name, dense.repeat, "experts" in dense.params) == ("layers.dense", 3, False)
    assert (moe.name, moe.repeat, moe.params["experts"], moe.params["top_k"]) == ("layers.moe", 58, 256, 8)
    assert moe.params["shared_experts"] == 1 and moe.params["router_bias"] is True
    assert t.context() == Context(batch=1, seq_len=4096, phase="decode")
    one = table("deepseek-v3")
    i = one.names.index("layers.moe.moe.experts_up")
    assert one.weight_elems[i] == 8 * D * 2048  # batch 1 reads its 8 routed experts of 256


def test_deepseek_v3_prefill_work_of_the_experts():
    """A prefill of 4096 tokens: each token runs 8 routed and 1 shared SwiGLU experts, 3 x 7168 x 2048 MACs each, in
    each of the 58 MoE layers, and reads every expert's weights (256 (1 - (248/256)^4096) rounds to 256)."""
    tab = table("deepseek-v3", phase="prefill")
    routed = sum(tab.macs[tab.names.index(f"layers.moe.moe.experts_{p}")] for p in ("gate", "up", "down"))
    shared = sum(tab.macs[tab.names.index(f"layers.moe.moe.shared_{p}")] for p in ("gate", "up", "down"))
    assert (routed, shared) == (4096 * 8 * DS_EXPERT, 4096 * 1 * DS_EXPERT)
    assert tab.weight_elems[tab.names.index("layers.moe.moe.experts_down")] == 256 * D * 2048

