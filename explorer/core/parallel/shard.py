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

import functools
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
WORK = ("macs", "other_flops")
WEIGHTS = ("params", "active_params", "weight_elems")


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


def kv_heads_of(table: LayerTable, batch: int) -> int:
    """The smallest KV-head count of the model's attention rows (1 for latent attention; 0 without attention)."""
    heads = [a.streams // max(batch, 1) for a in table.attention if a is not None]
    return max(1, min(heads)) if heads else 0


def query_heads_of(table: LayerTable, batch: int) -> int:
    heads = [a.streams // max(batch, 1) * a.group for a in table.attention if a is not None]
    return min(heads) if heads else 0


@dataclass(frozen=True, eq=False)
class Comms:
    """The collectives of K shardings, one entry per (sharding, row, collective): per execution of the row."""

    key: np.ndarray  # (E,) index of the sharding
    row: np.ndarray  # (E,) row of the work table
    op: tuple[str, ...]  # (E,) all_reduce | all_gather | all_to_all
    group: np.ndarray  # (E,) ranks taking part
    elements: np.ndarray  # (E,) n of :mod:`.collectives`, in activation elements

    def __len__(self) -> int:
        return len(self.key)


@functools.lru_cache(maxsize=256)
def _roles(table: LayerTable) -> np.ndarray:
    return roles(table)


def shard_many(table: LayerTable, tp, ep, batch: int = 1, imbalance=None) -> tuple[LayerTable, Comms]:
    """K shardings of one work table at once: degrees ``tp`` (K,), ``ep`` (K,) (ep divides tp), the busiest expert
    group's ``imbalance`` (K,). Returns the K device tables stacked (K x L rows, sharding k in rows k L .. k L + L)
    and their collectives. No loop over rows: each role scales whole columns."""
    tp = np.asarray(tp, dtype=float).reshape(-1)
    ep = np.asarray(ep, dtype=float).reshape(-1)
    load = np.where(ep > 1, np.ones_like(tp) if imbalance is None else np.asarray(imbalance, dtype=float), 1.0)
    n_keys, n_rows = len(tp), len(table)
    role = _roles(table)
    is_ = {r: role == r for r in ROLES}
    kv_heads = kv_heads_of(table, batch)
    kv_div = np.maximum(1.0, np.minimum(tp, kv_heads or tp))
    etp = tp / ep
    ones = np.ones((n_keys, n_rows))
    tpk = tp[:, None]
    divisor = {name: ones.copy() for name in table.columns}
    for name in WORK + WEIGHTS + ("output_elems",):
        divisor[name] = np.where(is_["column"], tpk, divisor[name])
    for name in WORK + WEIGHTS + ("input_elems",):
        divisor[name] = np.where(is_["row"], tpk, divisor[name])
    for name in WORK + ("input_elems", "output_elems"):
        divisor[name] = np.where(is_["heads"] | is_["sharded"], tpk, divisor[name])
        divisor[name] = np.where(is_["expert"], tpk / load[:, None], divisor[name])
    for name in ("kv_read_elems", "kv_cache_elems"):
        divisor[name] = np.where(is_["heads"], kv_div[:, None], divisor[name])
    for name in WEIGHTS:
        divisor[name] = np.where(is_["vocab"] | is_["expert"], tpk, divisor[name])
    columns = {name: (table.columns[name][None, :] / divisor[name]).reshape(-1) for name in table.columns}
    columns["count"] = np.tile(table.columns["count"], n_keys)
    # -- GEMM shapes: N / tp for column rows, K / tp for row rows, heads / tp; experts: ep groups, etp splits
    gemm = np.repeat(table.gemm[None, :, :], n_keys, axis=0)
    gcount = np.repeat(table.gemm_count[None, :], n_keys, axis=0)
    moe = np.array([k == "moe_experts" for k in table.kinds])
    down = np.array([n.endswith("experts_down") for n in table.names])
    gemm[:, :, 1] = np.where(is_["column"], np.ceil(gemm[:, :, 1] / tpk), gemm[:, :, 1])
    gemm[:, :, 2] = np.where(is_["row"], np.ceil(gemm[:, :, 2] / tpk), gemm[:, :, 2])
    gcount = np.where(is_["heads"], np.ceil(gcount / tpk), gcount)
    gcount = np.where(moe, np.maximum(1.0, np.ceil(gcount / ep[:, None])), gcount)
    gemm[:, :, 0] = np.where(moe, np.ceil(gemm[:, :, 0] * load[:, None]), gemm[:, :, 0])
    gemm[:, :, 1] = np.where(moe & ~down, np.ceil(gemm[:, :, 1] / etp[:, None]), gemm[:, :, 1])
    gemm[:, :, 2] = np.where(moe & down, np.ceil(gemm[:, :, 2] / etp[:, None]), gemm[:, :, 2])
    attention = []
    for k in range(n_keys):
        for i, a in enumerate(table.attention):
            if a is not None and is_["heads"][i]:
                d = int(kv_div[k])
                a = replace(a, streams=max(1, a.streams // d), group=max(1, a.group * d // int(tp[k])))
            attention.append(a)
    for a in columns.values():
        a.setflags(write=False)
    stacked = replace(table, names=table.names * n_keys, kinds=table.kinds * n_keys,
                      layer_index=np.tile(table.layer_index, n_keys), gemm=gemm.reshape(-1, 3),
                      gemm_count=gcount.reshape(-1), columns=columns, attention=tuple(attention),
                      status=table.status, out_shapes=table.out_shapes * n_keys)
    return stacked, _comms(table, is_, tp, ep, etp, load)


def _comms(table: LayerTable, is_: dict, tp, ep, etp, load) -> Comms:
    out_full = table.columns["output_elems"]
    keys, rows, ops, groups, elements = [], [], [], [], []

    def add(rows_: np.ndarray, op: str, group: np.ndarray, elems: np.ndarray) -> None:
        k, r = np.nonzero((group[:, None] > 1) & np.isin(np.arange(len(table)), rows_)[None, :])
        keys.append(k)
        rows.append(r)
        ops.extend([op] * len(k))
        groups.append(group[k])
        elements.append(elems[k, r] if elems.ndim == 2 else elems[r])

    add(np.flatnonzero(is_["row"] | is_["vocab"]), "all_reduce", tp, out_full)
    add(np.flatnonzero(np.array([n.rsplit(".", 1)[-1] == "lm_head" for n in table.names]) & is_["column"]),
        "all_gather", tp, out_full)
    combine = np.array([k == "moe_combine" for k in table.kinds])
    if combine.any():
        shared = np.array([_has_shared(table, i) for i in range(len(table))])
        routed = table.columns["input_elems"] - np.where(shared, out_full, 0.0)
        per_rank = routed[None, :] / ep[:, None] * load[:, None]  # each sends its 1/ep, the busiest gets load x
        ep_only = np.where(ep > 1, ep, 1.0)
        add(np.flatnonzero(combine), "all_to_all", ep_only, per_rank)  # dispatch
        add(np.flatnonzero(combine), "all_to_all", ep_only, per_rank)  # combine
        add(np.flatnonzero(combine), "all_reduce", etp, out_full)
    cat = (lambda parts, dtype: np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype))
    return Comms(cat(keys, int), cat(rows, int), tuple(ops), cat(groups, float), cat(elements, float))


def _has_shared(table: LayerTable, combine_row: int) -> bool:
    prefix = table.names[combine_row].rsplit(".", 1)[0]
    return any(n.startswith(prefix + ".shared_") for n in table.names)
