"""Tensor and expert parallelism shard the work table: one device's rows, and the collectives they need.

Each row of the work table gets a **role** from its operator kind and the last part of its name (the names the
layer kinds give: ``layers.attn.qkv``, ``layers.ffn_down``...). Megatron-LM's placement (Shoeybi et al., 2019,
arXiv:1909.08053, section 3) is the reference:

==========  ==========================================================  ===========================================
role        rows                                                        on each of ``tp`` devices
==========  ==========================================================  ===========================================
column      qkv, q/k/v projections, ffn_gate/up, shared_gate/up,       weights, work, outputs / tp (GEMM N / tp)
            lm_head, MLA q_up, k_up, v_up
row         attention out, ffn_down, shared_down                       weights, work, inputs / tp (GEMM K / tp);
                                                                        an all-reduce of the full output follows
heads       attention scores, softmax, context                         work / tp; K/V / min(tp, kv_heads): KV heads
                                                                        fewer than tp are replicated
sharded     activations and products between a column and a row row   everything / tp
vocab       embedding (vocabulary-parallel)                            table / tp; an all-reduce of the output
expert      routed experts (``moe_experts``, experts_act, experts_mul)  EP: experts / ep, each split tp / ep ways;
                                                                        work x the busiest group's imbalance
replicate   norms, residual adds, the router, the MoE combine, LoRA     the whole row on every device
==========  ==========================================================  ===========================================

The lm_head's logits are all-gathered; with expert parallelism (ep > 1) the routed tokens go out and come back in
two all-to-alls (dispatch and combine) among the ep devices; with ep = 1 the experts are split like a dense
feed-forward and their partial sums are all-reduced after the combine. Rows of other models (convolutions,
imported graphs) are replicated: tensor parallelism applies to transformer blocks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from explorer.core.workload.model import LayerTable

COLUMN = {"qkv", "q_proj", "k_proj", "v_proj", "ffn_gate", "ffn_up", "shared_gate", "shared_up", "lm_head",
          "q_up", "k_up", "v_up"}
ROW = {"out", "ffn_down", "shared_down"}
HEADS_KINDS = {"attention_scores", "attention_context"}
SHARDED = {"ffn_act", "ffn_mul", "shared_act", "shared_mul"}
EXPERT_PARTS = {"experts_act", "experts_mul"}
ROLES = ("column", "row", "heads", "sharded", "vocab", "expert", "replicate")


def role_of(name: str, kind: str) -> str:
    last = name.rsplit(".", 1)[-1]
    if kind == "moe_experts" or last in EXPERT_PARTS:
        return "expert"
    if kind in HEADS_KINDS or (kind == "softmax" and last == "softmax" and ".attn" in name):
        return "heads"
    if kind == "embedding":
        return "vocab"
    if kind == "dense" and last in COLUMN:
        return "column"
    if kind == "dense" and last in ROW:
        return "row"
    if last in SHARDED:
        return "sharded"
    return "replicate"


def roles(table: LayerTable) -> np.ndarray:
    return np.array([role_of(n, k) for n, k in zip(table.names, table.kinds)], dtype=object)


@dataclass(frozen=True)
class Comm:
    """One collective per execution of a row (times ``count``): its operation, group and full message in elements."""

    row: int
    op: str  # all_reduce | all_gather | all_to_all
    group: int  # ranks taking part
    elements: float  # n of :mod:`.collectives`, in activation elements


def kv_heads_of(table: LayerTable, batch: int) -> int:
    """The smallest KV-head count of the model's attention rows (1 for latent attention; 0 without attention)."""
    heads = [a.streams // max(batch, 1) for a in table.attention if a is not None]
    return max(1, min(heads)) if heads else 0


def query_heads_of(table: LayerTable, batch: int) -> int:
    heads = [a.streams // max(batch, 1) * a.group for a in table.attention if a is not None]
    return min(heads) if heads else 0


def shard_table(table: LayerTable, tp: int, ep: int = 1, batch: int = 1,
                imbalance: float = 1.0) -> tuple[LayerTable, tuple[Comm, ...]]:
    """One device's work table under tensor degree ``tp`` and expert degree ``ep`` (ep divides tp), and the
    collectives each row adds. ``imbalance``: the busiest expert group's load over the mean (:mod:`.experts`)."""
    if tp == 1 and ep == 1:
        return table, ()
    role = roles(table)
    c = {k: v.copy() for k, v in table.columns.items()}
    gemm, gcount = table.gemm.copy(), table.gemm_count.copy()
    attention = list(table.attention)
    kv_div = max(1, min(tp, kv_heads_of(table, batch) or tp))
    etp = tp // ep  # each expert's tensor split
    work = ("macs", "other_flops")
    weights = ("params", "active_params", "weight_elems")
    comms: list[Comm] = []

    def scale(rows: np.ndarray, names, by: float) -> None:
        for name in names:
            c[name][rows] = c[name][rows] / by

    col, row_, heads = role == "column", role == "row", role == "heads"
    sharded, vocab, expert = role == "sharded", role == "vocab", role == "expert"
    scale(col, work + weights + ("output_elems",), tp)
    gemm[col, 1] = np.ceil(gemm[col, 1] / tp)
    scale(row_, work + weights + ("input_elems",), tp)
    gemm[row_, 2] = np.ceil(gemm[row_, 2] / tp)
    scale(heads, work + ("input_elems", "output_elems"), tp)
    scale(heads, ("kv_read_elems", "kv_cache_elems"), kv_div)
    gcount[heads] = np.ceil(gcount[heads] / tp)
    for i in np.flatnonzero(heads):
        a = attention[i]
        if a is not None:
            attention[i] = replace(a, streams=max(1, a.streams // kv_div), group=max(1, a.group * kv_div // tp))
    scale(sharded, work + ("input_elems", "output_elems"), tp)
    scale(vocab, weights, tp)
    out_full = table.columns["output_elems"]
    for i in np.flatnonzero(row_):
        comms.append(Comm(int(i), "all_reduce", tp, float(out_full[i])))
    for i in np.flatnonzero(vocab):
        comms.append(Comm(int(i), "all_reduce", tp, float(out_full[i])))
    for i in np.flatnonzero(col):
        if table.names[i].rsplit(".", 1)[-1] == "lm_head":
            comms.append(Comm(int(i), "all_gather", tp, float(out_full[i])))
    # -- experts: split over ep groups (each expert tp / ep ways); the busiest group sets the pace
    if expert.any():
        load = imbalance if ep > 1 else 1.0
        scale(expert, work + ("input_elems", "output_elems"), tp / load)
        scale(expert, weights, tp)
        moe = np.flatnonzero(expert & np.array([k == "moe_experts" for k in table.kinds]))
        for i in moe:
            part = table.names[i].rsplit("_", 1)[-1]
            gcount[i] = max(1.0, math.ceil(gcount[i] / ep))
            gemm[i, 0] = math.ceil(gemm[i, 0] * load)
            if part in ("gate", "up"):
                gemm[i, 1] = math.ceil(gemm[i, 1] / etp)
            else:
                gemm[i, 2] = math.ceil(gemm[i, 2] / etp)
        combine = [i for i, n in enumerate(table.names) if n.endswith(".combine") and table.kinds[i] == "moe_combine"]
        for i in combine:
            if ep > 1:  # dispatch the routed tokens and bring their outputs back: two all-to-alls among ep devices;
                # each device sends its 1/ep share of the (token, expert) vectors, the busiest receives ``load`` x
                routed = float(table.columns["input_elems"][i] - (out_full[i] if _has_shared(table, i) else 0.0))
                comms.append(Comm(int(i), "all_to_all", ep, routed / ep * load))
                comms.append(Comm(int(i), "all_to_all", ep, routed / ep * load))
            if etp > 1:
                comms.append(Comm(int(i), "all_reduce", etp, float(out_full[i])))
    for a in c.values():
        a.setflags(write=False)
    return replace(table, columns=c, gemm=gemm, gemm_count=gcount, attention=tuple(attention)), tuple(comms)


def _has_shared(table: LayerTable, combine_row: int) -> bool:
    prefix = table.names[combine_row].rsplit(".", 1)[0]
    return any(n.startswith(prefix + ".shared_") for n in table.names)
