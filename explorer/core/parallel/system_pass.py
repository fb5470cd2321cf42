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
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from explorer.core.analysis.evaluate import MODELS, evaluate
from explorer.core.analysis.tensor_bytes import formats_of
from explorer.core.analysis.time_source import device_time_sources
from explorer.core.analysis.time_model import as_time_model
from explorer.core.formats import TensorFormats
from explorer.core.hardware.device import Device
from explorer.core.hardware.system import System
from explorer.core.workload.layers import Context
from explorer.core.workload.model import LayerTable, Model, build_table

from .collectives import BUS_FACTOR, collective_time, hierarchical_all_reduce, join
from .experts import imbalance
from .layout import Layout, ModelShape
from .shard import Comms, query_heads_of, shard_many

#: the parts of a step that :attr:`SystemAnalysis.step_parts` gives, in its column order
STEP_PARTS = ("compute", "communication", "pipeline bubble", "sends", "host offload")
#: the element size of the bytes collectives and pipeline sends move (docs/systems.md, "Element size"):
#: engine: the activation format but at least 16 bits (TensorRT-LLM's and vLLM's default all-reduce runs in the
#: model's fp16/bf16 even with fp8 weights or activations); activations: the activation format as it is;
#: fp8: 32/31 B per element (TensorRT-LLM's opt-in Low-Precision-AllReduce: FP8 e4m3 with one scale per 496
#: elements, 16 B of every 512)
COLLECTIVE_FORMATS = ("engine", "activations", "fp8")


def collective_element_bytes(formats: TensorFormats, setting: str = "engine") -> float:
    """Bytes per element of what collectives and sends move under ``setting`` (:data:`COLLECTIVE_FORMATS`)."""
    act = formats.activations.bytes_per_element
    if setting == "engine":
        return max(act, 2.0)
    if setting == "activations":
        return act
    if setting == "fp8":
        return 32.0 / 31.0
    raise ValueError(f"collective_format: expected one of {', '.join(COLLECTIVE_FORMATS)}, got {setting!r}")


@dataclass(frozen=True)
class Options:
    overlap: bool = False  # communication hidden behind the stage's compute (off: every byte exposed)
    algorithm: str = "auto"  # all-reduce algorithm: ring | tree | auto
    skew: float = 0.0  # expert routing skew (0: uniform)
    offload: bool = False  # stream what does not fit from host memory
    collective_format: str = "engine"  # element size of collectives and sends: one of COLLECTIVE_FORMATS
    time_model: str = "ideal"  # ideal | calibrated: the device's calibrated kernel times and the system's fitted
    #                            links (System.for_time_model) where stored, the ideal ones elsewhere


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
    memory_names: tuple[str, ...] = ()  # the device's memory levels (off-chip first), for the bandwidth ladder
    memory_traffic: np.ndarray | None = None  # (K, levels): bytes one device moves at each per step
    device_energy: np.ndarray | None = None  # (K,) J one device spends per step on chip (MACs + memory levels)
    host_bytes: np.ndarray | None = None  # (K,) bytes one device streams over the host link per step (offload)
    collective_bytes: float = math.nan  # bytes per element of collectives and sends (Options.collective_format)
    time_model: str = "ideal"  # the time model of every time above (Options.time_model)
    calibrated_links: tuple[str, ...] = ()  # the domains whose fitted link the times used (calibrated model)
    kernel_source: str = "spec"  # the device's kernel times: spec | partly calibrated | calibrated (.time_source)

    def __len__(self) -> int:
        return len(self.layouts)

    @property
    def comm_share(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return (self.comm_time * self.stage_count + self.send_time) / self.step_time

    @property
    def step_parts(self) -> np.ndarray:
        """(K, 5) seconds of one step that add up to ``step_time``, in the order of :data:`STEP_PARTS`: m x
        compute, m x exposed communication, the pipeline bubble, the pipeline sends, and m x the host-link time
        beyond compute and communication (a stage waits for whichever is longer)."""
        m = np.array([lay.microbatches for lay in self.layouts], dtype=float)
        busy = self.compute_time + self.comm_time
        host = np.fmax(self.stage_time - busy, 0.0)
        return np.column_stack([m * self.compute_time, m * self.comm_time, self.bubble_time, self.send_time,
                                m * host])

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


def _comm_seconds(comms: Comms, act_bpe: float, system: System, algorithm: str) -> tuple[np.ndarray, np.ndarray]:
    """Seconds of each collective on the innermost domain holding its group (hierarchical across domains when an
    all-reduce outgrows the scale-up domain), and that domain's index (-1: the system is too small)."""
    nbytes = comms.elements * act_bpe
    level = np.array([_level(system, g) for g in comms.group], dtype=int)
    bw = np.array([system.bandwidth(system.domains[j]) if j >= 0 else math.nan for j in level])
    alpha = np.array([system.domains[j].alpha if j >= 0 else math.nan for j in level])
    sharp = np.array([system.domains[j].sharpness if j >= 0 else 1.0 for j in level])
    seconds = np.full(len(comms), math.nan)
    ops = np.array(comms.op, dtype=object)
    for op in set(comms.op):
        sel = ops == op
        seconds[sel] = collective_time(op, nbytes[sel], comms.group[sel], bw[sel], alpha[sel], algorithm,
                                       sharp[sel])
    inner = system.domains[0] if system.domains else None
    wide = (ops == "all_reduce") & (level > 0) & (comms.group > (inner.size if inner else 0))
    if wide.any():
        p_in = inner.size
        seconds[wide] = hierarchical_all_reduce(nbytes[wide], p_in, comms.group[wide] // p_in,
                                                system.bandwidth(inner), bw[wide], inner.alpha, alpha[wide], algorithm,
                                                inner.sharpness, sharp[wide])
    return seconds, level


def _level(system: System, group: float) -> int:
    for j, domain in enumerate(system.domains):
        if group <= domain.size:
            return j
    return -1


def _concat(tables: list[LayerTable]) -> LayerTable:
    """Stacked device tables of several micro-batches as one table (rows one after the other)."""
    if len(tables) == 1:
        return tables[0]
    first = tables[0]
    return replace(first, names=sum((t.names for t in tables), ()), kinds=sum((t.kinds for t in tables), ()),
                   layer_index=np.concatenate([t.layer_index for t in tables]),
                   gemm=np.concatenate([t.gemm for t in tables]),
                   gemm_count=np.concatenate([t.gemm_count for t in tables]),
                   columns={k: np.concatenate([t.columns[k] for t in tables]) for k in first.columns},
                   attention=sum((t.attention for t in tables), ()),
                   out_shapes=sum((t.out_shapes for t in tables), ()))


@dataclass(frozen=True)
class _Slice:
    time: np.ndarray
    level_traffic: np.ndarray
    energy: np.ndarray
    columns: dict


def _rows(a, start: int, n: int, time_model: str = "ideal") -> _Slice:
    s = slice(start, start + n)
    return _Slice(a.model_time(time_model)[s], a.level_traffic[s], a.energy[s], {k: v[s] for k, v in a.table.columns.items()})


def _boundary_level(system: System, stage: int, tp: int) -> int:
    """The domain between stage ``stage - 1`` and ``stage`` (rank r sends to r + tp): inside the scale-up domain
    unless the boundary falls on its edge (replica 0's placement)."""
    inner = system.domains[0]
    crosses = tp >= inner.size or (stage * tp) % inner.size == 0
    return max(0, _level(system, inner.size + 1)) if crosses else 0


def analyze_system(model: Model, system: System, device: Device, layouts: Sequence[Layout],
                   precision: str = "fp16", ctx: Context = Context(), formats: TensorFormats | None = None,
                   options: Options = Options()) -> SystemAnalysis:
    """Every layout of ``layouts`` (already valid: :func:`.layout.check`) of ``model`` on ``system``."""
    layouts = tuple(layouts)
    if options.time_model not in MODELS:
        raise ValueError(f"time_model: expected one of {', '.join(MODELS)}, got {options.time_model!r}")
    stated, system = system, system.for_time_model(options.time_model)
    fm = formats or TensorFormats.of(precision)
    act_bpe = collective_element_bytes(fm, options.collective_format)  # collectives' and sends' element size
    block_layers = {i for i, s in enumerate(model.layers) if s.repeat > 1}
    n_blocks = sum(model.layers[i].repeat for i in block_layers)
    first_block, last_block = (min(block_layers), max(block_layers)) if block_layers else (len(model.layers), -1)
    top_k = _top_k(model)
    decode = ctx.phase == "decode"
    cols = {k: np.zeros(len(layouts)) for k in ("compute", "comm", "send", "host", "w", "kv", "act", "imb", "energy",
                                                "host_bytes")}
    level_bytes = np.zeros((len(layouts), len(system.domains)))
    bandwidths = [system.bandwidth(d) for d in system.domains]
    sends = [0.0 if math.isnan(d.alpha) else d.alpha for d in system.domains]
    micros = {}
    for j, lay in enumerate(layouts):
        micros.setdefault(ctx.batch // (lay.dp * lay.microbatches), []).append(j)
    prepared = []  # per micro-batch: (table, keys, imbalances, its stacked device tables, their collectives)
    for micro, members in micros.items():
        table = build_table(model, replace(ctx, batch=micro))
        tokens = micro * (1 if decode else (ctx.seq_len or model.default_seq_len() or 1))
        keys = sorted({(layouts[j].tp, layouts[j].ep) for j in members})
        imb = np.array([imbalance(tokens, top_k, e, options.skew) if e > 1 else 1.0 for _, e in keys])
        stacked, comms = shard_many(table, [t for t, _ in keys], [e for _, e in keys], micro, imb)
        prepared.append((micro, members, table, keys, imb, stacked, comms))
    # one single-device pass over every micro-batch's device tables together
    whole = as_time_model(evaluate(_concat([p[5] for p in prepared]), [device], precision, ctx, model, formats),
                          options.time_model)
    memory_names = whole.devices.level_names[0]
    memory_traffic = np.zeros((len(layouts), whole.level_traffic.shape[2]))
    start = 0
    for micro, members, table, keys, imb, stacked, comms in prepared:
        a = _rows(whole, start, len(stacked), options.time_model)
        start += len(stacked)
        n_rows = len(table)
        time = a.time[:, 0].reshape(len(keys), n_rows)
        traffic = a.level_traffic[:, 0, :].reshape(len(keys), n_rows, -1)
        energy = a.energy[:, 0].reshape(len(keys), n_rows)
        c = a.columns
        fmt = formats_of(whole.devices)
        w_rows = fmt.weights.nbytes(c["params"]).reshape(len(keys), n_rows)
        kv_rows = fmt.kv_cache.nbytes(c["kv_cache_elems"]).reshape(len(keys), n_rows)
        peak = np.max((c["input_elems"] + c["output_elems"]).reshape(len(keys), n_rows), axis=1, initial=0.0)
        seconds, level = _comm_seconds(comms, act_bpe, system, options.algorithm)
        bus = np.array([float(BUS_FACTOR[op](g)) for op, g in zip(comms.op, comms.group)])
        li, count = table.layer_index, table.columns["count"]
        in_block = np.isin(li, list(block_layers))
        first, last = li < first_block, li > last_block
        out_elems = micro * float(np.prod(table.status[last_block].out_shape)) if block_layers else 0.0
        for j in members:
            lay = layouts[j]
            k = keys.index((lay.tp, lay.ep))
            share = math.ceil(n_blocks / lay.pp) / n_blocks if n_blocks else 1.0
            per_stage = np.where(in_block, count * share, count)
            if lay.pp > 1:  # the busiest stage: its blocks plus the heavier end of the model
                heavier = first if count[first] @ time[k, first] >= count[last] @ time[k, last] else last
                per_stage = np.where(in_block | heavier, per_stage, 0.0)
            cols["compute"][j] = per_stage @ time[k]
            memory_traffic[j] = (per_stage @ traffic[k]) * lay.microbatches  # each micro-batch once per stage
            cols["energy"][j] = (per_stage @ energy[k]) * lay.microbatches
            mine = comms.key == k
            runs = per_stage[comms.row[mine]]
            comm = float(runs @ np.nan_to_num(seconds[mine], nan=math.inf)) if mine.any() else 0.0
            cols["comm"][j] = max(0.0, comm - cols["compute"][j]) if options.overlap else comm
            np.add.at(level_bytes[j], level[mine][level[mine] >= 0],
                      (runs * lay.microbatches * comms.elements[mine] * act_bpe * bus[mine])[level[mine] >= 0])
            nbytes = out_elems * act_bpe
            for s in range(1, lay.pp):  # pipeline sends: one micro-batch's activations per stage boundary
                j_level = _boundary_level(system, s, lay.tp)  # alpha + n / B (collectives.transfer_time)
                cols["send"][j] += float(join(sends[j_level], nbytes / bandwidths[j_level],
                                              system.domains[j_level].sharpness))
                level_bytes[j, j_level] += nbytes * lay.microbatches
            cols["w"][j] = per_stage @ w_rows[k]
            cols["kv"][j] = (per_stage @ kv_rows[k]) * lay.microbatches
            cols["act"][j] = fmt.activations.nbytes(peak[k], tensors=2.0 if peak[k] > 0 else 0.0)
            cols["imb"][j] = imb[k]
            excess = cols["w"][j] + cols["kv"][j] + cols["act"][j] - device.memory_capacity
            if options.offload and excess > 0:
                cols["host"][j] = excess / system.host_bandwidth() if system.host_link else math.nan
                cols["host_bytes"][j] = excess * lay.microbatches  # streamed at every micro-batch pass
    arr = cols
    pp = np.array([lay.pp for lay in layouts], dtype=float)
    m = np.array([lay.microbatches for lay in layouts], dtype=float)
    stage = np.fmax(arr["compute"] + arr["comm"], arr["host"])
    passes = np.maximum(m, pp) if decode else m + pp - 1
    step = passes * stage + arr["send"]
    memory = arr["w"] + arr["kv"] + arr["act"]
    with np.errstate(invalid="ignore", divide="ignore"):
        throughput = ctx.batch / step
    return SystemAnalysis(
        model=model, system=stated, device=device, ctx=ctx, precision=precision, layouts=layouts,
        compute_time=arr["compute"], comm_time=arr["comm"], send_time=arr["send"], bubble_time=(passes - m) * stage,
        host_time=arr["host"], stage_time=stage, step_time=step, latency=pp * stage + arr["send"],
        throughput=throughput, throughput_per_device=throughput / system.devices,
        throughput_unit="tokens/s" if decode else "sequences/s", weight_bytes=arr["w"], kv_bytes=arr["kv"],
        activation_bytes=arr["act"], memory_bytes=memory, capacity=device.memory_capacity,
        fits=(memory <= device.memory_capacity) | (options.offload & np.isfinite(arr["host"]) & (arr["host"] > 0)),
        imbalance=arr["imb"], level_bytes=level_bytes, level_names=tuple(d.name for d in system.domains),
        memory_names=tuple(memory_names), memory_traffic=memory_traffic, device_energy=arr["energy"],
        host_bytes=arr["host_bytes"], collective_bytes=act_bpe, time_model=options.time_model,
        calibrated_links=stated.link_calibrations if options.time_model == "calibrated" else (),
        kernel_source=device_time_sources(whole, options.time_model)[0])
