"""Hugging Face ``config.json`` files of decoder LLMs -> an ordinary, editable model (``docs/hf-config.md``).

Nothing is downloaded: the sizes in the file are the whole model. ``model_type`` picks the mapping (llama, mistral,
qwen2, phi3, gemma, gemma2; the mixtures of experts mixtral, deepseek_v2 and deepseek_v3, the last two with
multi-head latent attention); each becomes the embedding, ``transformer_block`` x N (one repeated entry per group
of identical layers), the final RMSNorm and the LM head, built by the same ``decoder_model`` as the LLM templates.
Every field of the file is either used, known to have no effect on the counts, or reported as ignored in the
result's warnings. Families that need layers the app does not have yet are refused by name.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from explorer.core.files import single_line
from explorer.core.importers.registry import Imported
from explorer.core.workload.llm_templates import DEFAULT_TOKENS, MLA, BlockGroup, MoE, decoder_model
from explorer.core.workload.model import ModelError

SNIFF_BYTES = 8 * 1024
FOLDER_FILE = "config.json"
_MODEL_TYPE = re.compile(r'"model_type"\s*:')
_SIZES = re.compile(r'"(hidden_size|num_hidden_layers)"\s*:')

#: families that need layer kinds the app does not have yet, and what they need
NOT_YET = {
    "qwen2_moe": "mixture-of-experts layers with a gated shared expert",
    "qwen3_moe": "mixture-of-experts layers with per-head query and key norms",
}

#: torch_dtype -> the precision to analyze at (a suggestion in ``details``: the model file has no precision field)
PRECISION = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float64": "fp64"}

#: fields every family reads
USED = frozenset({"model_type", "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                  "num_key_value_heads", "head_dim", "intermediate_size", "hidden_act", "tie_word_embeddings",
                  "max_position_embeddings", "torch_dtype", "dtype", "_name_or_path"})
#: fields that change no count in any family: token ids, initialization, training-only settings, RoPE (no weights),
#: the norm's epsilon, bookkeeping of the library that wrote the file
NO_EFFECT = frozenset({"architectures", "auto_map", "bos_token_id", "eos_token_id", "pad_token_id",
                       "initializer_range", "rms_norm_eps", "rope_theta", "rope_scaling", "use_cache",
                       "transformers_version", "attention_dropout", "pretraining_tp"})


@dataclass(frozen=True)
class Family:
    ffn: str  # swiglu | geglu
    acts: tuple[str, ...]  # accepted activations of the feed-forward's gate
    tied_default: bool  # the library's default for tie_word_embeddings
    window: str = "none"  # none | all (every layer) | gemma2 (every other layer) | qwen2 (layers past max_window_layers)
    qkv_bias: bool = False  # biases on q, k, v (Qwen2's projections have them without a config field)
    post_norms: bool = False  # Gemma 2's extra norms after attention and after the feed-forward
    moe: str = "none"  # none | mixtral (every layer) | deepseek (past first_k_dense_replace, with shared experts)
    mla: bool = False  # DeepSeek's multi-head latent attention
    used: frozenset = frozenset()
    no_effect: frozenset = frozenset()


_GELU = ("gelu", "gelu_pytorch_tanh")
#: DeepSeek-V2/V3: the MoE and MLA sizes; the router's scoring and grouping (which experts, not how many) and the
#: training-only fields change no count
_DEEPSEEK_USED = frozenset({"attention_bias", "first_k_dense_replace", "moe_layer_freq", "moe_intermediate_size",
                            "n_routed_experts", "n_shared_experts", "num_experts_per_tok", "topk_method", "q_lora_rank",
                            "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"})
_DEEPSEEK_NO_EFFECT = frozenset({"routed_scaling_factor", "n_group", "topk_group", "scoring_func", "norm_topk_prob",
                                 "aux_loss_alpha", "seq_aux", "ep_size", "num_nextn_predict_layers",
                                 "quantization_config"})
FAMILIES = {
    "llama": Family("swiglu", ("silu",), False, used=frozenset({"attention_bias", "mlp_bias"})),
    "mistral": Family("swiglu", ("silu",), False, "all", used=frozenset({"sliding_window"})),
    "qwen2": Family("swiglu", ("silu",), False, "qwen2", qkv_bias=True,
                    used=frozenset({"sliding_window", "use_sliding_window", "max_window_layers"}),
                    no_effect=frozenset({"use_mrope"})),
    "phi3": Family("swiglu", ("silu",), False, "all", used=frozenset({"sliding_window"}),
                   no_effect=frozenset({"embd_pdrop", "resid_pdrop", "original_max_position_embeddings",
                                        "partial_rotary_factor"})),
    "gemma": Family("geglu", _GELU, True, used=frozenset({"attention_bias", "hidden_activation"})),
    "gemma2": Family("geglu", _GELU, True, "gemma2", post_norms=True,
                     used=frozenset({"attention_bias", "hidden_activation", "sliding_window"}),
                     no_effect=frozenset({"attn_logit_softcapping", "final_logit_softcapping", "query_pre_attn_scalar",
                                          "cache_implementation", "sliding_window_size"})),
    "mixtral": Family("swiglu", ("silu",), False, "all", moe="mixtral",
                      used=frozenset({"sliding_window", "num_local_experts", "num_experts_per_tok"}),
                      no_effect=frozenset({"router_aux_loss_coef", "output_router_logits", "router_jitter_noise"})),
    "deepseek_v2": Family("swiglu", ("silu",), False, moe="deepseek", mla=True, used=_DEEPSEEK_USED,
                          no_effect=_DEEPSEEK_NO_EFFECT),
    "deepseek_v3": Family("swiglu", ("silu",), False, moe="deepseek", mla=True, used=_DEEPSEEK_USED,
                          no_effect=_DEEPSEEK_NO_EFFECT),
}


class HFConfigError(ModelError):
    """The config cannot be mapped: unknown or unsupported ``model_type``, a missing field or inconsistent sizes.
    The message names the file and the field, on one line (text quoted from the file has its line breaks escaped)."""

    def __init__(self, message: str):
        super().__init__(single_line(message))


def _head(path: Path) -> str:
    with Path(path).open("rb") as f:
        return f.read(SNIFF_BYTES).decode("utf-8-sig", errors="ignore")


def sniff_hf_config(path: Path) -> bool:
    """A JSON object with ``model_type`` and ``hidden_size`` or ``num_hidden_layers`` near the top."""
    text = _head(path)
    return text.lstrip().startswith("{") and bool(_MODEL_TYPE.search(text)) and bool(_SIZES.search(text))


def _config_file(path: Path) -> Path:
    return path / FOLDER_FILE if path.is_dir() else path


def _read(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise HFConfigError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HFConfigError(f"{path}: line {exc.lineno}: invalid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise HFConfigError(f"{path}: expected a JSON object (a Hugging Face config.json)")
    return data


class _Reader:
    """Reads fields of one config, raising errors that name the file and the field."""

    def __init__(self, path: Path, data: dict, model_type: str):
        self.path, self.data, self.model_type = path, data, model_type

    def fail(self, field: str, problem: str):
        raise HFConfigError(f"{self.path}: {field}: {problem}")

    def count(self, field: str, default: Any = None, minimum: int = 1) -> int | None:
        value = self.data.get(field)
        if value is None:
            if default is None:
                self.fail(field, f"is required for model_type '{self.model_type}'")
            return default
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            what = "a positive whole number" if minimum == 1 else f"a whole number >= {minimum}"
            self.fail(field, f"expected {what}, got {value!r}")
        return value

    def flag(self, field: str, default: bool) -> bool:
        value = self.data.get(field, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.fail(field, f"expected true or false, got {value!r}")
        return value

    def activation(self, field: str, accepted: tuple[str, ...]) -> None:
        value = self.data.get(field)
        if value is not None and value not in accepted:
            self.fail(field, f"'{value}' is not the {' or '.join(accepted)} of model_type '{self.model_type}' "
                             "(another activation is not supported)")


def load_hf_config(path: Path) -> Imported:
    path = _config_file(Path(path))
    data = _read(path)
    model_type = data.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise HFConfigError(f"{path}: model_type: is required (a string naming the model family)")
    if model_type in NOT_YET:
        raise HFConfigError(f"{path}: model_type '{model_type}' needs {NOT_YET[model_type]}, not supported yet")
    family = FAMILIES.get(model_type)
    if family is None:
        raise HFConfigError(f"{path}: model_type '{model_type}' is not supported; supported: {', '.join(FAMILIES)} "
                            f"(not yet: {', '.join(NOT_YET)})")
    r = _Reader(path, data, model_type)
    warnings: list[str] = []

    hidden, layers, heads = r.count("hidden_size"), r.count("num_hidden_layers"), r.count("num_attention_heads")
    vocab, ffn_hidden = r.count("vocab_size"), r.count("intermediate_size")
    kv_heads = r.count("num_key_value_heads", heads)
    head_dim = r.count("head_dim", 0)
    mla = _mla(r) if family.mla else None
    if mla:  # the latent replaces the key/value heads: their count and width have no effect
        kv_heads, head_dim = heads, 0
    elif not head_dim and hidden % heads:
        r.fail("num_attention_heads", f"{heads} heads do not divide hidden_size {hidden} (and no head_dim is given)")
    if heads % kv_heads:
        r.fail("num_key_value_heads", f"{kv_heads} does not divide num_attention_heads {heads}")
    r.activation("hidden_act", family.acts)
    if "hidden_activation" in family.used:
        r.activation("hidden_activation", family.acts)

    bias = _biases(r, family)
    tied = r.flag("tie_word_embeddings", family.tied_default)
    if "tie_word_embeddings" not in data:
        warnings.append(f"tie_word_embeddings is not given: {model_type}'s default, "
                        f"{'tied (the head reuses the embedding)' if tied else 'untied'}")
    groups, note, idle = _layer_groups(r, family, layers)
    if note:
        warnings.append(note)
    moe = None
    if family.moe != "none":
        moe, groups, notes = _moe(r, family, layers, groups, ffn_hidden)
        warnings += notes
    if mla:
        idle |= frozenset({"num_key_value_heads", "head_dim"})

    max_pos = r.count("max_position_embeddings", 0)
    tokens = min(max_pos, DEFAULT_TOKENS) if max_pos else DEFAULT_TOKENS
    why = ("no max_position_embeddings" if not max_pos else "its max_position_embeddings" if max_pos <= DEFAULT_TOKENS
           else f"max_position_embeddings {max_pos}, capped at {DEFAULT_TOKENS}")
    warnings.append(f"input: {tokens} tokens ({why}); set the sequence length for other contexts")

    dtype = data.get("torch_dtype", data.get("dtype"))
    if dtype is not None and not isinstance(dtype, str):
        r.fail("torch_dtype", f"expected a type name such as 'bfloat16', got {dtype!r}")
    precision = PRECISION.get(dtype or "")
    quant = data.get("quantization_config") if "quantization_config" in family.no_effect else None
    fp8 = isinstance(quant, dict) and quant.get("quant_method") == "fp8"  # DeepSeek-V3's native FP8 checkpoint
    name = _model_name(path, data) + (" (fp8)" if fp8 else f" ({dtype})" if dtype else "")
    if fp8:
        precision = "fp8"
        warnings.append("weights stored as fp8 (quantization_config: blocks of 128 x 128 with a scale each): "
                        "analyze at fp8 to match (the model file records it only in the name)")
    elif dtype:
        warnings.append(f"weights stored as {dtype}: analyze at {precision or 'that precision'} to match "
                        "(the model file records it only in the name)")

    model = decoder_model(name, vocab=vocab, hidden=hidden, layers=groups, heads=heads, kv_heads=kv_heads,
                          head_dim=head_dim, ffn_hidden=ffn_hidden, ffn=family.ffn, tied=tied, bias=bias,
                          qkv_bias=family.qkv_bias, post_norms=family.post_norms, moe=moe, mla=mla, tokens=tokens)
    used = (USED | family.used) - idle  # idle: read, but without effect in this config
    no_effect = NO_EFFECT | family.no_effect | idle
    quiet = sorted(k for k in data if k not in used and k in no_effect)
    unknown = sorted(k for k in data if k not in used and k not in no_effect)
    if quiet:
        warnings.append(f"ignored (no effect on the counts): {', '.join(quiet)}")
    if unknown:
        warnings.append(f"ignored (not part of the {model_type} mapping; check that they do not change the "
                        f"architecture): {', '.join(unknown)}")
    details = {"model_type": model_type, "torch_dtype": dtype, "precision": precision, "tokens": tokens,
               "no_effect": tuple(quiet), "ignored": tuple(unknown)}
    return Imported("model", model, warnings=tuple(warnings), details=details)


def _biases(r: _Reader, family: Family) -> bool:
    """One ``bias`` for every projection of the block: attention_bias and mlp_bias must agree (Llama), Gemma's
    feed-forward has none."""
    attention = r.flag("attention_bias", False) if "attention_bias" in family.used else False
    mlp = r.flag("mlp_bias", False) if "mlp_bias" in family.used else False
    if attention != mlp:
        field = "attention_bias" if attention else "mlp_bias"
        r.fail(field, "biases on the attention but not the feed-forward projections (or the reverse) are not "
                      "supported yet")
    return attention


def _layer_groups(r: _Reader, family: Family, layers: int) -> tuple[tuple[BlockGroup, ...], str, frozenset]:
    """The decoder layers as groups of identical blocks, with the sliding window where the family uses one; a note
    for the warnings, and the fields read that have no effect in this config."""
    whole = (BlockGroup("layers", layers),)
    if family.window == "none":
        return whole, "", frozenset()
    window = r.count("sliding_window", 4096 if family.window == "gemma2" else 0) or 0
    if family.window == "all":
        return ((BlockGroup("layers", layers, window),) if window else whole), "", frozenset()
    if family.window == "gemma2":
        local = (layers + 1) // 2  # even layers (0, 2, ...) slide, odd layers attend globally
        groups = (BlockGroup("layers.local", local, window), BlockGroup("layers.global", layers - local))
        return tuple(g for g in groups if g.count), (
            f"layers alternate sliding-window ({window} tokens) and global attention: written as {local} local "
            f"then {layers - local} global blocks (the order changes no total)"), frozenset()
    # qwen2: the window applies only with use_sliding_window, to the layers from max_window_layers on
    if not r.flag("use_sliding_window", False):
        return whole, "", frozenset({"sliding_window", "max_window_layers"})
    if not window:
        r.fail("sliding_window", "is required when use_sliding_window is true")
    full = min(r.count("max_window_layers", layers), layers)
    groups = (BlockGroup("layers", full), BlockGroup("layers.sliding", layers - full, window))
    return tuple(g for g in groups if g.count), "", frozenset()


def _mla(r: _Reader) -> MLA:
    """DeepSeek's multi-head latent attention. ``q_lora_rank`` must be given: null is a plain query projection
    (DeepSeek-V2-Lite), while the library's default for a missing field is 1536."""
    if "q_lora_rank" not in r.data:
        r.fail("q_lora_rank", f"is required for model_type '{r.model_type}' (null for no query compression)")
    return MLA(kv_lora_rank=r.count("kv_lora_rank"), qk_nope_head_dim=r.count("qk_nope_head_dim"),
               qk_rope_head_dim=r.count("qk_rope_head_dim", minimum=0), v_head_dim=r.count("v_head_dim"),
               q_lora_rank=r.count("q_lora_rank", 0))


def _moe(r: _Reader, family: Family, layers: int, groups: tuple[BlockGroup, ...],
         ffn_hidden: int) -> tuple[MoE, tuple[BlockGroup, ...], list[str]]:
    """The mixture of experts: Mixtral's in every layer (experts as wide as intermediate_size), DeepSeek's from
    layer first_k_dense_replace on (the layers before keep a dense feed-forward of intermediate_size)."""
    top_k = r.count("num_experts_per_tok")
    if family.moe == "mixtral":
        experts = r.count("num_local_experts")
        if top_k > experts:
            r.fail("num_experts_per_tok", f"{top_k} is more than num_local_experts {experts}")
        return MoE(experts=experts, top_k=top_k, ffn_hidden=ffn_hidden), groups, []
    experts = r.count("n_routed_experts")
    if top_k > experts:
        r.fail("num_experts_per_tok", f"{top_k} is more than n_routed_experts {experts}")
    if r.count("moe_layer_freq", 1) != 1:
        r.fail("moe_layer_freq", "only 1 (every layer from first_k_dense_replace on) is supported")
    dense = min(r.count("first_k_dense_replace", 0, minimum=0), layers)
    method = r.data.get("topk_method")
    moe = MoE(experts=experts, top_k=top_k, ffn_hidden=r.count("moe_intermediate_size"),
              shared=r.count("n_shared_experts", 0, minimum=0), router_bias=method == "noaux_tc")
    groups = tuple(g for g in (BlockGroup("layers.dense", dense, dense=True), BlockGroup("layers.moe", layers - dense))
                   if g.count)
    notes = [f"the first {dense} layers keep a dense feed-forward of intermediate_size (first_k_dense_replace); "
             f"the other {layers - dense} route each token to {top_k} of {experts} experts"
             + (f" plus {moe.shared} shared" if moe.shared else "")]
    if moe.router_bias:
        notes.append(f"topk_method {method}: each router stores a selection bias per expert (e_score_correction_bias)")
    mtp = r.data.get("num_nextn_predict_layers")
    if isinstance(mtp, int) and mtp > 0:
        notes.append(f"num_nextn_predict_layers: the {mtp} multi-token-prediction module(s) stored with the weights "
                     "(training, speculative decoding) are not part of the model")
    return moe, groups, notes


def _model_name(path: Path, data: dict) -> str:
    """The Hub id in ``_name_or_path`` (not a local path), else the folder of a config.json, else the file name."""
    hub = data.get("_name_or_path")
    if isinstance(hub, str) and re.fullmatch(r"[\w.-]+(/[\w.-]+)?", hub):
        return hub
    return path.parent.name if path.name == FOLDER_FILE and path.parent.name else path.stem
