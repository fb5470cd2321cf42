"""The training step of a model on a system under each of many layouts: time, memory, MFU (docs/training.md).

Per layout, the system pass (:func:`explorer.core.parallel.system_pass.analyze_system`) gives one micro-batch's
**forward** on the busiest pipeline stage of one device (roofline, tiling and efficiency of the single-device
pass over the rows TP and EP leave it), the TP/EP collectives of that forward on the link they cross, and the
pipeline sends. From it, per micro-batch (f the forward compute, c its TP/EP communication)::

    forward    f + c + CP's K/V all-gathers
    backward   f (2 - share of frozen weighted rows) + c + CP's K/V-gradient reduce-scatters
    recompute  none: 0;  selective: the attention core's forward;  full: the whole forward again (with its c);
               with fused attention at least the attention core's forward (FlashAttention's backward redoes it)
    t_mb       forward + backward + recompute

Context parallelism runs the pass at s / cp tokens per sequence; causal attention over the whole sequence, split
evenly (the load-balanced chunks Llama 3 and Megatron-LM use), is cp times an s / cp sequence's, so the attention
core's time is scaled by cp. Ring attention's K/V exchange, per attention layer and micro-batch, is an all-gather
of the sequence's keys and values for the device's KV heads over the CP group (and a reduce-scatter of their
gradients in the backward), timed on the link the group's span crosses. The step::

    step = m t_mb + bubble + 2 v sends + exposed DP communication + optimizer
    bubble = (p - 1) / m x m t_mb (GPipe, 1F1B);  (p - 1) / (v m) x m t_mb (interleaved, v virtual stages)

**DP gradient reduction**, bf16 gradients of the device's trainable parameters over the ``dp`` ranks: ZeRO 0 an
all-reduce; ZeRO 1-2 a reduce-scatter of the gradients and an all-gather of the updated bf16 weights (the same
bytes as an all-reduce: Rajbhandari et al. 2020, Sec. 7.2.1); ZeRO 3 gathers the weights in every micro-batch's
forward and backward and reduce-scatters its gradients (1.5 x an all-reduce's bytes per micro-batch, Sec. 7.2.2;
DeepSpeed stage 3 with gradient accumulation). A group spanning the scale-up domain runs hierarchically (inside,
then across). With ``overlap`` the reduction hides behind the backward of the last micro-batch (ZeRO 0-2: gradients
are final only then) or, ZeRO 3, behind each micro-batch's compute; TP and EP communication then also hides behind
compute as far as the system pass's overlap allows, and CP's exchange behind the attention core. **Optimizer**:
Adam's 28 bytes per trainable parameter the device updates (1 / dp of them from ZeRO 1), at its memory bandwidth.

**Time model**: ``setup.time_model`` ``calibrated`` takes each row's calibrated time (the device's fitted curves,
:mod:`explorer.core.analysis.calibrated`) in the system pass and the attention/frozen shares; communication,
sends and the optimizer stay on the links' and memory's figures. A device without curves keeps the ideal times.

MFU = model FLOPs per step (forward + backward, :mod:`.work`) / (step x devices x dense bf16 peak); HFU counts the
recomputation too (Korthikanti et al. 2022, Sec. 6.3; Chowdhery et al. 2022, "PaLM", App. B).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from explorer.core.analysis.device_arrays import device_arrays
from explorer.core.analysis.evaluate import evaluate
from explorer.core.hardware.device import Device
from explorer.core.hardware.system import System
from explorer.core.parallel.collectives import collective_time, hierarchical_all_reduce
from explorer.core.parallel.layout import Layout
from explorer.core.parallel.system_pass import Options, analyze_system
from explorer.core.workload.layers import Context
from explorer.core.workload.model import LayerSpec, Model, build_table

from .layout import TrainingLayout, TrainingShape, microbatches
from .memory import (
    ACT_BYTES,
    WEIGHT_BYTES,
    LayerShape,
    bubble_fraction,
    held_layers,
    layer_activations,
    state_bytes,
)
from .work import OPTIMIZER_BYTES_MOVED, StepWork, step_work, time_shares

PRECISION = "bf16"
#: the parts of a step that :attr:`TrainingAnalysis.step_parts` gives, in its column order
STEP_PARTS = ("forward", "backward", "recompute", "pipeline bubble", "sends", "data parallel", "optimizer")


@dataclass(frozen=True)
class TrainingSetup:
    """What a training run is: sequences per step, tokens per sequence, the micro-batch (sequences), ZeRO stage,
    recomputation, LoRA rank (0: full training or fine-tuning), overlap of communication, attention kernel."""

    global_batch: int
    seq_len: int
    micro_batch: int = 1
    zero: int = 0
    recompute: str = "none"
    lora_rank: int = 0
    lora_targets: str = "q,k,v,o"
    overlap: bool = False
    attention: str = "fused"  # fused (FlashAttention) keeps no s x s matrix; naive keeps it
    dropout: bool = False  # dropout masks in the activations (GPT-3 style models; Llama has none)
    algorithm: str = "auto"
    time_model: str = "ideal"  # ideal | calibrated: the rows' compute times (calibrated where the device has curves)


def with_lora(model: Model, setup: TrainingSetup) -> Model:
    """The model with LoRA adapters of rank ``setup.lora_rank`` on every transformer block (unchanged at 0)."""
    if not setup.lora_rank:
        return model
    layers = tuple(s.with_params(lora_rank=setup.lora_rank, lora_targets=setup.lora_targets)
                   if s.kind == "transformer_block" else s for s in model.layers)
    return replace(model, layers=layers)


def _blocks(model: Model) -> list[tuple[int, LayerSpec]]:
    return [(i, s) for i, s in enumerate(model.layers) if s.kind == "transformer_block"]


def training_shape(model: Model, setup: TrainingSetup) -> TrainingShape:
    from explorer.core.parallel.system_pass import model_shape

    shape = model_shape(model, Context(batch=1, seq_len=setup.seq_len))
    return TrainingShape(shape.heads, shape.blocks, shape.experts, setup.seq_len, setup.global_batch,
                         setup.micro_batch)


def layer_shapes(model: Model, setup: TrainingSetup) -> tuple[tuple[LayerShape, int], ...]:
    """Each transformer block entry's sizes and repeat (a model may mix dense and MoE blocks). A mixture of experts
    keeps top_k + shared experts' activations per token; latent attention (MLA) is counted as multi-head attention
    of hidden / heads per head (an approximation)."""
    blocks = _blocks(model)
    if not blocks:
        raise ValueError("model: training is modelled for transformer models; this one has no transformer_block")
    table = build_table(model, Context(batch=1, seq_len=setup.seq_len))
    out = []
    for i, spec in blocks:
        p = spec.params
        hidden = int(table.status[i].in_shape[1])
        heads = int(p["heads"])
        head_dim = int(p.get("head_dim", 0) or hidden // heads)
        kv = int(p.get("kv_heads", 0) or heads)
        ffn = int(p.get("expert_ffn_hidden", 0) or p.get("ffn_hidden", 0) or 4 * hidden)
        if p.get("experts"):
            ffn *= int(p.get("top_k", 1) or 1) + int(p.get("shared_experts", 0) or 0)
        gated = p.get("ffn", "gelu") in ("swiglu", "geglu")
        targets = str(setup.lora_targets).replace(" ", "")
        n_targets = ((4 + (3 if gated else 2) if targets == "all" else len(targets.split(",")))
                     if setup.lora_rank else 0)
        out.append((LayerShape(hidden, heads, kv * head_dim, heads * head_dim, ffn, gated, setup.dropout,
                               lora=setup.lora_rank * n_targets), spec.repeat))
    return tuple(out)


def layer_shape(model: Model, setup: TrainingSetup) -> tuple[LayerShape, int]:
    """The first transformer block's sizes, and the number of transformer layers L."""
    shapes = layer_shapes(model, setup)
    return shapes[0][0], sum(r for _, r in shapes)


@dataclass(frozen=True, eq=False)
class TrainingAnalysis:
    """Arrays over layouts (K,), SI units (s, B, FLOP). Times per micro-batch unless named per step."""

    model: Model
    system: System
    device: Device
    setup: TrainingSetup
    layouts: tuple[TrainingLayout, ...]
    work: StepWork
    peak: float  # dense bf16 FLOP/s of one device
    microbatches: np.ndarray
    forward_time: np.ndarray
    backward_time: np.ndarray
    recompute_time: np.ndarray
    tp_comm_time: np.ndarray  # exposed TP/EP communication, forward + backward (+ recomputed forward)
    cp_comm_time: np.ndarray  # exposed K/V exchange, forward + backward (+ recomputed forward)
    microbatch_time: np.ndarray
    bubble_time: np.ndarray  # per step
    send_time: np.ndarray  # per step
    dp_time: np.ndarray  # per step, all of it
    dp_exposed: np.ndarray  # per step
    optimizer_time: np.ndarray  # per step
    step_time: np.ndarray
    weight_bytes: np.ndarray
    gradient_bytes: np.ndarray
    optimizer_bytes: np.ndarray
    activation_bytes: np.ndarray
    memory_bytes: np.ndarray
    capacity: float
    fits: np.ndarray
    tokens_per_s: np.ndarray
    mfu: np.ndarray
    hfu: np.ndarray

    def __len__(self) -> int:
        return len(self.layouts)

    @property
    def devices(self) -> int:
        return self.system.devices

    @property
    def model_flops_per_device(self) -> np.ndarray:
        """Achieved model FLOP/s per device (MFU x peak)."""
        return self.mfu * self.peak

    @property
    def step_parts(self) -> np.ndarray:
        """(K, 7) seconds of a step that add up to ``step_time``, in the order of :data:`STEP_PARTS` (forward and
        backward include their exposed communication)."""
        m = self.microbatches
        return np.column_stack([m * self.forward_time, m * self.backward_time, m * self.recompute_time,
                                self.bubble_time, self.send_time, self.dp_exposed, self.optimizer_time])


def _group_time(op: str, n, p, stride, system: System, algorithm: str) -> np.ndarray:
    """A collective over ``p`` ranks ``stride`` apart: on the scale-up link when their span fits in it, on the
    outer link when each rank sits in its own scale-up domain, else hierarchically (inside, then across)."""
    n, p, stride = (np.asarray(x, dtype=float) for x in (n, p, stride))
    if not system.domains:  # one device: no group to talk to
        return np.zeros(np.broadcast(n, p, stride).shape)
    inner = system.domains[0]
    outer = system.domains[-1]
    bw0, bw1 = system.bandwidth(inner), system.bandwidth(outer)
    a0, a1 = inner.alpha, outer.alpha
    fits = p * stride <= inner.size
    p_in = np.where(fits, p, np.where(stride >= inner.size, 1.0, np.maximum(1.0, inner.size // stride)))
    p_out = np.maximum(1.0, p / p_in)
    if op == "all_reduce":
        hier = hierarchical_all_reduce(n, p_in, p_out, bw0, bw1, a0, a1, algorithm)
        flat = collective_time(op, n, p, bw0, a0, algorithm)
    else:
        hier = collective_time(op, n, p_in, bw0, a0) + collective_time(op, n / p_in, p_out, bw1, a1)
        flat = collective_time(op, n, p, bw0, a0)
    return np.where(fits, flat, hier)


def analyze_training(model: Model, system: System, device: Device, layouts: Sequence[TrainingLayout],
                     setup: TrainingSetup) -> TrainingAnalysis:
    """Every layout of ``layouts`` (already valid: :func:`.layout.check`) for ``setup`` on ``system``."""
    layouts = tuple(layouts)
    model = with_lora(model, setup)
    lora = setup.lora_rank > 0
    shape = training_shape(model, setup)
    lshape, n_layers = layer_shape(model, setup)
    s, b = setup.seq_len, setup.micro_batch
    full = build_table(model, Context(batch=1, seq_len=s, attention=setup.attention, lm_head="all"))
    fused = setup.attention == "fused"
    work = step_work(full, setup.global_batch, setup.recompute, lora, fused)
    arrays = device_arrays([device], PRECISION)
    peak, hbm = float(arrays.peak[0]), float(arrays.bandwidth[0])
    k = len(layouts)
    col = {name: np.zeros(k) for name in ("f", "c", "attn", "frozen", "send", "w")}
    for cp in sorted({lay.cp for lay in layouts}):
        idx = [j for j, lay in enumerate(layouts) if lay.cp == cp]
        ctx = Context(batch=setup.global_batch * cp, seq_len=s // cp, phase="prefill", attention=setup.attention,
                      lm_head="all")
        inner = [Layout(lay.tp, lay.pp, lay.ep, lay.dp * cp, microbatches(lay, shape)) for lay in
                 (layouts[j] for j in idx)]
        r = analyze_system(model, system, device, inner, PRECISION, ctx,
                           options=Options(overlap=setup.overlap, algorithm=setup.algorithm,
                                           time_model=setup.time_model))
        micro_ctx = replace(ctx, batch=b)
        table = build_table(model, micro_ctx)
        single = evaluate(table, [device], PRECISION, micro_ctx, model)
        attn, frozen = time_shares(table, single.model_time(setup.time_model)[:, 0], lora)
        col["f"][idx] = r.compute_time * (1.0 + (cp - 1) * attn)
        col["attn"][idx] = r.compute_time * attn * cp
        col["frozen"][idx] = frozen
        col["c"][idx] = r.comm_time
        col["send"][idx] = r.send_time
        col["w"][idx] = r.weight_bytes
    tp, pp, dp, cp = (np.array([getattr(lay, a) for lay in layouts], dtype=float) for a in ("tp", "pp", "dp", "cp"))
    sp = np.array([lay.sp for lay in layouts], dtype=bool)
    v = np.array([lay.virtual if lay.schedule == "interleaved" else 1 for lay in layouts], dtype=float)
    m = np.array([microbatches(lay, shape) for lay in layouts], dtype=float)
    f, c = col["f"], col["c"]
    # -- context parallelism: ring attention's K/V exchange per attention layer and micro-batch
    head_dim = lshape.q_width / lshape.heads
    kv_local = np.maximum(1.0, np.floor(lshape.kv_width / head_dim / tp)) * head_dim  # KV heads fewer than tp: 1
    kv_bytes = b * s * 2.0 * kv_local * ACT_BYTES
    stage_layers = np.ceil(n_layers / pp)
    kv_fwd = stage_layers * _group_time("all_gather", kv_bytes, cp, tp, system, setup.algorithm)
    kv_bwd = stage_layers * _group_time("reduce_scatter", kv_bytes, cp, tp, system, setup.algorithm)
    if setup.overlap:
        kv_fwd, kv_bwd = np.fmax(kv_fwd - col["attn"], 0.0), np.fmax(kv_bwd - 2 * col["attn"], 0.0)
    forward = f + c + kv_fwd
    backward = f * (2.0 - col["frozen"]) + c + kv_bwd
    core = col["attn"] if fused else np.zeros(k)  # FlashAttention's backward recomputes the attention core
    recompute = {"none": core, "selective": col["attn"], "full": forward}[setup.recompute]
    t_mb = forward + backward + recompute
    sched = tuple(lay.schedule for lay in layouts)
    bubble = np.array([bubble_fraction(sc, p_, m_, v_) for sc, p_, m_, v_ in zip(sched, pp, m, v)]) * m * t_mb
    sends = 2.0 * v * col["send"]
    # -- model states and the data-parallel reduction
    params_dev = col["w"] / WEIGHT_BYTES
    if lora:  # adapters sit in the blocks and are replicated over TP (the sharding's 'replicate' role)
        trainable = np.minimum(work.trainable_params * np.ceil(n_layers / pp) / n_layers, params_dev)
    else:
        trainable = params_dev
    frozen_p = params_dev - trainable
    zero = setup.zero
    w_b, g_b, o_b = state_bytes(trainable, frozen_p, dp, zero)
    grads = 2.0 * trainable
    stride = tp * cp * pp
    if zero == 3:
        per_mb = (2.0 * _group_time("all_gather", WEIGHT_BYTES * params_dev, dp, stride, system, setup.algorithm)
                  + _group_time("reduce_scatter", grads, dp, stride, system, setup.algorithm))
        dp_time = m * per_mb
        dp_exposed = m * np.fmax(per_mb - (forward + backward), 0.0) if setup.overlap else dp_time
        blocks_params = sum(float(full.columns["params"][full.layer_index == i].sum()) for i, _ in _blocks(model))
        gathered = 2.0 * WEIGHT_BYTES * blocks_params / max(len(_blocks(model)), 1) / tp
    else:
        op = "all_reduce" if zero == 0 else "reduce_scatter"
        dp_time = _group_time(op, grads, dp, stride, system, setup.algorithm)
        if zero:
            dp_time = dp_time + _group_time("all_gather", grads, dp, stride, system, setup.algorithm)
        dp_exposed = np.fmax(dp_time - backward, 0.0) if setup.overlap else dp_time
        gathered = np.zeros(k)
    updated = trainable / (dp if zero >= 1 else 1.0)
    optimizer = OPTIMIZER_BYTES_MOVED * updated / hbm
    step = m * t_mb + bubble + sends + dp_exposed + optimizer
    # -- activations: the first stage holds the schedule's micro-batches, the last the logits too
    per_layer = sum(rep * layer_activations(shp, s, b, tp, sp, setup.recompute, cp, fused)
                    for shp, rep in layer_shapes(model, setup)) / n_layers  # the mean over the L layers
    first = np.array([float(held_layers(sc, n_layers, p_, m_, v_)) for sc, p_, m_, v_ in zip(sched, pp, m, v)])
    last = np.where(np.array([sc == "gpipe" for sc in sched]), m, 1.0) * n_layers / pp
    vocab = float(full.gemm[[n.endswith("lm_head") for n in full.names], 1].max(initial=0.0))
    logits = 4.0 * s / cp * b * vocab / tp  # fp32 logits for the loss, vocabulary-parallel
    act = np.where(pp > 1, np.fmax(first * per_layer, last * per_layer + logits), first * per_layer + logits)
    memory = w_b + g_b + o_b + gathered + act
    with np.errstate(invalid="ignore", divide="ignore"):
        mfu = work.model_flops / (step * system.devices * peak)
        hfu = work.hardware_flops / (step * system.devices * peak)
        tps = setup.global_batch * s / step
    return TrainingAnalysis(
        model=model, system=system, device=device, setup=setup, layouts=layouts, work=work, peak=peak,
        microbatches=m, forward_time=forward, backward_time=backward, recompute_time=recompute,
        tp_comm_time=c * (2.0 + (setup.recompute == "full")), cp_comm_time=kv_fwd * (1.0 + (setup.recompute == "full")) + kv_bwd,
        microbatch_time=t_mb,
        bubble_time=bubble, send_time=sends, dp_time=dp_time, dp_exposed=dp_exposed, optimizer_time=optimizer,
        step_time=step, weight_bytes=w_b + gathered, gradient_bytes=g_b, optimizer_bytes=o_b,
        activation_bytes=act, memory_bytes=memory, capacity=device.memory_capacity,
        fits=memory <= device.memory_capacity, tokens_per_s=tps, mfu=mfu, hfu=hfu)


def rank(r: TrainingAnalysis) -> np.ndarray:
    """Layouts ranked: those that fit first, then by step time (tokens/s on the same system)."""
    return np.lexsort((np.nan_to_num(r.step_time, nan=math.inf), ~r.fits))
