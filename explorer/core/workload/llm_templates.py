"""The dense decoder LLMs people deploy today, as templates, and the one builder they share with the Hugging Face
config importer (``explorer/core/importers/hf_config.py``): a token embedding, ``transformer_block`` x N (one
repeated entry per group of identical layers), a final RMSNorm and the LM head.

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
    """``count`` consecutive identical decoder layers; ``window`` > 0 is sliding-window attention."""

    label: str
    count: int
    window: int = 0


def decoder_model(name: str, *, vocab: int, hidden: int, layers: int | tuple[BlockGroup, ...], heads: int,
                  ffn_hidden: int, kv_heads: int = 0, head_dim: int = 0, ffn: str = "swiglu", tied: bool = False,
                  bias: bool = False, qkv_bias: bool = False, post_norms: bool = False,
                  tokens: int = DEFAULT_TOKENS) -> Model:
    """A pre-RMSNorm decoder. Parameters equal to their defaults are left out of the layer specs (kv_heads equal
    to heads, head_dim equal to hidden / heads), so the model file stays the short form a person would write."""
    groups = (BlockGroup("layers", layers),) if isinstance(layers, int) else layers
    block: dict = {"heads": heads}
    if kv_heads and kv_heads != heads:
        block["kv_heads"] = kv_heads
    if head_dim and (hidden % heads or head_dim != hidden // heads):
        block["head_dim"] = head_dim
    block.update(ffn=ffn, ffn_hidden=ffn_hidden, norm="rmsnorm", bias=bias)
    if qkv_bias and not bias:
        block["qkv_bias"] = True
    if post_norms:
        block["post_norms"] = True
    specs = [L("embedding", "embed_tokens", num_embeddings=vocab, embedding_dim=hidden)]
    for g in groups:
        specs.append(L("transformer_block", g.label, repeat=g.count, **block, **({"window": g.window} if g.window
                                                                                    else {})))
    head = {"tied": True} if tied else {}
    specs += [L("rmsnorm", "norm"), L("dense", "lm_head", in_features=hidden, out_features=vocab, bias=False, **head)]
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
)
