"""The system pass: a model on a system under each of many layouts, per device and per step.

For each layout (:mod:`.layout`) the pass shards the work table (:mod:`.shard`) for the layout's micro-batch,
analyses one device's rows with the single-device pass (roofline, tiling, efficiency: :func:`evaluate`), and adds:

* **communication**: each collective of :mod:`.shard` timed by :mod:`.collectives` on the innermost domain that
  holds its group (a group wider than the scale-up domain runs hierarchically: inside, then across); exposed in
  full unless ``overlap`` is on, then only what exceeds the stage's compute;
* **pipeline**: a stage holds ceil(B / pp) of the B repeated blocks plus the heavier end of the model (embedding or
  head); p2p sends of one micro-batch's activations between stages on the link the boundary crosses;
      stage = compute + exposed communication           (per micro-batch)
      prefill: step = (m + pp - 1) x stage + sends       (one pass: the pipeline fills and drains)
      decode:  step = max(m, pp) x stage + sends         (steps follow each other, so it never drains: with
                                                          m >= pp every stage is always busy)
      latency = pp x stage + sends                       (one micro-batch through every stage)
      bubble = step - m x stage - sends
* **memory per device**: the stage's weights, its KV cache for the replica's whole batch and the largest row's
  activations; ``offload`` streams what does not fit from host memory over the host link at every micro-batch
  pass, so a stage takes at least (excess bytes / host-link bandwidth per direction).

Throughput = batch / step (tokens/s in decode, sequences/s in prefill), per device = throughput / devices.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from explorer.core.analysis.evaluate import ModelAnalysis, evaluate
from explorer.core.analysis.tensor_bytes import formats_of
from explorer.core.formats import TensorFormats
from explorer.core.hardware.device import Device
from explorer.core.hardware.system import Domain, System
from explorer.core.workload.layers import Context
from explorer.core.workload.model import Model, build_table

from .collectives import BUS_FACTOR, collective_time, hierarchical_all_reduce
from .experts import imbalance
from .layout import Layout, ModelShape
from .shard import Comm, query_heads_of, shard_table


@dataclass(frozen=True)
class Options:
    overlap: bool = False  # communication hidden behind the stage's compute (off: every byte exposed)
    algorithm: str = "auto"  # all-reduce algorithm: ring | tree | auto
    skew: float = 0.0  # expert routing skew (0: uniform)
    offload: bool = False  # stream what does not fit from host memory


@dataclass(frozen=True, eq=False)
class SystemAnalysis:
    """Arrays over layouts (K,), SI units; ``level_bytes`` (K, domains): bytes one device sends per step on each."""

    model: Model
    system: System
    device: Device
    ctx: Context
    precision: str
    layouts: tuple[Layout, ...]
    compute_time: np.ndarray  # per stage and micro-batch: the device's rows (roofline, tiling, efficiency)
    comm_time: np.ndarray  # exposed, per stage and micro-batch
    send_time: np.ndarray  # pipeline p2p sends on the critical path, per step
    bubble_time: np.ndarray
    host_time: np.ndarray  # offloaded bytes over the host link, per stage and micro-batch
    stage_time: np.ndarray
    step_time: np.ndarray
    latency: np.ndarray
    throughput: np.ndarray
    throughput_per_device: np.ndarray
    throughput_unit: str
    weight_bytes: np.ndarray
    kv_bytes: np.ndarray
    activation_bytes: np.ndarray
    memory_bytes: np.ndarray
    capacity: float
    fits: np.ndarray
    imbalance: np.ndarray
    level_bytes: np.ndarray
    level_names: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.layouts)

    @property
    def comm_share(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return (self.comm_time * self.stage_count + self.send_time) / self.step_time

    @property
    def stage_count(self) -> np.ndarray:
        """Stage passes on a step's critical path (prefill m + pp - 1, decode max(m, pp))."""
        return (self.step_time - self.send_time) / self.stage_time


def model_shape(model: Model, ctx: Context) -> ModelShape:
    table = build_table(model, replace(ctx, batch=1))
    experts = max((int(s.params.get("experts", 0) or 0) for s in model.layers), default=0)
    blocks = sum(s.repeat for s in model.layers if s.repeat > 1)
    return ModelShape(heads=query_heads_of(table, 1), experts=experts, blocks=blocks, batch=ctx.batch)


def _top_k(model: Model) -> int:
    return max((int(s.params.get("top_k", 0) or 0) for s in model.layers), default=0)


def _comm_seconds(comm: Comm, nbytes: float, system: System, algorithm: str) -> tuple[float, Domain | None]:
    domain = system.domain_for(comm.group)
    inner = system.domains[0] if system.domains else None
    if domain is None:
        return math.nan, None
    bw, alpha = system.bandwidth(domain), domain.alpha
    if comm.op == "all_reduce" and inner is not None and domain is not inner and comm.group > inner.size:
        p_in = inner.size
        t = hierarchical_all_reduce(nbytes, p_in, comm.group // p_in, system.bandwidth(inner), bw, inner.alpha,
                                    alpha, algorithm)
        return float(t), domain
    return float(collective_time(comm.op, nbytes, comm.group, bw, alpha, algorithm)), domain


def _boundary_domain(system: System, stage: int, tp: int) -> Domain:
    """The link between stage ``stage - 1`` and ``stage`` (rank r sends to r + tp): inside the scale-up domain
    unless the boundary falls on its edge (replica 0's placement)."""
    inner = system.domains[0]
    crosses = tp >= inner.size or (stage * tp) % inner.size == 0
    return (system.domain_for(inner.size + 1) or inner) if crosses else inner


def analyze_system(model: Model, system: System, device: Device, layouts: Sequence[Layout],
                   precision: str = "fp16", ctx: Context = Context(), formats: TensorFormats | None = None,
                   options: Options = Options()) -> SystemAnalysis:
    """Every layout of ``layouts`` (already valid: :func:`.layout.check`) of ``model`` on ``system``."""
    layouts = tuple(layouts)
    fm = formats or TensorFormats.of(precision)
    act_bpe = fm.activations.bytes_per_element
    block_layers = {i for i, s in enumerate(model.layers) if s.repeat > 1}
    n_blocks = sum(model.layers[i].repeat for i in block_layers)
    first_block, last_block = (min(block_layers), max(block_layers)) if block_layers else (len(model.layers), -1)
    top_k = _top_k(model)
    decode = ctx.phase == "decode"
    level_index = {id(d): j for j, d in enumerate(system.domains)}
    cache: dict[tuple, tuple[ModelAnalysis, tuple[Comm, ...], float]] = {}
    cols = {k: [] for k in ("compute", "comm", "send", "host", "w", "kv", "act", "imb")}
    level_bytes = np.zeros((len(layouts), len(system.domains)))
    for k, lay in enumerate(layouts):
        micro = ctx.batch // (lay.dp * lay.microbatches)
        key = (lay.tp, lay.ep, micro)
        if key not in cache:
            mctx = replace(ctx, batch=micro)
            table = build_table(model, mctx)
            tokens = micro * (1 if decode else (mctx.seq_len or model.default_seq_len() or 1))
            imb = imbalance(tokens, top_k, lay.ep, options.skew) if lay.ep > 1 else 1.0
            sharded, comms = shard_table(table, lay.tp, lay.ep, micro, imb)
            cache[key] = (evaluate(sharded, [device], precision, mctx, model, formats), comms, imb)
        a, comms, imb = cache[key]
        count, time = a.count, a.time[:, 0]
        li = a.table.layer_index
        in_block = np.isin(li, list(block_layers))
        share = math.ceil(n_blocks / lay.pp) / n_blocks if n_blocks else 1.0
        per_stage = np.where(in_block, count * share, count)
        first, last = li < first_block, li > last_block
        if lay.pp > 1:  # the busiest stage: its blocks plus the heavier end of the model
            heavier = first if float(count[first] @ time[first]) >= float(count[last] @ time[last]) else last
            per_stage = np.where(in_block | heavier, per_stage, 0.0)
        compute = float(per_stage @ time)
        comm = 0.0
        for c in comms:
            seconds, domain = _comm_seconds(c, c.elements * act_bpe, system, options.algorithm)
            comm += per_stage[c.row] * seconds
            if domain is not None:
                level_bytes[k, level_index[id(domain)]] += (per_stage[c.row] * lay.microbatches * c.elements
                                                            * act_bpe * float(BUS_FACTOR[c.op](c.group)))
        exposed = max(0.0, comm - compute) if options.overlap else comm
        send = 0.0
        if lay.pp > 1:
            out_shape = a.table.status[last_block].out_shape if block_layers else ()
            nbytes = micro * float(np.prod(out_shape)) * act_bpe
            for s in range(1, lay.pp):
                domain = _boundary_domain(system, s, lay.tp)
                send += float(collective_time("send_recv", nbytes, 2, system.bandwidth(domain), domain.alpha))
                level_bytes[k, level_index[id(domain)]] += nbytes * lay.microbatches
        fmt = formats_of(a.devices)
        c = a.table.columns
        weights = float(fmt.weights.nbytes(c["params"] * per_stage).sum())
        kv = float(fmt.kv_cache.nbytes(c["kv_cache_elems"] * per_stage).sum()) * lay.microbatches
        act = a.totals.activation_peak_bytes
        host = 0.0
        excess = weights + kv + act - device.memory_capacity
        if options.offload and excess > 0:
            host = excess / system.host_bandwidth() if system.host_link else math.nan
        for name, v in zip(cols, (compute, exposed, send, host, weights, kv, act, imb)):
            cols[name].append(v)
    arr = {k: np.array(v, dtype=float) for k, v in cols.items()}
    pp = np.array([lay.pp for lay in layouts], dtype=float)
    m = np.array([lay.microbatches for lay in layouts], dtype=float)
    stage = np.fmax(arr["compute"] + arr["comm"], arr["host"])
    passes = np.maximum(m, pp) if decode else m + pp - 1
    step = passes * stage + arr["send"]
    memory = arr["w"] + arr["kv"] + arr["act"]
    with np.errstate(invalid="ignore", divide="ignore"):
        throughput = ctx.batch / step
    return SystemAnalysis(
        model=model, system=system, device=device, ctx=ctx, precision=precision, layouts=layouts,
        compute_time=arr["compute"], comm_time=arr["comm"], send_time=arr["send"], bubble_time=(passes - m) * stage,
        host_time=arr["host"], stage_time=stage, step_time=step, latency=pp * stage + arr["send"],
        throughput=throughput, throughput_per_device=throughput / system.devices,
        throughput_unit="tokens/s" if decode else "sequences/s", weight_bytes=arr["w"], kv_bytes=arr["kv"],
        activation_bytes=arr["act"], memory_bytes=memory, capacity=device.memory_capacity,
        fits=(memory <= device.memory_capacity) | (options.offload & np.isfinite(arr["host"]) & (arr["host"] > 0)),
        imbalance=arr["imb"], level_bytes=level_bytes, level_names=tuple(d.name for d in system.domains))
