"""What the roofline panel draws, computed from the one shared analysis (no re-evaluation).

Log-log axes, intensity I (FLOP/byte) against performance (FLOP/s). Per device: the compute ceiling at the
analysis precision, faint ceilings for its other precisions, one memory slope ``P = I x BW`` per level with a
known bandwidth, and the ridge point ``I_ridge = peak / BW`` of main memory (the chapter's hardware balance).
Per operator row: a point at (I, attainable) on the device in focus, where attainable = min(peak x eta_c,
I x BW x eta_m); its marker size follows its share of the device's time, its class is its bound (memory or
compute) and its kind. The chapter's regime bands (Table 14: I < 2, 2-20, 20-200, > 200 FLOP/byte) are fixed,
not tied to any device's ridge, and carry the recommended optimizations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .evaluate import REGIME_ADVICE, REGIME_EDGES, REGIMES, ModelAnalysis


@dataclass(frozen=True)
class Ceiling:
    precision: str
    flops: float  # FLOP/s, dense peak
    x: np.ndarray  # polyline, FLOP/byte
    y: np.ndarray  # FLOP/s


@dataclass(frozen=True)
class MemorySlope:
    level: str
    bandwidth: float  # B/s
    ridge: float  # FLOP/byte where the slope meets the ceiling at the analysis precision (NaN if no ceiling)
    x: np.ndarray
    y: np.ndarray


@dataclass(frozen=True)
class DeviceRoofline:
    id: str
    name: str
    peak: float  # FLOP/s at the analysis precision (NaN if the device has none)
    bandwidth: float  # main memory, B/s
    ridge: float  # FLOP/byte (NaN if unknown)
    ceiling: Ceiling | None  # at the analysis precision
    other_ceilings: tuple[Ceiling, ...]
    slopes: tuple[MemorySlope, ...]  # main memory first
    missing: str  # why something is not drawn ('' when complete)


@dataclass(frozen=True)
class RegimeBand:
    name: str
    lo: float  # FLOP/byte (the plot's left edge for the lowest band)
    hi: float  # FLOP/byte (the plot's right edge for the highest band)
    advice: str


@dataclass(frozen=True, eq=False)
class RooflinePoints:
    """Operator rows that have a finite intensity and attainable performance on the device in focus."""

    rows: np.ndarray  # row index into the analysis
    layer: np.ndarray  # top-level layer index
    names: tuple[str, ...]
    kinds: tuple[str, ...]
    intensity: np.ndarray  # FLOP/byte
    attainable: np.ndarray  # FLOP/s
    achieved: np.ndarray  # FLOP/s with mapping efficiency and hierarchical traffic (FLOPs / modelled time)
    time: np.ndarray  # s per execution of the row, times its repeat count
    time_share: np.ndarray  # fraction of the device's total time
    size: np.ndarray  # relative marker size in [0, 1]: sqrt of the time share over the largest share
    bound: tuple[str, ...]  # 'memory' | 'compute'
    regime: tuple[str, ...]
    focused: np.ndarray  # bool: belongs to the layer in focus


@dataclass(frozen=True, eq=False)
class RooflineResult:
    precision: str
    device_index: int
    devices: tuple[DeviceRoofline, ...]
    points: RooflinePoints
    bands: tuple[RegimeBand, ...]
    x_range: tuple[float, float]  # FLOP/byte
    y_range: tuple[float, float]  # FLOP/s
    focused_layer: int
    focus_note: str = ""  # why the device in focus has no operator points ('' when it has its roof)
    precision_note: str = ""  # the precision the device in focus computes at when not the analysis's, and why


def _decade_floor(v: float) -> float:
    return 10.0 ** math.floor(math.log10(v))


def _decade_ceil(v: float) -> float:
    return 10.0 ** math.ceil(math.log10(v))


def _pick(values: tuple, rows: np.ndarray) -> tuple:
    """``values`` at ``rows`` (all of them, usually: every operator with a known intensity is placed)."""
    return tuple(values) if len(rows) == len(values) else tuple(values[i] for i in rows.tolist())


def _finite_positive(a) -> np.ndarray:
    a = np.asarray(a, dtype=float).ravel()
    return a[np.isfinite(a) & (a > 0)]


def _axis_ranges(analysis: ModelAnalysis, intensity: np.ndarray, attainable: np.ndarray):
    dev = analysis.devices
    with np.errstate(invalid="ignore", divide="ignore"):
        level_ridges = dev.peak[:, None] / dev.level_bw
    xs = np.concatenate(
        [
            _finite_positive(intensity),
            _finite_positive(dev.ridge),
            _finite_positive(level_ridges),
            REGIME_EDGES,
        ]
    )
    x_lo = _decade_floor(min(xs.min(), 1.0) / 2)
    x_hi = _decade_ceil(max(xs.max(), 1e3) * 2)
    peaks = _finite_positive([c.value for d in dev.devices for c in d.peak.values()])
    bws = _finite_positive(dev.level_bw)
    ys = np.concatenate([peaks, _finite_positive(attainable), bws * x_lo])
    if not len(ys):
        ys = np.array([1e9, 1e15])
    y_lo = _decade_floor(ys.min() / 2)
    y_hi = _decade_ceil(ys.max() * 2)
    return (x_lo, x_hi), (y_lo, y_hi)


def _device_roofline(analysis: ModelAnalysis, d: int, x_lo: float, x_hi: float) -> DeviceRoofline:
    dev = analysis.devices
    device = dev.devices[d]
    peak, bw = float(dev.peak[d]), float(dev.bandwidth[d])
    has_peak = math.isfinite(peak) and peak > 0
    at = dev.compute_of(d)  # the analysis precision, or the one this device falls back to
    missing = []
    if not has_peak:
        missing.append(f"no {at} peak")
    ceiling = None
    if has_peak:
        start = peak / bw if math.isfinite(bw) and bw > 0 else x_lo
        ceiling = Ceiling(at, peak, np.array([max(start, x_lo), x_hi]), np.array([peak, peak]))
    others = []
    for precision, cited in device.peak.items():
        if precision == at or not cited.value > 0:
            continue
        start = cited.value / bw if math.isfinite(bw) and bw > 0 else x_lo
        others.append(
            Ceiling(
                precision,
                cited.value,
                np.array([max(start, x_lo), x_hi]),
                np.array([cited.value, cited.value]),
            )
        )
    slopes = []
    names = dev.level_names[d]
    for j, name in enumerate(names):
        level_bw = float(dev.level_bw[d, j])
        if not (math.isfinite(level_bw) and level_bw > 0):
            continue
        ridge = peak / level_bw if has_peak else math.nan
        end = max(min(ridge, x_hi), x_lo) if has_peak else x_hi
        slopes.append(
            MemorySlope(
                name, level_bw, ridge, np.array([x_lo, end]), np.array([x_lo * level_bw, end * level_bw])
            )
        )
    if not (math.isfinite(bw) and bw > 0):
        missing.append("no memory bandwidth")
    elif not slopes:  # the main bandwidth comes from a level without a name in the table: still draw it
        ridge = peak / bw if has_peak else math.nan
        end = max(min(ridge, x_hi), x_lo) if has_peak else x_hi
        slopes.append(
            MemorySlope("main memory", bw, ridge, np.array([x_lo, end]), np.array([x_lo * bw, end * bw]))
        )
    slopes.sort(key=lambda s: s.bandwidth != bw)  # main memory (the ridge's bandwidth) first
    return DeviceRoofline(
        device.id,
        device.name,
        peak,
        bw,
        float(dev.ridge[d]),
        ceiling,
        tuple(others),
        tuple(slopes),
        "; ".join(missing),
    )


def missing_peak_note(device, precision: str) -> str:
    """What to tell the user when ``device`` (a :class:`~explorer.core.hardware.device.Device`) has no dense peak at
    ``precision``: which precisions the catalog lists instead ('' when it has the peak)."""
    value = device.peak_flops(precision)
    if math.isfinite(value) and value > 0:
        return ""
    listed = [p for p in device.precisions if device.peak[p].value > 0]
    if not listed:
        return f"{device.name} has no peak in the catalog at any precision, so its operators cannot be placed"
    one = "choose that precision" if len(listed) == 1 else "choose one of those precisions"
    return (f"{device.name} has no {precision} peak in the catalog; it lists {', '.join(listed)} \u2014 {one}")


def precision_notes(dev, d: int) -> tuple[str, str]:
    """Device ``d`` of the arrays ``dev``: (why it has no roof, '' when it has one; the precision it computes at
    instead of the analysis's and why, per-tensor formats only, '' when none)."""
    fallback = dev.precision_notes[d] if dev.precision_notes else ""
    if math.isfinite(dev.peak[d]) and dev.peak[d] > 0:
        return "", fallback
    return fallback or missing_peak_note(dev.devices[d], dev.precision), ""


def regime_bands(x_lo: float, x_hi: float) -> tuple[RegimeBand, ...]:
    edges = [x_lo, *(float(e) for e in REGIME_EDGES), x_hi]
    return tuple(
        RegimeBand(name, edges[i], edges[i + 1], REGIME_ADVICE[name]) for i, name in enumerate(REGIMES)
    )


def compute_roofline(
    analysis: ModelAnalysis, focused_layer: int = -1, device_index: int = 0
) -> RooflineResult:
    """Ceilings, slopes and ridges for every device, and the operator points on device ``device_index``."""
    n_dev = len(analysis.devices)
    if not 0 <= device_index < max(n_dev, 1):
        raise ValueError(f"device_index: expected 0..{n_dev - 1}, got {device_index}")
    d = device_index
    intensity = analysis.intensity
    attainable = analysis.attainable[:, d] if n_dev else np.full(len(intensity), np.nan)
    (x_lo, x_hi), y_range = _axis_ranges(analysis, intensity, analysis.attainable)
    keep = np.isfinite(intensity) & (intensity > 0) & np.isfinite(attainable) & (attainable > 0)
    rows = np.flatnonzero(keep)
    table = analysis.table
    share = analysis.time_share[rows, d] if n_dev else np.zeros(len(rows))
    share = np.nan_to_num(share, nan=0.0)
    largest = share.max(initial=0.0)
    size = np.sqrt(share / largest) if largest > 0 else np.zeros(len(rows))
    with np.errstate(invalid="ignore", divide="ignore"):
        achieved = analysis.flops[rows] / analysis.time[rows, d] if n_dev else np.full(len(rows), np.nan)
    bound = (
        np.where(analysis.memory_bound[rows, d], "memory", "compute") if n_dev else np.array([], dtype=str)
    )
    points = RooflinePoints(
        rows=rows,
        layer=table.layer_index[rows],
        names=_pick(table.names, rows),
        kinds=_pick(table.kinds, rows),
        intensity=intensity[rows],
        attainable=attainable[rows],
        achieved=achieved,
        time=(analysis.count[rows] * analysis.time[rows, d]) if n_dev else np.zeros(len(rows)),
        time_share=share,
        size=size,
        bound=tuple(bound.tolist()),
        regime=tuple(np.array(REGIMES)[analysis.regime[rows]].tolist()),
        focused=table.layer_index[rows] == focused_layer if focused_layer >= 0 else np.zeros(len(rows), bool),
    )
    devices = tuple(_device_roofline(analysis, i, x_lo, x_hi) for i in range(n_dev))
    note, fallback = precision_notes(analysis.devices, d) if n_dev else ("", "")
    return RooflineResult(
        analysis.precision, d, devices, points, regime_bands(x_lo, x_hi), (x_lo, x_hi), y_range, focused_layer,
        note, fallback,
    )
