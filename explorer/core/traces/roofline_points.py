"""Measured kernels as points on a roofline, and the kernels that took the most time.

For each kernel of a trace:

* FLOPs: the trace's own count if it has one, else the analytical model's for the layer it matches.
* Intensity (FLOP/byte): FLOPs / measured bytes when the trace measured bytes; else the model layer's
  FLOPs / bytes when the kernel matches a layer; else unknown (NaN).
* Achieved FLOP/s = FLOPs / measured duration.
* Attainable = min(peak FLOP/s, bandwidth x intensity); efficiency = achieved / attainable;
  gap factor = attainable / achieved; bound = "memory" below the ridge (peak / bandwidth), else "compute".

A kernel matches a model layer when its location, its name, or a quoted name inside an MLIR location
(``loc("fc1")``) equals a key of the model mapping, exactly or ignoring case and surrounding spaces.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from explorer.core.traces.model import COMPUTE, CPU_OP, Trace, TraceEvent

MEASURED, MODELED, NONE = "measured", "modeled", "none"


def _frozen(values) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    array.flags.writeable = False
    return array


def _positive(value: float, field: str) -> float:
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{field}: must be a finite number > 0, got {value}")
    return value


@dataclass(frozen=True)
class RooflinePoints:
    """One entry per kernel (arrays are read-only, SI units: s, FLOP, byte, FLOP/s, FLOP/byte)."""

    names: tuple[str, ...]
    lanes: tuple[str, ...]
    locations: tuple[str | None, ...]
    matched_layers: tuple[str | None, ...]
    start_s: np.ndarray
    duration_s: np.ndarray
    flops: np.ndarray
    flops_source: tuple[str, ...]
    intensity: np.ndarray
    intensity_source: tuple[str, ...]
    achieved_flops_per_s: np.ndarray
    attainable_flops_per_s: np.ndarray
    efficiency: np.ndarray
    gap_factor: np.ndarray
    bound: tuple[str, ...]
    peak_flops_per_s: float
    bandwidth_bytes_per_s: float

    def __len__(self) -> int:
        return len(self.names)

    @property
    def ridge_intensity(self) -> float:
        return self.peak_flops_per_s / self.bandwidth_bytes_per_s

    @property
    def plottable(self) -> np.ndarray:
        """True where both achieved FLOP/s and intensity are known and positive (drawable on log axes)."""
        return np.isfinite(self.achieved_flops_per_s) & np.isfinite(self.intensity) & \
            (self.achieved_flops_per_s > 0) & (self.intensity > 0)


def attainable(intensity, peak_flops_per_s: float, bandwidth_bytes_per_s: float) -> np.ndarray:
    """The roof: min(peak, bandwidth x intensity); NaN where intensity is NaN."""
    return np.minimum(peak_flops_per_s, bandwidth_bytes_per_s * np.asarray(intensity, dtype=float))


def _bound(intensity: float, ridge: float) -> str:
    if not math.isfinite(intensity):
        return "unknown"
    return "memory" if intensity < ridge else "compute"


class _LayerIndex:
    """Looks up model layers by exact key, then by case/space-insensitive key."""

    def __init__(self, model: Mapping[str, tuple[float, float]] | None):
        self.exact = dict(model or {})
        self.loose = {" ".join(k.lower().split()): k for k in self.exact}
        for key, value in self.exact.items():
            if len(value) != 2:
                raise ValueError(f"model['{key}']: expected (flops, bytes), got {value!r}")

    def match(self, event: TraceEvent) -> str | None:
        candidates = [event.location, event.name]
        if event.location:
            candidates += re.findall(r'"([^"]+)"', event.location)
        for candidate in candidates:
            if candidate and candidate in self.exact:
                return candidate
        for candidate in candidates:
            if candidate:
                key = self.loose.get(" ".join(candidate.lower().split()))
                if key is not None:
                    return key
        return None


def layer_work(analysis) -> dict[str, tuple[float, float]]:
    """The analytical model's (FLOPs, bytes) per operator, keyed by operator name, for ``model=`` above.

    ``analysis`` is an ``explorer.core.analysis.evaluate.ModelAnalysis`` (or anything with ``table.names``
    and per-row ``flops``/``bytes`` arrays); the values are for one execution of the operator, as a traced
    kernel is. A name that occurs twice keeps its first row.
    """
    work: dict[str, tuple[float, float]] = {}
    for name, flops, nbytes in zip(analysis.table.names, analysis.flops, analysis.bytes):
        if name not in work and math.isfinite(flops) and math.isfinite(nbytes):
            work[name] = (float(flops), float(nbytes))
    return work


def kernel_events(trace: Trace, categories: Iterable[str] | None = None) -> tuple[TraceEvent, ...]:
    """The events that count as kernels: those in ``categories`` if given; else compute events, or, in a
    CPU-only trace, the CPU ops the profiler counted FLOPs for (their parents and children carry none)."""
    if categories is not None:
        wanted = set(categories)
        return tuple(e for e in trace.events if e.category in wanted)
    compute = tuple(e for e in trace.events if e.category == COMPUTE)
    if compute:
        return compute
    return tuple(e for e in trace.events if e.category == CPU_OP and e.flops is not None)


def roofline_points(trace: Trace, peak_flops_per_s: float, bandwidth_bytes_per_s: float,
                    model: Mapping[str, tuple[float, float]] | None = None,
                    categories: Iterable[str] | None = None) -> RooflinePoints:
    """Place each kernel of ``trace`` against the roof of a device (peak FLOP/s, bandwidth in byte/s).

    ``model`` maps a layer name or location to its analytical (FLOPs, bytes).
    """
    peak = _positive(peak_flops_per_s, "peak_flops_per_s")
    bandwidth = _positive(bandwidth_bytes_per_s, "bandwidth_bytes_per_s")
    index = _LayerIndex(model)
    events = kernel_events(trace, categories)
    flops, flops_src, intensity, intensity_src, layers = [], [], [], [], []
    for event in events:
        layer = index.match(event)
        layers.append(layer)
        model_flops, model_bytes = index.exact[layer] if layer is not None else (math.nan, math.nan)
        if event.flops is not None:
            f, f_src = float(event.flops), MEASURED
        elif layer is not None:
            f, f_src = float(model_flops), MODELED
        else:
            f, f_src = math.nan, NONE
        if event.bytes is not None and event.bytes > 0 and math.isfinite(f):
            i, i_src = f / float(event.bytes), MEASURED
        elif layer is not None and model_bytes > 0:
            i, i_src = float(model_flops) / float(model_bytes), MODELED
        else:
            i, i_src = math.nan, NONE
        flops.append(f)
        flops_src.append(f_src)
        intensity.append(i)
        intensity_src.append(i_src)
    duration = np.array([e.duration_s for e in events], dtype=float)
    flops_a, intensity_a = np.array(flops, dtype=float), np.array(intensity, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        achieved = np.where(duration > 0, flops_a / duration, np.nan)
        roof = attainable(intensity_a, peak, bandwidth)
        efficiency = achieved / roof
        gap = np.where(achieved > 0, roof / achieved, np.nan)
    return RooflinePoints(
        names=tuple(e.name for e in events), lanes=tuple(e.lane for e in events),
        locations=tuple(e.location for e in events), matched_layers=tuple(layers),
        start_s=_frozen([e.start_s for e in events]), duration_s=_frozen(duration), flops=_frozen(flops_a),
        flops_source=tuple(flops_src), intensity=_frozen(intensity_a), intensity_source=tuple(intensity_src),
        achieved_flops_per_s=_frozen(achieved), attainable_flops_per_s=_frozen(roof),
        efficiency=_frozen(efficiency), gap_factor=_frozen(gap),
        bound=tuple(_bound(i, peak / bandwidth) for i in intensity_a),
        peak_flops_per_s=peak, bandwidth_bytes_per_s=bandwidth)


@dataclass(frozen=True)
class TopKernels:
    """Kernels grouped by name, longest total time first.

    ``share`` is the group's fraction of all kernel time. Achieved = FLOPs / time over the calls whose
    FLOPs are known; intensity = FLOPs / bytes over the calls whose intensity is known too (bytes implied by
    each call's intensity), so a group's point sits where its calls sit on average. NaN when unknown.
    """

    names: tuple[str, ...]
    count: np.ndarray
    total_s: np.ndarray
    mean_s: np.ndarray
    share: np.ndarray
    achieved_flops_per_s: np.ndarray
    intensity: np.ndarray
    attainable_flops_per_s: np.ndarray
    efficiency: np.ndarray
    gap_factor: np.ndarray
    bound: tuple[str, ...]
    total_kernel_s: float

    def __len__(self) -> int:
        return len(self.names)


def top_kernels(points: RooflinePoints, n: int | None = 10, by: str = "name") -> TopKernels:
    """Aggregate ``points`` by kernel name (``by="name"``) or by location (``by="location"``, e.g. the layer a
    CPU op ran in; events without one keep their name); keep the ``n`` longest in total (all if None)."""
    if n is not None and n < 0:
        raise ValueError(f"n: must be >= 0, got {n}")
    if by not in ("name", "location"):
        raise ValueError(f"by: must be 'name' or 'location', got {by!r}")
    keys = points.names if by == "name" else tuple(loc or name for loc, name in zip(points.locations,
                                                                                   points.names))
    groups: dict[str, list[int]] = {}
    for i, name in enumerate(keys):
        groups.setdefault(name, []).append(i)
    all_time = float(points.duration_s.sum())
    rows = []
    for name, idx in groups.items():
        idx = np.array(idx)
        time = float(points.duration_s[idx].sum())
        known = idx[np.isfinite(points.flops[idx]) & np.isfinite(points.intensity[idx]) &
                    (points.intensity[idx] > 0)]
        rated = idx[np.isfinite(points.flops[idx])]
        rated_time = float(points.duration_s[rated].sum())
        has_rate = len(rated) > 0 and rated_time > 0
        achieved = float(points.flops[rated].sum()) / rated_time if has_rate else math.nan
        if len(known):
            implied_bytes = float((points.flops[known] / points.intensity[known]).sum())
            intensity = float(points.flops[known].sum()) / implied_bytes if implied_bytes > 0 else math.nan
        else:
            intensity = math.nan
        rows.append((name, len(idx), time, achieved, intensity))
    rows.sort(key=lambda r: -r[2])
    rows = rows[:n] if n is not None else rows
    peak, bandwidth = points.peak_flops_per_s, points.bandwidth_bytes_per_s
    count = np.array([r[1] for r in rows], dtype=int)
    count.flags.writeable = False
    total = np.array([r[2] for r in rows], dtype=float)
    achieved = np.array([r[3] for r in rows], dtype=float)
    intensity = np.array([r[4] for r in rows], dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        roof = attainable(intensity, peak, bandwidth)
        share = total / all_time if all_time > 0 else np.full_like(total, np.nan)
        mean = total / count
        gap = np.where(achieved > 0, roof / achieved, np.nan)
        efficiency = achieved / roof
    return TopKernels(
        names=tuple(r[0] for r in rows), count=count, total_s=_frozen(total), mean_s=_frozen(mean),
        share=_frozen(share), achieved_flops_per_s=_frozen(achieved), intensity=_frozen(intensity),
        attainable_flops_per_s=_frozen(roof), efficiency=_frozen(efficiency), gap_factor=_frozen(gap),
        bound=tuple(_bound(i, peak / bandwidth) for i in intensity), total_kernel_s=all_time)
