"""LoRA adapters on a transformer block's projections (Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language
Models", https://arxiv.org/abs/2106.09685): a frozen projection W (in x out) gains a trainable update B A of rank r,
A (in x r) and B (r x out), so y = x W + (x A) B.

Counting conventions (``docs/model-file.md`` states them for users):

* **Parameters**: r x (in + out) per adapted projection and block; ``lora_adapters`` = n adapters served together
  (S-LoRA, Punica: one base model, many adapters) store n times that. ``active_params`` is one adapter's: each
  sequence uses one.
* **Work**: per token and adapted projection r x (in + out) MACs, 2 r (in + out) FLOPs: the shrink x A (in x r) and the
  expand (x A) B (r x out), which accumulates into the base projection's output (no separate add). Each token
  computes with its own sequence's adapter only, so the work does not grow with n.
* **Weights read per step**: the distinct adapters the batch's sequences use, under uniform, independent choice:
  n (1 - (1 - 1/n)^B) of them for a batch of B sequences (the mixture of experts' estimate with top_k 1,
  ``moe.expected_experts``); one adapter for one sequence.
* **Traffic**: the adapted projections' inputs (read again by the shrink), their outputs (accumulated into) and the
  rank-r intermediate (written by the shrink, read by the expand), each once.
* The adapters' products are r wide: counted as work without a matrix-engine GEMM shape (``gemm`` all 0), like
  other skinny operators; they are a fraction r / hidden of the base projections' work.

One row per block part: ``attn_lora`` (targets among q, k, v, o) after the attention, ``ffn_lora`` (gate, up, down)
after the feed-forward. Latent attention (MLA) and a mixture of experts' feed-forward take no adapters here.
"""

from __future__ import annotations

from explorer.core.workload.layers.base import Context, ParamError, Row, Shape
from explorer.core.workload.layers.moe import expected_experts

ATTENTION_TARGETS = ("q", "k", "v", "o")
FFN_TARGETS = ("gate", "up", "down")
DEFAULT_TARGETS = "q,k,v,o"


def lora_targets(p: dict, name: str, gated: bool) -> tuple[str, ...]:
    """The projections a transformer block's ``lora_targets`` names (checked); () without adapters."""
    if not p["lora_rank"]:
        for field, default in (("lora_targets", DEFAULT_TARGETS), ("lora_adapters", 1)):
            if p[field] != default:
                raise ParamError(f"{name}.{field}: needs LoRA adapters (lora_rank > 0)")
        return ()
    ffn = FFN_TARGETS if gated else FFN_TARGETS[1:]
    text = p["lora_targets"].replace(" ", "")
    targets = ATTENTION_TARGETS + ffn if text == "all" else tuple(t for t in text.split(",") if t)
    known = ATTENTION_TARGETS + ffn
    unknown = [t for t in targets if t not in known]
    if unknown or not targets or len(set(targets)) != len(targets):
        raise ParamError(f"{name}.lora_targets: expected 'all' or distinct names from {', '.join(known)}, "
                         f"got {p['lora_targets']!r}")
    if p["kv_lora_rank"]:
        raise ParamError(f"{name}.lora_rank: LoRA on latent attention (kv_lora_rank > 0) is not modelled")
    if p["experts"] and any(t in FFN_TARGETS for t in targets):
        raise ParamError(f"{name}.lora_targets: LoRA on a mixture of experts' projections is not modelled")
    return targets


def lora_rows(p: dict, ctx: Context, name: str, in_shape: Shape, targets: tuple[str, ...],
              sizes: dict[str, tuple[int, int]]) -> list[Row]:
    """One row for the adapters on the ``targets`` among ``sizes`` (projection -> (in, out)); [] when none."""
    chosen = [sizes[t] for t in targets if t in sizes]
    if not chosen:
        return []
    r, n, b = p["lora_rank"], p["lora_adapters"], ctx.batch
    s_q = in_shape[0]
    m = b * s_q  # tokens of this step
    one = r * sum(fin + fout for fin, fout in chosen)  # one adapter's parameters (and MACs per token)
    touched = expected_experts(n, 1, b)  # distinct adapters among the batch's sequences
    middle = m * r * len(chosen)  # the rank-r intermediates x A
    return [Row(name, "lora", macs=m * one, params=n * one, active_params=one, weight_elems=touched * one,
                input_elems=m * sum(fin for fin, _ in chosen) + middle,
                output_elems=m * sum(fout for _, fout in chosen) + middle, out_shape=(s_q, r * len(chosen)))]
