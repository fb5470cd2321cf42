"""Measured kernels of an imported trace beside the modelled operators on one device's roofline.

The roof is the one the roofline panel draws for the device in focus: ``min(peak, I x BW)`` with the dense
peak at the analysis precision and the main-memory bandwidth (no efficiency factors). Each kernel's
intensity is the trace's own (FLOPs / measured bytes) when it measured bytes, else the intensity of the
model operator it matches by name or location (``explorer.core.traces.roofline_points``); its achieved
FLOP/s is FLOPs / measured duration. The modelled intensity of the matching operator is kept beside the
measured one so the two can be compared. Kernels without a known intensity or achieved rate cannot be
placed on log axes; :attr:`MeasuredRoofline.note` says how many and why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from explorer.core.traces import RooflinePoints, TopKernels, Trace, kernel_events, layer_work, roofline_points
from explorer.core.traces import top_kernels as _top_kernels

from .evaluate import ModelAnalysis
from .roofline_view import RooflineResult


def _frozen(values) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    array.flags.writeable = False
    return array


@dataclass(frozen=True, eq=False)
class MeasuredRoofline:
    """The placeable kernels of a trace on one device (arrays have one entry per placed kernel).

    ``points`` is every kernel against the device's roof (None when the device has no peak or bandwidth at
    the precision); ``index`` maps each placed kernel back into ``points``. Units: FLOP/byte, FLOP/s, s.
    """

    device_id: str
    device_name: str
    precision: str
    peak: float  # FLOP/s, NaN when the device has none at the precision
    bandwidth: float  # B/s
    kernels: int  # kernels in the trace (placed or not)
    points: RooflinePoints | None
    index: np.ndarray  # int, into points
    names: tuple[str, ...]
    layers: tuple[str | None, ...]  # the model operator each kernel matched (None when none)
    intensity: np.ndarray  # FLOP/byte, as placed
    intensity_source: tuple[str, ...]  # 'measured' (the trace's bytes) or 'modeled' (the matching operator)
    modeled_intensity: np.ndarray  # FLOP/byte of the matching model operator, NaN when none matched
    achieved: np.ndarray  # FLOP/s measured
    attainable: np.ndarray  # FLOP/s, the roof at the placed intensity
    efficiency: np.ndarray  # achieved / attainable
    duration: np.ndarray  # s, per call
    bound: tuple[str, ...]
    note: str  # what could not be placed and why ('' when every kernel is placed)

    def __len__(self) -> int:
        return len(self.names)


def _empty(device_id: str, name: str, precision: str, peak: float, bw: float, kernels: int,
           note: str) -> MeasuredRoofline:
    e = _frozen([])
    return MeasuredRoofline(device_id, name, precision, peak, bw, kernels, None, np.zeros(0, int), (), (), e, (),
                            e, e, e, e, e, (), note)


def measured_roofline(trace: Trace, analysis: ModelAnalysis | None, device_index: int = 0) -> MeasuredRoofline:
    """Place the kernels of ``trace`` against the roof of device ``device_index`` of ``analysis``."""
    kernels = len(kernel_events(trace))
    if analysis is None or not len(analysis.devices):
        return _empty("", "", "", math.nan, math.nan, kernels,
                      "select a device to place the measured kernels")
    n_dev = len(analysis.devices)
    if not 0 <= device_index < n_dev:
        raise ValueError(f"device_index: expected 0..{n_dev - 1}, got {device_index}")
    dev = analysis.devices
    device = dev.devices[device_index]
    peak, bw = float(dev.peak[device_index]), float(dev.bandwidth[device_index])
    at = dev.compute_of(device_index)  # the analysis precision, or this device's fallback
    head = (device.id, device.name, at, peak, bw, kernels)
    if kernels == 0:
        return _empty(*head, "the trace has no kernels (no compute events, no CPU ops with FLOP counts)")
    if not (math.isfinite(peak) and peak > 0):
        return _empty(*head, f"{device.name} has no {at} peak, so there is no roof to measure "
                             "the kernels against")
    if not (math.isfinite(bw) and bw > 0):
        return _empty(*head, f"{device.name} has no memory bandwidth, so there is no roof to measure the "
                             "kernels against")
    work = layer_work(analysis)
    points = roofline_points(trace, peak, bw, model=work)
    index = np.flatnonzero(points.plottable)
    modeled = [work[layer][0] / work[layer][1] if layer is not None and work[layer][1] > 0 else math.nan
               for layer in points.matched_layers]
    skipped = len(points) - len(index)
    note = ""
    if skipped:
        no_intensity = int(np.sum(~np.isfinite(points.intensity) | (points.intensity <= 0)))
        note = (f"{skipped} of {len(points)} kernels not placed: "
                + (f"{no_intensity} have no intensity (the trace measured no bytes and no model operator has "
                   "their name or location)" if no_intensity else "no achieved FLOP/s (no FLOP count or no "
                                                                   "duration)"))
    return MeasuredRoofline(
        device_id=device.id, device_name=device.name, precision=at, peak=peak, bandwidth=bw,
        kernels=kernels, points=points, index=index,
        names=tuple(points.names[i] for i in index),
        layers=tuple(points.matched_layers[i] for i in index),
        intensity=_frozen(points.intensity[index]),
        intensity_source=tuple(points.intensity_source[i] for i in index),
        modeled_intensity=_frozen(np.asarray(modeled, dtype=float)[index]),
        achieved=_frozen(points.achieved_flops_per_s[index]),
        attainable=_frozen(points.attainable_flops_per_s[index]),
        efficiency=_frozen(points.efficiency[index]),
        duration=_frozen(points.duration_s[index]),
        bound=tuple(points.bound[i] for i in index),
        note=note,
    )


def measured_top_kernels(trace: Trace, measured: MeasuredRoofline, n: int | None = 20) -> TopKernels:
    """The longest kernels of ``trace`` by total time; the roof columns (roof, efficiency, gap, bound) are
    unknown (NaN, '—') when ``measured`` has no roof."""
    if measured.points is not None:
        return _top_kernels(measured.points, n)
    # times, counts and achieved rates need no roof: place against a unit roof, then forget it
    top = _top_kernels(roofline_points(trace, 1.0, 1.0), n)
    unknown = _frozen(np.full(len(top), math.nan))
    return replace(top, attainable_flops_per_s=unknown, efficiency=unknown, gap_factor=unknown,
                   bound=tuple("\u2014" for _ in range(len(top))))


def cover_measured(r: RooflineResult, m: MeasuredRoofline | None) -> RooflineResult:
    """``r`` with its FLOP/s range widened, by whole decades, to show every measured kernel (a trace measured on a
    CPU sits decades below an accelerator's roof); ``r`` itself when it shows them all already."""
    if m is None or not len(m):
        return r
    ys = m.achieved[np.isfinite(m.achieved) & (m.achieved > 0)]
    if not len(ys):
        return r
    lo, hi = r.y_range
    y_range = (min(lo, 10.0 ** math.floor(math.log10(ys.min() / 2))),
               max(hi, 10.0 ** math.ceil(math.log10(ys.max() * 2))))
    return r if y_range == (lo, hi) else replace(r, y_range=y_range)
