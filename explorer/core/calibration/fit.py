"""Fit a calibration curve to measured kernel times by least squares (``scipy.optimize.least_squares``).

The residual is ``log(predicted / measured)`` per kernel, so a 5 % miss on a 5 us kernel weighs as much as a 5 %
miss on a 5 ms one (MAPE is what the user sees). The parameters are bounded: fraction in [0.01, 1], latency in
[0, 1 ms], sharpness in [0.2, 20]; a parameter that ends on a bound is reported (``FitResult.at_bound``),
since it means the measurements do not pin it down (e.g. no kernel large enough to show the sustained rate).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .model import MATRIX, VECTOR, Curve, Fit, matrix_time, vector_time

LOWER = np.array([0.01, 0.0, 0.2])
UPPER = np.array([1.0, 1000.0, 20.0])  # latency in microseconds inside the fit
NAMES = ("fraction", "latency", "sharpness")


@dataclass(frozen=True)
class FitResult:
    curve: Curve
    predicted: np.ndarray  # seconds, per fitted kernel
    mape: float  # fraction
    at_bound: tuple[str, ...]


def mape(predicted, measured) -> float:
    """Mean absolute percentage error, as a fraction (0.05 = 5 %)."""
    predicted, measured = np.asarray(predicted, float), np.asarray(measured, float)
    return float(np.mean(np.abs(predicted - measured) / measured))


def predict(kind: str, x, flops, nbytes, peak, bandwidth, mapping=1.0, memory_fraction=1.0):
    fraction, latency_us, sharpness = x
    if kind == MATRIX:
        return matrix_time(flops, nbytes, peak, bandwidth, mapping, fraction, latency_us * 1e-6, sharpness,
                           memory_fraction)
    return vector_time(flops, nbytes, peak, bandwidth, fraction, latency_us * 1e-6, sharpness)


def fit_curve(kind: str, flops, nbytes, measured, peak: float, bandwidth: float, mapping=1.0,
              memory_fraction: float = 1.0, source: str | None = None, provenance: Fit | None = None) -> FitResult:
    """Fit ``kind`` ('matrix' or 'vector') work to ``measured`` seconds; arrays per kernel, ``peak`` (FLOP/s)
    and ``bandwidth`` (B/s) the device's datasheet figures. ``provenance`` is completed with the point count
    and the fit's MAPE."""
    if kind not in (MATRIX, VECTOR):
        raise ValueError(f"kind: expected 'matrix' or 'vector', got {kind!r}")
    flops, nbytes, measured = (np.asarray(a, dtype=float) for a in (flops, nbytes, measured))
    if measured.size < 3:
        raise ValueError(f"a fit needs at least 3 measured kernels, got {measured.size}")
    if not (np.all(np.isfinite(measured)) and np.all(measured > 0)):
        raise ValueError("measured times must be positive seconds")
    x0 = np.array([0.8, min(0.9 * float(measured.min()) * 1e6, 900.0), 1.5])

    def residual(x):
        return np.log(predict(kind, x, flops, nbytes, peak, bandwidth, mapping, memory_fraction) / measured)

    from scipy.optimize import least_squares  # here: scipy.optimize costs ~0.5 s to import

    res = least_squares(residual, x0, bounds=(LOWER, UPPER), x_scale=np.array([0.1, max(x0[1], 1.0), 1.0]))
    x = res.x
    pred = predict(kind, x, flops, nbytes, peak, bandwidth, mapping, memory_fraction)
    err = mape(pred, measured)
    at_bound = tuple(n for n, v, lo, hi in zip(NAMES, x, LOWER, UPPER) if np.isclose(v, lo) or np.isclose(v, hi))
    fit = None
    if provenance is not None:
        fit = Fit(data=provenance.data, points=int(measured.size), method=provenance.method, date=provenance.date,
                  split=provenance.split, mape=round(err, 4), note=provenance.note)
    curve = Curve(fraction=float(x[0]), latency=float(x[1]) * 1e-6, sharpness=float(x[2]), source=source, fit=fit)
    return FitResult(curve, pred, err, at_bound)
