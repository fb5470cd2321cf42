"""Memory of training per device: model states under ZeRO and activations per transformer layer (closed forms).

**Model states** (mixed precision, Adam), per parameter, as Rajbhandari et al. count them (S. Rajbhandari, J. Rasley,
O. Ruwase, Y. He, "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models", SC 2020,
https://arxiv.org/abs/1910.02054, Sec. 3.1): 2 bytes of bf16/fp16 weights, 2 bytes of bf16/fp16 gradients and
K = 12 bytes of optimizer states (an fp32 master copy of the weights, Adam's first and second moments, 4 bytes
each): 16 bytes in all. ZeRO's stages partition them over the ``dp`` data-parallel ranks (Sec. 5, Fig. 1)::

    stage 0   2 + 2 + 12                    (plain data parallelism; every rank holds everything)
    stage 1   2 + 2 + 12 / dp               (optimizer states partitioned)
    stage 2   2 + (2 + 12) / dp             (gradients too)
    stage 3   (2 + 2 + 12) / dp             (parameters too; FSDP's FULL_SHARD is this stage)

A frozen parameter (the base of a LoRA fine-tune) keeps only its 2 bytes of weights (sharded by dp at stage 3).

**Activations** of one transformer layer, bytes, for a micro-batch of b sequences of s tokens, hidden h, a heads,
16-bit activations and 1-byte dropout masks, from V. Korthikanti, J. Casper, S. Lym, L. McAfee, M. Andersch,
M. Shoeybi, B. Catanzaro, "Reducing Activation Recomputation in Large Transformer Models", MLSys 2023,
https://arxiv.org/abs/2205.05198, Sec. 4 and Table 2 (t the tensor-parallel degree)::

    no parallelism                       s b h (34 + 5 a s / h)
    tensor parallel                      s b h (10 + 24 / t + 5 a s / (h t))
    tensor + sequence parallel           s b h (34 + 5 a s / h) / t
    tensor parallel + selective recomp.  s b h (10 + 24 / t)
    tensor + sequence + selective        s b h 34 / t
    full recomputation                   2 s b h   (the layer's input only; / t with sequence parallelism)

The 34 is the sum of the paper's parts for a GPT layer (ffn 4h, multi-head attention, LayerNorm, dropout): the
attention block 11 s b h + 5 a s^2 b, the MLP 19 s b h, the two LayerNorms 4 s b h. :func:`layer_activations`
keeps those parts apart so they follow the model's own shape, and reduces to the table above exactly for the
paper's layer: per token, bytes ::

    not split by TP (split by SP)   2 norms' inputs 4h, the QKV and MLP inputs 2h + 2h, dropout masks 2h (if any)
    split by TP                     Q and K 2h + 2 h_kv, V 2 h_kv, the output projection's input 2h,
                                    MLP: 2 f + 2 f (activation's input, down projection's input), or for a gated
                                    MLP (SwiGLU) 6 f: the fused activation's input, gate and up (2 x 2f), and
                                    the product, the down projection's input (2f). Megatron-LM's fused SwiGLU
                                    saves only its input and recomputes SiLU(gate) in the backward
                                    (NVIDIA/Megatron-LM, megatron/core/fusions/fused_bias_swiglu.py,
                                    SwiGLUFunction: ``ctx.save_for_backward(input)``; swiglu_back recomputes
                                    silu(y_1)); an unfused PyTorch MLP, F.silu(gate) * up, also keeps SiLU's
                                    output for the product's backward: 8 f (not modelled)
    attention core (split by TP)    softmax output 2 a s, its dropout mask a s and output 2 a s (if dropout):
                                    5 a s or 2 a s per token; 0 with fused (flash) attention, which keeps no
                                    s x s matrix. Selective recomputation drops this term.

h_kv = kv_heads x head_dim (h for multi-head attention), f the MLP width. Context parallelism over ``cp`` ranks
splits the sequence: every term / cp (each rank holds s / cp tokens; without fused attention its queries'
probabilities against all s keys, (s / cp) x s, are kept for the backward pass, so the core term falls as 1 / cp too).

**Held per pipeline schedule** (the first stage, the busiest, of p stages, m micro-batches, v virtual stages;
Korthikanti et al. Sec. 4.2.3; Narayanan et al. 2021, Sec. 2.2): GPipe keeps every micro-batch's activations of
its L / p layers, m L / p layer-activations; 1F1B keeps at most p micro-batches in flight, min(m, p) L / p;
interleaved 1F1B keeps L (1 + (p - 1) / (p v)) layer-activations (when m >= p).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ZERO_STAGES = (0, 1, 2, 3)
RECOMPUTE = ("none", "selective", "full")
SCHEDULES = ("gpipe", "1f1b", "interleaved")

WEIGHT_BYTES = 2.0  # bf16 weights
GRAD_BYTES = 2.0  # bf16 gradients
OPTIMIZER_BYTES = 12.0  # fp32 master weights + Adam m + Adam v
STATE_BYTES = WEIGHT_BYTES + GRAD_BYTES + OPTIMIZER_BYTES  # 16: ZeRO Sec. 3.1
ACT_BYTES = 2.0  # 16-bit activations
MASK_BYTES = 1.0  # dropout masks


def state_bytes(trainable, frozen, dp, zero):
    """Bytes of model states per device for ``trainable`` and ``frozen`` parameters held by the device (after TP
    and PP), ``dp`` data-parallel ranks and ZeRO stage ``zero`` (arrays broadcast). Returns (weights, gradients,
    optimizer states)."""
    trainable, frozen, dp, zero = (np.asarray(x, dtype=float) for x in (trainable, frozen, dp, zero))
    w_div = np.where(zero >= 3, dp, 1.0)
    g_div = np.where(zero >= 2, dp, 1.0)
    o_div = np.where(zero >= 1, dp, 1.0)
    weights = WEIGHT_BYTES * (trainable + frozen) / w_div
    grads = GRAD_BYTES * trainable / g_div
    optimizer = OPTIMIZER_BYTES * trainable / o_div
    return weights, grads, optimizer


@dataclass(frozen=True)
class LayerShape:
    """A transformer layer's sizes for the activation closed form: hidden h, heads a, key/value width h_kv
    (kv_heads x head_dim), q width (heads x head_dim), MLP width f, gated MLP, dropout."""

    hidden: int
    heads: int
    kv_width: int
    q_width: int
    ffn: int
    gated: bool = False
    dropout: bool = False
    lora: int = 0  # LoRA: the rank-r intermediates per token (r x adapted projections), kept for the backward

    @classmethod
    def gpt(cls, hidden: int, heads: int, dropout: bool = True) -> LayerShape:
        """The layer of Korthikanti et al. (GPT: MHA, 4h GeLU MLP, dropout)."""
        return cls(hidden, heads, hidden, hidden, 4 * hidden, False, dropout)


def layer_activations(shape: LayerShape, s, b, t=1, sp=False, recompute="none", cp=1, fused=False):
    """Bytes of one transformer layer's stored activations on one device (arrays broadcast over s, b, t, cp)."""
    if recompute not in RECOMPUTE:
        raise ValueError(f"recompute: expected one of {', '.join(RECOMPUTE)}, got {recompute!r}")
    s, b, t, cp = (np.asarray(x, dtype=float) for x in (s, b, t, cp))
    h, a, f = shape.hidden, shape.heads, shape.ffn
    tokens = s / cp * b  # tokens this device holds per micro-batch
    if recompute == "full":
        return ACT_BYTES * tokens * h / np.where(sp, t, 1.0)
    mask = MASK_BYTES * h * 2 if shape.dropout else 0.0
    replicated = ACT_BYTES * (4 * h + shape.lora) + mask  # norms' inputs, qkv and mlp inputs, masks; LoRA's x A
    mlp = ACT_BYTES * (3 * f if shape.gated else 2 * f)  # gated: fused SwiGLU's input (gate, up) + the product
    # Q and K (q_width + kv_width), V (kv_width), the output projection's input (q_width): GPT 8h bytes
    split = ACT_BYTES * (shape.q_width + shape.kv_width + shape.kv_width + shape.q_width) + mlp
    core = 0.0 if fused or recompute == "selective" else (5.0 if shape.dropout else 2.0) * a * s
    per_token = np.where(sp, replicated / t, replicated) + split / t + core / t
    return tokens * per_token


def korthikanti_table2(s, b, h, a, t=1, sp=False, selective=False):
    """Table 2 of Korthikanti et al. as printed (bytes per layer), for tests and docs."""
    s, b, h, a, t = (np.asarray(x, dtype=float) for x in (s, b, h, a, t))
    if sp and selective:
        return s * b * h * 34 / t
    if sp:
        return s * b * h * (34 + 5 * a * s / h) / t
    if selective:
        return s * b * h * (10 + 24 / t)
    return s * b * h * (10 + 24 / t + 5 * a * s / (h * t))


def held_layers(schedule: str, layers, p, m, v=1):
    """Layer-activations the busiest (first) pipeline stage holds at its peak, in units of one layer's activations
    for one micro-batch (``layers`` = L, the model's transformer layers)."""
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule: expected one of {', '.join(SCHEDULES)}, got {schedule!r}")
    layers, p, m, v = (np.asarray(x, dtype=float) for x in (layers, p, m, v))
    per_stage = layers / p
    if schedule == "gpipe":
        return m * per_stage
    if schedule == "1f1b":
        return np.minimum(m, p) * per_stage
    return np.where(m >= p, layers * (1 + (p - 1) / (p * v)), np.minimum(m, p) * per_stage)


def bubble_fraction(schedule: str, p, m, v=1):
    """Idle share of the ideal pipeline time: (p - 1) / m for GPipe and 1F1B, (p - 1) / (v m) interleaved
    (Narayanan et al. 2021, Sec. 2.2.1-2.2.2)."""
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule: expected one of {', '.join(SCHEDULES)}, got {schedule!r}")
    p, m, v = (np.asarray(x, dtype=float) for x in (p, m, v))
    return (p - 1) / (m * (v if schedule == "interleaved" else 1.0))
