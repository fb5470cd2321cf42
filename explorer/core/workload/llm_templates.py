"""The decoder LLMs people deploy today, as templates, and the one builder they share with the Hugging Face
config importer (``explorer/core/importers/hf_config.py``): a token embedding, ``transformer_block`` x N (one
repeated entry per group of identical layers), a final RMSNorm and the LM head. Dense models, and the mixtures of
experts (Mixtral; DeepSeek-V3 with multi-head latent attention) whose blocks take the ``experts`` and
``kv_lora_rank`` options.

Each template's parameter count is the published count of its checkpoint, and follows from the sizes of the
checkpoint's ``config.json`` (``tests/core/test_llm_templates.py`` works it out by hand). Rotary position encoding
has no weights and is not counted. Token counts: 4096, the importer's default (``docs/hf-config.md``), whatever the
model's context window; decode by default (one new token per sequence against a KV cache of 4096 tokens).
"""

from __future__ import annotations

from dataclasses import dataclass

from explorer.core.workload.model import LayerSpec, Model
from explorer.core.workload.template_types import PublishedFigure, Template

L = LayerSpec.make
DEFAULT_TOKENS = 4096


@dataclass(frozen=True)
class BlockGroup:
    """``count`` consecutive identical decoder layers; ``window`` > 0 is sliding-window attention; ``dense`` keeps
    the dense feed-forward in a mixture-of-experts model (DeepSeek's first layers)."""

    label: str
    count: int
    window: int = 0
    dense: bool = False


@dataclass(frozen=True)
class MoE:
    """The mixture-of-experts feed-forward (``layers/moe.py``): ``experts`` routed experts of which each token uses
    ``top_k``, plus ``shared`` experts every token uses, each ``ffn_hidden`` wide; a selection bias per expert."""

    experts: int
    top_k: int
    ffn_hidden: int
    shared: int = 0
    router_bias: bool = False


@dataclass(frozen=True)
class MLA:
    """Multi-head latent attention (``layers/mla.py``), in the Hugging Face config's names."""

    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    q_lora_rank: int = 0


def decoder_model(name: str, *, vocab: int, hidden: int, layers: int | tuple[BlockGroup, ...], heads: int,
                  ffn_hidden: int, kv_heads: int = 0, head_dim: int = 0, ffn: str = "swiglu", tied: bool = False,
                  bias: bool = False, qkv_bias: bool = False, post_norms: bool = False,
                  moe: MoE | None = None, mla: MLA | None = None, tokens: int = DEFAULT_TOKENS) -> Model:
    """A pre-RMSNorm decoder. Parameters equal to their defaults are left out of the layer specs (kv_heads equal
    to heads, head_dim equal to hidden / heads), so the model file stays the short form a person would write.
    With ``moe`` every group but the ``dense`` ones has experts, ``ffn_hidden`` then being the expert's width."""
    groups = (BlockGroup("layers", layers),) if isinstance(layers, int) else layers
    block: dict = {"heads": heads}
    if kv_heads and kv_heads != heads and not mla:
        block["kv_heads"] = kv_heads
    if head_dim and (hidden % heads or head_dim != hidden // heads) and not mla:
        block["head_dim"] = head_dim
    if mla:
        block.update(kv_lora_rank=mla.kv_lora_rank, **({"q_lora_rank": mla.q_lora_rank} if mla.q_lora_rank else {}),
                     qk_nope_head_dim=mla.qk_nope_head_dim, qk_rope_head_dim=mla.qk_rope_head_dim,
                     v_head_dim=mla.v_head_dim)
    block.update(ffn=ffn, ffn_hidden=ffn_hidden, norm="rmsnorm", bias=bias)
    if qkv_bias and not bias:
        block["qkv_bias"] = True
    if post_norms:
        block["post_norms"] = True
    experts: dict = {}
    if moe:
        experts = {"ffn_hidden": moe.ffn_hidden, "experts": moe.experts, "top_k": moe.top_k}
        experts.update({"shared_experts": moe.shared} if moe.shared else {})
        experts.update({"router_bias": True} if moe.router_bias else {})
    specs = [L("embedding", "embed_tokens", num_embeddings=vocab, embedding_dim=hidden)]
    for g in groups:
        params = {**block, **({} if g.dense else experts), **({"window": g.window} if g.window else {})}
        specs.append(L("transformer_block", g.label, repeat=g.count, **params))
    tie = {"tied": True} if tied else {}
    specs += [L("rmsnorm", "norm"),
              L("dense", "lm_head", in_features=hidden, out_features=vocab, bias=False, head=True, **tie)]
    return Model.make(name, {"tokens": tokens}, specs)


# ---------------------------------------------------------------------------------------------- the models
def llama2_70b() -> Model:
    return decoder_model("Llama-2-70B", vocab=32000, hidden=8192, layers=80, heads=64, kv_heads=8, ffn_hidden=28672)


def llama3_8b() -> Model:
    return decoder_model("Llama-3-8B", vocab=128256, hidden=4096, layers=32, heads=32, kv_heads=8, ffn_hidden=14336)


def llama3_70b() -> Model:
    return decoder_model("Llama-3-70B", vocab=128256, hidden=8192, layers=80, heads=64, kv_heads=8, ffn_hidden=28672)


def llama31_405b() -> Model:
    return decoder_model("Llama-3.1-405B", vocab=128256, hidden=16384, layers=126, heads=128, kv_heads=8,
                         ffn_hidden=53248)


def mistral_7b() -> Model:
    return decoder_model("Mistral-7B-v0.1", vocab=32000, hidden=4096, layers=(BlockGroup("layers", 32, 4096),),
                         heads=32, kv_heads=8, ffn_hidden=14336)


def qwen25_7b() -> Model:
    return decoder_model("Qwen2.5-7B", vocab=152064, hidden=3584, layers=28, heads=28, kv_heads=4, ffn_hidden=18944,
                         qkv_bias=True)


def mixtral_8x7b() -> Model:
    return decoder_model("Mixtral-8x7B-v0.1", vocab=32000, hidden=4096, layers=32, heads=32, kv_heads=8,
                         ffn_hidden=14336, moe=MoE(experts=8, top_k=2, ffn_hidden=14336))


def deepseek_v3() -> Model:
    return decoder_model("DeepSeek-V3", vocab=129280, hidden=7168, heads=128, ffn_hidden=18432,
                         layers=(BlockGroup("layers.dense", 3, dense=True), BlockGroup("layers.moe", 58)),
                         moe=MoE(experts=256, top_k=8, ffn_hidden=2048, shared=1, router_bias=True),
                         mla=MLA(kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128,
                                 q_lora_rank=1536))


# ------------------------------------------------------------------------------------------------ registry
_HUB_API = "the Hugging Face Hub's safetensors parameter total, https://huggingface.co/api/models/{} (safetensors.total)"
_DECODE = ("Input: 4096 tokens; decode by default: one new token per sequence against a KV cache of the sequence "
           "length.")


def _params(value: int, context: str, citation: str, note: str = "") -> tuple[PublishedFigure, ...]:
    return (PublishedFigure("params", value, context, citation, note),)


LLM_TEMPLATES = (
    Template(
        "llama2-70b", "Llama-2-70B",
        "Llama 2 70B: 80 pre-RMSNorm decoder blocks, hidden 8192, 64 query heads sharing 8 key/value heads (GQA), "
        f"SwiGLU FFN 28672, no biases, untied LM head, vocabulary 32000. {_DECODE}",
        llama2_70b, "decode",
        _params(68_976_648_192, "embeddings, 80 blocks, final norm, untied lm_head",
                "Touvron et al., 'Llama 2: Open Foundation and Fine-Tuned Chat Models' (2023), 70B: "
                "https://arxiv.org/abs/2307.09288; exact count of meta-llama/Llama-2-70b-hf: "
                + _HUB_API.format("meta-llama/Llama-2-70b-hf"),
                "the Hub's total, 68,976,653,312, also counts the 80 x 64 rotary inv_freq buffers the checkpoint "
                "stores (not parameters): 68,976,653,312 - 5,120")),
    Template(
        "llama3-8b", "Llama-3-8B",
        "Llama 3 8B: 32 pre-RMSNorm decoder blocks, hidden 4096, 32 query heads sharing 8 key/value heads (GQA), "
        f"SwiGLU FFN 14336, no biases, untied LM head, vocabulary 128256. {_DECODE}",
        llama3_8b, "decode",
        _params(8_030_261_248, "embeddings, 32 blocks, final norm, untied lm_head",
                "Meta Llama 3 model card, https://huggingface.co/meta-llama/Meta-Llama-3-8B (8.03B params); exact "
                "count: its model.safetensors.index.json total_size, 16,060,522,496 bytes of bfloat16 weights",
                "16,060,522,496 bytes / 2 bytes per bfloat16 parameter")),
    Template(
        "llama3-70b", "Llama-3-70B",
        "Llama 3 70B: 80 pre-RMSNorm decoder blocks, hidden 8192, 64 query heads sharing 8 key/value heads (GQA), "
        f"SwiGLU FFN 28672, no biases, untied LM head, vocabulary 128256. {_DECODE}",
        llama3_70b, "decode",
        _params(70_553_706_496, "embeddings, 80 blocks, final norm, untied lm_head",
                "Meta Llama 3 model card, https://huggingface.co/meta-llama/Meta-Llama-3-70B (70.6B params); exact "
                "count: " + _HUB_API.format("meta-llama/Llama-3.1-70B"),
                "Llama 3.1 70B has the same sizes as Llama 3 70B (only the RoPE scaling differs)")),
    Template(
        "llama3.1-405b", "Llama-3.1-405B",
        "Llama 3.1 405B: 126 pre-RMSNorm decoder blocks, hidden 16384, 128 query heads sharing 8 key/value heads "
        f"(GQA), SwiGLU FFN 53248, no biases, untied LM head, vocabulary 128256. {_DECODE} (its window is 128K "
        "tokens: set the sequence length to study long contexts).",
        llama31_405b, "decode",
        _params(405_853_388_800, "embeddings, 126 blocks, final norm, untied lm_head",
                "Llama Team, 'The Llama 3 Herd of Models' (2024), 405B: https://arxiv.org/abs/2407.21783; exact count "
                "of meta-llama/Llama-3.1-405B: " + _HUB_API.format("meta-llama/Llama-3.1-405B"),
                "with 8 key/value heads; the first 405B configs said 16, which would give 410,081,247,232")),
    Template(
        "mistral-7b", "Mistral-7B-v0.1",
        "Mistral 7B v0.1: 32 pre-RMSNorm decoder blocks, hidden 4096, 32 query heads sharing 8 key/value heads "
        "(GQA), sliding-window attention over the last 4096 tokens, SwiGLU FFN 14336, no biases, untied LM head, "
        f"vocabulary 32000. {_DECODE}",
        mistral_7b, "decode",
        _params(7_241_732_096, "embeddings, 32 blocks, final norm, untied lm_head",
                "Jiang et al., 'Mistral 7B' (2023), https://arxiv.org/abs/2310.06825; exact count of "
                "mistralai/Mistral-7B-v0.1 (7.24B params): " + _HUB_API.format("mistralai/Mistral-7B-v0.1"))),
    Template(
        "qwen2.5-7b", "Qwen2.5-7B",
        "Qwen2.5 7B: 28 pre-RMSNorm decoder blocks, hidden 3584, 28 query heads sharing 4 key/value heads (GQA), "
        "biases on the q, k and v projections only, SwiGLU FFN 18944, untied LM head, vocabulary 152064. "
        f"{_DECODE}",
        qwen25_7b, "decode",
        _params(7_615_616_512, "embeddings, 28 blocks, final norm, untied lm_head",
                "Qwen2.5 model card, https://huggingface.co/Qwen/Qwen2.5-7B ('Number of Parameters: 7.61B; "
                "Non-Embedding: 6.53B'); Qwen Team, 'Qwen2.5 Technical Report' (2024), "
                "https://arxiv.org/abs/2412.15115; exact count: " + _HUB_API.format("Qwen/Qwen2.5-7B"),
                "non-embedding: 7,615,616,512 - 2 x 152,064 x 3,584 = 6,525,621,760, the card's 6.53B")),
    Template(
        "mixtral-8x7b", "Mixtral-8x7B-v0.1",
        "Mixtral 8x7B v0.1: 32 pre-RMSNorm decoder blocks, hidden 4096, 32 query heads sharing 8 key/value heads "
        "(GQA), full attention; each block's feed-forward is a mixture of 8 SwiGLU experts of 14336, of which each "
        "token uses 2 (a router of 4096 x 8); no biases, untied LM head, vocabulary 32000. 46.7B parameters, 12.9B "
        f"of them used per token. {_DECODE} A decode step reads the experts its tokens touch: 2 of 8 at batch 1, "
        "E (1 - (1 - k/E)^B) at batch B under uniform routing.",
        mixtral_8x7b, "decode",
        (PublishedFigure("params", 46_702_792_704, "embeddings, 32 blocks of 8 experts, final norm, untied lm_head",
                         "Jiang et al., 'Mixtral of Experts' (2024): 47B parameters, 13B active: "
                         "https://arxiv.org/abs/2401.04088; Mistral AI, 'Mixtral of experts' (2023), 46.7B total, "
                         "12.9B per token: https://mistral.ai/news/mixtral-of-experts/; exact count: KerasHub's "
                         "mixtral_8_7b_en preset, params 46702792704: https://github.com/keras-team/keras-hub "
                         "(keras_hub/src/models/mixtral/mixtral_presets.py)"),
         PublishedFigure("active_params", 12.9e9, "per token: 2 of 8 experts, attention, router, norms, "
                         "embedding and lm_head",
                         "Mistral AI, 'Mixtral of experts' (2023), 12.9B parameters per token: "
                         "https://mistral.ai/news/mixtral-of-experts/; Jiang et al. (2024), 13B active: "
                         "https://arxiv.org/abs/2401.04088",
                         "12,879,925,248 by hand; the embedding table counts in full, as in Mistral's figure "
                         "(without it 12.75B)"))),
    Template(
        "deepseek-v3", "DeepSeek-V3",
        "DeepSeek-V3: 61 pre-RMSNorm decoder blocks, hidden 7168, multi-head latent attention with 128 heads (query "
        "latent 1536, key/value latent 512, head widths 128 + 64 rotary, values 128: the KV cache holds 576 numbers "
        "per token and layer); the first 3 blocks have a dense SwiGLU of 18432, the other 58 a mixture of 256 "
        "routed SwiGLU experts of 2048 (8 per token) plus 1 shared expert, with a selection bias per expert; no "
        "biases, untied LM head, vocabulary 129280. 671B parameters (the main model, without the multi-token "
        f"prediction module), 37B per token. {_DECODE}",
        deepseek_v3, "decode",
        (PublishedFigure("params", 671e9, "the main model: embeddings, 61 blocks, final norm, untied lm_head; "
                         "without the multi-token-prediction module",
                         "DeepSeek-AI, 'DeepSeek-V3 Technical Report' (2024), 671B total parameters: "
                         "https://arxiv.org/abs/2412.19437; README_WEIGHTS.md of deepseek-ai/DeepSeek-V3 (main model "
                         "671B; the Hub's 685B adds the 14B multi-token-prediction module): "
                         "https://github.com/deepseek-ai/DeepSeek-V3/blob/main/README_WEIGHTS.md",
                         "671,026,419,200 by hand from the config's sizes, including the 256 selection biases "
                         "(e_score_correction_bias) of each MoE layer"),
         PublishedFigure("active_params", 37e9, "per token: 8 of 256 routed experts, the shared expert, attention, "
                         "routers, norms and lm_head; DeepSeek leaves out the input embedding",
                         "DeepSeek-AI, 'DeepSeek-V3 Technical Report' (2024), 37B activated for each token: "
                         "https://arxiv.org/abs/2412.19437; the checkpoint's README_WEIGHTS.md, 36.6B activated "
                         "'including 0.9B for the output Head', as copied in https://github.com/tenstorrent/tt-metal "
                         "(models/demos/deepseek_v3/reference/README_WEIGHTS.md, commit f3712cc)",
                         "the app's active count, 37,552,297,472, includes the embedding table (as Mistral counts); "
                         "less its 129,280 x 7,168 = 926,679,040 it is 36,625,618,432, DeepSeek's 36.6B (37B). An "
                         "earlier README_WEIGHTS.md (github.com/deepseek-ai/DeepSeek-V3, commit 0b39205) said 36.7B "
                         "'including 0.9B for Embedding and 0.9B for the output Head', which no count of these sizes "
                         "gives"))),
)
