"""The calibrated time of one kernel, vectorized.

A kernel does work ``W`` at the sustained rate (seconds at an achievable fraction of the peak): for matrix work
``W = max(F / (peak * fraction * mapping), B / bandwidth_m)``, for vector work
``W = max(F / peak, B / (bandwidth * fraction))``, where ``mapping`` is the engine's tile and wave efficiency (the
analysis pass's ``mapping_efficiency``) and ``bandwidth_m`` is the vector curve's sustained bandwidth where the
device has one (else the datasheet figure). A fixed latency ``t0`` (launch and synchronization) sets the floor,
and the two join in a soft maximum of sharpness ``p``::

    t = (t0**p + W**p) ** (1 / p)

so the achieved efficiency ``W / t = (1 + (t0 / W)**p) ** (-1 / p)`` is a saturating curve in the operation's
size: about ``W / t0`` for small kernels, 1 for large ones (``efficiency``). ``p = 1`` adds the latency;
large ``p`` takes the larger of the two.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Mapping

import numpy as np

MATRIX, VECTOR = "matrix", "vector"
KINDS = (MATRIX, VECTOR)


@dataclass(frozen=True)
class Fit:
    """Where a curve's parameters come from: the measurements it was fitted to and how."""

    data: str  # the measurement file, relative to the repository (or the user's trace)
    points: int  # measurements fitted
    method: str = "scipy.optimize.least_squares on log(time)"
    date: str | None = None
    split: str | None = None  # the rows used (e.g. 'calibration'); None: all
    mape: float | None = None  # mean absolute percentage error on the fitted points, as a fraction
    note: str | None = None


@dataclass(frozen=True)
class Curve:
    """One kind of work on one device: ``fraction`` of the peak compute (matrix) or of the main-memory bandwidth
    (vector) that large kernels sustain, the fixed ``latency`` per kernel in seconds, and the ``sharpness`` of
    the join between them."""

    fraction: float
    latency: float
    sharpness: float
    source: str | None = None  # a key of the device's sources
    fit: Fit | None = None
    note: str | None = None
    measured_as: str | None = None  # matrix: the precision measured, when the curve is used for another

    def __post_init__(self):
        for name, lo, hi in (("fraction", 0.0, 1.0), ("latency", 0.0, 1.0), ("sharpness", 0.1, 100.0)):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and not isinstance(v, bool) and lo <= v <= hi) or (
                    name == "fraction" and v == 0):
                raise ValueError(f"{name}: expected a number in {'(' if name == 'fraction' else '['}{lo}, {hi}], "
                                 f"got {v!r}")


@dataclass(frozen=True, eq=False)
class DeviceCalibration:
    """A device's calibration: matrix curves per precision (a curve measured at one precision may be listed for
    others, ``measured_as``) and one vector curve (bytes move the same at every precision)."""

    matrix: Mapping[str, Curve] = field(default_factory=dict)
    vector: Curve | None = None

    def __post_init__(self):
        object.__setattr__(self, "matrix", MappingProxyType(dict(self.matrix)))

    def __eq__(self, other):
        return isinstance(other, DeviceCalibration) and dict(self.matrix) == dict(other.matrix) and \
            self.vector == other.vector

    def __hash__(self):
        return hash((tuple(self.matrix.items()), self.vector))

    def curve(self, kind: str, precision: str) -> Curve | None:
        return self.matrix.get(precision) if kind == MATRIX else self.vector

    def kinds(self, precision: str) -> tuple[str, ...]:
        """The kinds of work this calibration covers at ``precision``."""
        return tuple(k for k in KINDS if self.curve(k, precision) is not None)

    def with_curve(self, kind: str, curve: Curve, precision: str | None = None) -> "DeviceCalibration":
        if kind == MATRIX:
            if precision is None:
                raise ValueError("a matrix curve needs its precision")
            return replace(self, matrix={**self.matrix, precision: curve})
        return replace(self, vector=curve)


def soft_max(latency, work, sharpness):
    """``(t0**p + W**p)**(1/p)``, computed in a scaled form that neither overflows nor underflows."""
    latency, work, p = (np.asarray(x, dtype=float) for x in (latency, work, sharpness))
    scale = np.maximum(latency, work)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = scale * ((latency / scale) ** p + (work / scale) ** p) ** (1.0 / p)
    return np.where(scale > 0, out, 0.0)


def efficiency(work, latency, sharpness):
    """The achieved share of the sustained rate, ``W / t``: a saturating curve in the work's size."""
    work = np.asarray(work, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(work > 0, work / soft_max(latency, work, sharpness), 0.0)


def matrix_time(flops, nbytes, peak, bandwidth, mapping, fraction, latency, sharpness, memory_fraction=1.0):
    """Calibrated seconds of matrix kernels (arrays broadcast; ``mapping`` the tile/wave efficiency)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        work = np.maximum(np.asarray(flops, float) / (peak * fraction * mapping),
                          np.asarray(nbytes, float) / (bandwidth * memory_fraction))
    return soft_max(latency, work, sharpness)


def vector_time(flops, nbytes, peak, bandwidth, fraction, latency, sharpness):
    """Calibrated seconds of vector (element-wise, normalization, data movement) kernels."""
    with np.errstate(invalid="ignore", divide="ignore"):
        work = np.maximum(np.asarray(flops, float) / peak, np.asarray(nbytes, float) / (bandwidth * fraction))
    return soft_max(latency, work, sharpness)
