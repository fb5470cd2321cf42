"""Fidelity: the model's predicted time of each measured kernel against its measured time, ideal and calibrated
side by side (docs/calibration.md, "Fidelity").

A kernel of an imported trace is predicted by the model operator it matches (by name or location, as the roofline
places it: :func:`explorer.core.traces.roofline_points`): the operator's time per execution on the device, under
the ideal model (``time``) and the calibrated one (``calibrated_time``; where the device has no curve for the
operator's kind of work the calibrated time is the ideal one, and ``is_calibrated`` is False). Kernels that match no
operator, or have no duration, have no prediction and are counted in ``note``. The error of a kernel is
``predicted / measured - 1``; the MAPE is the mean of its absolute value. :func:`fidelity_of_kernels` takes the
same arrays from any source (the measured kernels of ``catalog/measurements`` through
:func:`explorer.core.analysis.calibration_fit.kernel_times`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from explorer.core.traces import Trace, kernel_events, layer_work, roofline_points
from explorer.core.units import format_si

from .evaluate import ModelAnalysis

MODELS = ("ideal", "calibrated")


def _frozen(values, dtype=float) -> np.ndarray:
    array = np.array(values, dtype=dtype)
    array.flags.writeable = False
    return array


@dataclass(frozen=True, eq=False)
class Fidelity:
    """One entry per predicted kernel. Units: s. ``shapes`` describe the operator a kernel matched (a GEMM's
    M x N x K, else its kind and the bytes it moves)."""

    device_id: str
    device_name: str
    names: tuple[str, ...]
    layers: tuple[str, ...]
    shapes: tuple[str, ...]
    measured: np.ndarray
    ideal: np.ndarray
    calibrated: np.ndarray
    is_calibrated: np.ndarray  # bool: the device had a curve for the kernel's kind of work
    kernels: int  # kernels in the source (predicted or not)
    note: str = ""  # what was not predicted and why

    def __len__(self) -> int:
        return len(self.names)

    def predicted(self, model: str) -> np.ndarray:
        if model not in MODELS:
            raise ValueError(f"model: expected one of {', '.join(MODELS)}, got {model!r}")
        return self.ideal if model == "ideal" else self.calibrated

    def error(self, model: str) -> np.ndarray:
        """Per kernel, predicted / measured - 1 (0.25: predicted 25 % too slow; -0.5: twice too fast)."""
        return self.predicted(model) / self.measured - 1.0

    def mape(self, model: str) -> float:
        """Mean absolute error over the kernels, as a fraction (NaN without kernels)."""
        return float(np.mean(np.abs(self.error(model)))) if len(self) else math.nan

    def worst(self, model: str = "calibrated", n: int = 10) -> np.ndarray:
        """Indices of the ``n`` kernels with the largest absolute error under ``model``, largest first."""
        err = np.abs(self.error(model))
        return np.argsort(-err, kind="stable")[:n]

    @property
    def range(self) -> tuple[float, float]:
        """The smallest and largest time shown (s), for axes on which the diagonal is drawn."""
        values = np.concatenate([self.measured, self.ideal, self.calibrated])
        values = values[np.isfinite(values) & (values > 0)]
        return (float(values.min()), float(values.max())) if values.size else (math.nan, math.nan)


def fidelity_of_kernels(device_id: str, device_name: str, names, layers, shapes, measured, ideal, calibrated,
                        is_calibrated, kernels: int | None = None, note: str = "") -> Fidelity:
    """A :class:`Fidelity` from per-kernel arrays; kernels with a non-positive or unknown measured or predicted
    time are left out and counted in the note."""
    measured, ideal, calibrated = (np.asarray(x, dtype=float) for x in (measured, ideal, calibrated))
    ok = np.isfinite(measured) & (measured > 0) & np.isfinite(ideal) & (ideal > 0) & np.isfinite(calibrated) & (
        calibrated > 0)
    idx = np.flatnonzero(ok)
    total = len(measured) if kernels is None else kernels
    dropped = len(measured) - idx.size
    if dropped:
        extra = f"{dropped} kernels have no positive measured or predicted time"
        note = f"{note}; {extra}" if note else extra
    pick = (lambda seq: tuple(seq[i] for i in idx))
    return Fidelity(device_id, device_name, pick(names), pick(layers), pick(shapes), _frozen(measured[idx]),
                    _frozen(ideal[idx]), _frozen(calibrated[idx]), _frozen(np.asarray(is_calibrated)[idx], bool),
                    total, note)


def row_shapes(analysis: ModelAnalysis) -> tuple[str, ...]:
    """Per row of the analysis: a GEMM's ``M x N x K`` (and ``(xG)`` for G GEMMs per execution), else the kind
    and the bytes it moves."""
    table = analysis.table
    out = []
    for i, kind in enumerate(table.kinds):
        count = float(table.gemm_count[i])
        if count > 0:
            m, n, k = (int(v) for v in table.gemm[i])
            out.append(f"{kind} {m}x{n}x{k}" + (f" (x{count:g})" if count != 1 else ""))
        else:  # what such a kernel is timed by: the bytes it moves (each tensor once)
            nbytes = float(analysis.bytes[i])
            out.append(f"{kind}, {format_si(nbytes, 'B', 3)} moved" if math.isfinite(nbytes) else kind)
    return tuple(out)


def trace_fidelity(trace: Trace, analysis: ModelAnalysis | None, device_index: int = 0) -> Fidelity:
    """Each kernel of ``trace`` against the prediction of the operator it matches on device ``device_index`` of
    ``analysis`` (the evaluation, with both times)."""
    kernels = len(kernel_events(trace))
    if analysis is None or not len(analysis.devices):
        return fidelity_of_kernels("", "", (), (), (), [], [], [], [], kernels,
                                   "select a device to compare the measured kernels with")
    n_dev = len(analysis.devices)
    if not 0 <= device_index < n_dev:
        raise ValueError(f"device_index: expected 0..{n_dev - 1}, got {device_index}")
    device = analysis.devices.devices[device_index]
    points = roofline_points(trace, 1.0, 1.0, model=layer_work(analysis))  # the roof is not used here
    row_of: dict[str, int] = {}
    for i, name in enumerate(analysis.table.names):
        row_of.setdefault(name, i)  # as layer_work: a name that occurs twice keeps its first row
    rows = np.array([row_of.get(layer, -1) if layer is not None else -1 for layer in points.matched_layers], int)
    matched = rows >= 0
    note = ""
    if kernels == 0:
        note = "the trace has no kernels (no compute events, no CPU ops with FLOP counts)"
    elif not matched.all():
        note = f"{int((~matched).sum())} of {len(rows)} kernels match no model operator (by name or location)"
    r = rows[matched]
    shapes = row_shapes(analysis)
    names = tuple(n for n, ok in zip(points.names, matched) if ok)
    return fidelity_of_kernels(
        device.id, device.name, names, tuple(analysis.table.names[i] for i in r), tuple(shapes[i] for i in r),
        points.duration_s[matched], analysis.time[r, device_index], analysis.calibrated_time[r, device_index],
        analysis.calibrated[r, device_index], kernels, note)


def measurement_fidelity(rows, device, precision: str) -> Fidelity:
    """The measured kernels ``rows`` (:class:`explorer.core.calibration.measurements.Measurement` of ``device``)
    against the analysis pass's ideal and calibrated times on ``device`` at ``precision``."""
    from .calibration_fit import kernel_times

    rows = [r for r in rows if r.device == device.id]
    if not rows:
        return fidelity_of_kernels(device.id, device.name, (), (), (), [], [], [], [], 0,
                                   f"no measured kernels of {device.id}")
    t = kernel_times(rows, device, precision)
    shapes = tuple(f"gemm {r.batch}x{r.m}x{r.n}x{r.k}" if r.kind == "gemm" else f"{r.op} {r.bytes:g} B"
                   for r in rows)
    return fidelity_of_kernels(device.id, device.name, tuple(r.op for r in rows), tuple(r.kind for r in rows),
                               shapes, t.measured, t.ideal, t.calibrated, t.is_calibrated)
