"""A communication roof on the roofline: the links as the next level of the memory hierarchy.

The roofline puts an operator at its FLOPs per byte of memory traffic under ``P = I x B_memory``. The same frame
holds a link: a device that computes F FLOPs for every B bytes it sends over a link of per-direction bandwidth
B_link can sustain at most ``P = (F / B) x B_link`` FLOP/s while the link is busy (the link is the bound), and the
peak once ``F / B`` exceeds the link's ridge ``peak / B_link``. So each domain of a system is a **roof**
``P = I x B_link`` (its bandwidth per device and direction, ``System.bandwidth``), and each collective of the chosen
layout is a **point** at

    I_comm = FLOPs the device computes for the collective / bytes the device sends for it     (FLOP per link byte)
    P      = min(peak, I_comm x B_link)                                                      (FLOP/s)

**FLOPs for a collective**: the device's share of the rows since the previous collective of the same layer (or the
layer's start) up to and including the row the collective follows: for a Megatron block, the attention
(norm, QKV, scores, softmax, context, output projection) for the first all-reduce and the MLP (residual, norm,
gate/up, activation, down) for the second; the embedding for its all-reduce; the LM head for its all-gather; an MoE
layer's experts for its all-to-alls. Several collectives after one row (an MoE's dispatch, combine and all-reduce)
share its FLOPs. **Bytes**: what the device sends for it, n x the bus factor (nccl-tests: 2 (p - 1) / p for an
all-reduce, (p - 1) / p for an all-gather or all-to-all), at the collectives' element size
(``Options.collective_format``). A
collective whose group outgrows the scale-up domain is placed on the outer link, as the system pass counts it.

A point left of its roof's ridge means the link, not the compute, bounds that stretch of work if nothing else does
(its bytes take longer at B_link than its FLOPs at the peak); the latency alpha is not drawn (bandwidth only).
Pipeline sends are not placed (they carry no FLOPs of their own). Pure functions over frozen inputs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from explorer.core.formats import TensorFormats
from explorer.core.hardware.system import System
from explorer.core.workload.layers import Context
from explorer.core.workload.model import Model, build_table

from .collectives import BUS_FACTOR
from .experts import imbalance
from .layout import Layout
from .shard import shard_many
from .system_pass import collective_element_bytes


@dataclass(frozen=True)
class CommRoof:
    name: str  # the domain's link
    scope: str  # scale_up | scale_out
    bandwidth: float  # B/s per device and direction (NaN: not stated, not drawn)
    ridge: float  # FLOP per link byte where the roof meets the peak (NaN when either is unknown)
    x: np.ndarray  # polyline, FLOP per link byte
    y: np.ndarray  # FLOP/s


@dataclass(frozen=True, eq=False)
class CommPoints:
    """One point per collective of the layout (per execution of its layer), on the link it crosses."""

    names: tuple[str, ...]  # the row the collective follows
    ops: tuple[str, ...]  # all_reduce | all_gather | all_to_all
    domain: np.ndarray  # index of the domain (roof) whose link it crosses
    group: np.ndarray  # ranks
    flops: np.ndarray  # FLOPs the device computes for it
    nbytes: np.ndarray  # bytes the device sends for it
    intensity: np.ndarray  # FLOP per link byte
    attainable: np.ndarray  # FLOP/s: min(peak, I x B_link)
    link_time: np.ndarray  # s: nbytes / B_link
    compute_time: np.ndarray  # s: flops / peak
    repeats: np.ndarray  # executions per micro-batch (a block's collectives run once per block)

    @property
    def link_bound(self) -> np.ndarray:
        return self.link_time > self.compute_time


@dataclass(frozen=True, eq=False)
class CommRoofline:
    system_id: str
    layout: Layout
    peak: float  # FLOP/s of the device at the precision
    roofs: tuple[CommRoof, ...]  # one per domain of the system, innermost first
    points: CommPoints


def roof(name: str, scope: str, bandwidth: float, peak: float, x_range: tuple[float, float]) -> CommRoof:
    """The roof ``P = I x B`` from the left edge of ``x_range`` to the ridge ``peak / B`` (or the right edge)."""
    lo, hi = x_range
    if not (bandwidth > 0 and math.isfinite(bandwidth)):
        return CommRoof(name, scope, math.nan, math.nan, np.zeros(0), np.zeros(0))
    ridge = peak / bandwidth if peak > 0 and math.isfinite(peak) else math.nan
    end = min(ridge, hi) if math.isfinite(ridge) else hi
    x = np.array([lo, max(end, lo)])
    return CommRoof(name, scope, float(bandwidth), ridge, x, x * bandwidth)


def place(flops, nbytes, bandwidth, peak: float) -> tuple[np.ndarray, np.ndarray]:
    """(intensity FLOP per link byte, attainable FLOP/s = min(peak, I x B)) of collectives; NaN where unknown."""
    f, b, bw = (np.asarray(v, dtype=float) for v in (flops, nbytes, bandwidth))
    with np.errstate(invalid="ignore", divide="ignore"):
        intensity = np.where(b > 0, f / b, np.nan)
        return intensity, np.minimum(intensity * bw, peak) if math.isfinite(peak) else intensity * bw


def _level(system: System, group: float) -> int:
    for j, domain in enumerate(system.domains):
        if group <= domain.size:
            return j
    return -1


def comm_roofline(model: Model, system: System, layout: Layout, peak: float, precision: str = "fp16",
                  ctx: Context = Context(), formats: TensorFormats | None = None, element_bytes: float | None = None,
                  skew: float = 0.0, x_range: tuple[float, float] = (1e-2, 1e5),
                  collective_format: str = "engine") -> CommRoofline:
    """The roofs of ``system``'s domains and the collectives of ``layout`` (already valid) placed under them.

    ``peak`` FLOP/s of the device at the precision (the roofline's); ``element_bytes`` the collectives' element
    size (default: as the system pass counts them under ``collective_format``, one of
    :data:`.system_pass.COLLECTIVE_FORMATS`)."""
    fm = formats or TensorFormats.of(precision)
    bpe = float(element_bytes) if element_bytes is not None else collective_element_bytes(fm, collective_format)
    micro = max(1, ctx.batch // (layout.dp * layout.microbatches))
    table = build_table(model, replace(ctx, batch=micro))
    top_k = max((int(s.params.get("top_k", 0) or 0) for s in model.layers), default=0)
    tokens = micro * (1 if ctx.phase == "decode" else (ctx.seq_len or model.default_seq_len() or 1))
    imb = imbalance(tokens, top_k, layout.ep, skew) if layout.ep > 1 else 1.0
    stacked, comms = shard_many(table, [layout.tp], [layout.ep], micro, [imb])
    c = stacked.columns
    row_flops = 2.0 * c["macs"] + c["other_flops"]  # per execution of the row, on one device
    cum = np.concatenate([[0.0], np.cumsum(row_flops)])
    li = table.layer_index
    layer_start = np.searchsorted(li, li, side="left") if np.all(np.diff(li) >= 0) else \
        np.array([int(np.flatnonzero(li == v)[0]) for v in li])
    rows = comms.row
    marks = np.unique(rows)
    pos = np.searchsorted(marks, rows)
    prev = np.where(pos > 0, marks[np.maximum(pos - 1, 0)], -1)
    start = np.maximum(prev + 1, layer_start[rows])
    flops = cum[rows + 1] - cum[start]
    bus = np.array([float(BUS_FACTOR[op](g)) for op, g in zip(comms.op, comms.group)])
    nbytes = comms.elements * bpe * bus
    level = np.array([_level(system, g) for g in comms.group], dtype=int)
    bandwidths = np.array([system.bandwidth(d) for d in system.domains], dtype=float)
    bw = np.where(level >= 0, bandwidths[np.maximum(level, 0)] if len(bandwidths) else math.nan, math.nan)
    intensity, attainable = place(flops, nbytes, bw, peak)
    with np.errstate(invalid="ignore", divide="ignore"):
        link_time = nbytes / bw
        compute_time = flops / peak if peak > 0 else np.full(len(flops), math.nan)
    points = CommPoints(names=tuple(table.names[r] for r in rows), ops=tuple(comms.op), domain=level,
                        group=comms.group, flops=flops, nbytes=nbytes, intensity=intensity, attainable=attainable,
                        link_time=link_time, compute_time=compute_time, repeats=table.columns["count"][rows])
    roofs = tuple(roof(d.name, d.scope, system.bandwidth(d), peak, x_range) for d in system.domains)
    return CommRoofline(system.id, layout, float(peak), roofs, points)


@dataclass(frozen=True, eq=False)
class CommRoofView:
    """What the roofline's communication layer draws for the device in focus: the roofs and points of the first
    chosen system made of that device (its chosen layout), or a note saying why there are none."""

    roofline: CommRoofline | None
    system_name: str
    layout_label: str
    note: str  # why nothing is drawn ('' when something is)


def comm_roof_for(results, device_id: str, peak: float, precision: str, ctx: Context,
                  formats: TensorFormats | None, x_range: tuple[float, float],
                  collective_format: str = "engine") -> CommRoofView:
    """The communication roof of the first of ``results`` (:class:`.compare.SystemResult`, the Systems panel's
    chosen systems) whose device is ``device_id`` and that has a layout."""
    if not results:
        return CommRoofView(None, "", "", "choose a system in the Systems panel to draw its communication roof")
    mine = [r for r in results if r.device.id == device_id]
    if not mine:
        return CommRoofView(None, "", "", f"no chosen system is made of {device_id}")
    res = next((r for r in mine if r.analysis is not None), None)
    if res is None:
        return CommRoofView(None, mine[0].system.name, "", f"{mine[0].system.name}: {mine[0].error or 'no layout'}")
    if not (peak > 0 and math.isfinite(peak)):
        return CommRoofView(None, res.system.name, res.layout.label(), f"{device_id} has no peak at {precision}")
    roofline = comm_roofline(res.analysis.model, res.system, res.layout, peak, precision, ctx, formats,
                             x_range=x_range, collective_format=collective_format)
    note = "" if len(roofline.points.names) else f"{res.layout.label()} has no collectives (no tensor or expert split)"
    return CommRoofView(roofline, res.system.name, res.layout.label(), note)
