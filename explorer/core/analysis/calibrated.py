"""Calibrated time per row and device, beside the ideal model (``docs/device-file.md``, ``calibration:``).

A row with GEMMs is matrix work; every other row is vector work (element-wise, normalization, data movement).
Each runs as one kernel per instance, timed by the device's curve for its kind (:mod:`explorer.core.calibration.
model`) from the row's FLOPs, its bytes (each tensor once, as the curves were fitted) and, for matrix work, the
tile and wave ``mapping_efficiency`` the ideal model computes; a row with neither FLOPs nor bytes (a view)
launches no kernel and takes no time. Where a device has no curve for a row's kind (no
calibration, or none at the analysis precision), the row keeps the ideal model's time and is marked so
(``calibrated`` False); the device's ``calibration_status`` says which kinds are calibrated.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from explorer.core.calibration.model import MATRIX, VECTOR, Curve, matrix_time, vector_time

from .device_arrays import DeviceArrays

NONE_STATUS = "none: no calibration for this device and precision, ideal model"


@dataclass(frozen=True)
class CurveArrays:
    """One kind's curve per device (D,), NaN where the device has none."""

    fraction: np.ndarray
    latency: np.ndarray
    sharpness: np.ndarray

    @property
    def present(self) -> np.ndarray:
        return np.isfinite(self.fraction)


def _curves(curves: list[Curve | None]) -> CurveArrays:
    def pick(name):
        return np.array([getattr(c, name) if c is not None else np.nan for c in curves], dtype=float)
    return CurveArrays(pick("fraction"), pick("latency"), pick("sharpness"))


def device_curves(dev: DeviceArrays) -> tuple[CurveArrays, CurveArrays]:
    """(matrix, vector) curves of each device at its compute precision."""
    matrix, vector = [], []
    for j, d in enumerate(dev.devices):
        cal = d.calibration
        matrix.append(cal.curve(MATRIX, dev.compute_of(j)) if cal is not None else None)
        vector.append(cal.vector if cal is not None else None)
    return _curves(matrix), _curves(vector)


def calibration_status(dev: DeviceArrays) -> tuple[str, ...]:
    """Per device: which kinds of work are calibrated at the analysis precision, and where the curves come from."""
    out = []
    for j, d in enumerate(dev.devices):
        cal, precision = d.calibration, dev.compute_of(j)
        kinds = cal.kinds(precision) if cal is not None else ()
        if not kinds:
            out.append(NONE_STATUS)
            continue
        parts = []
        for kind in kinds:
            c = cal.curve(kind, precision)
            src = d.sources.get(c.source).title if c.source and c.source in d.sources else (c.source or "no source")
            measured = f" measured at {c.measured_as}," if c.measured_as else ""
            points = f" {c.fit.points} kernels," if c.fit else ""
            parts.append(f"{kind}:{measured}{points} {src}")
        missing = [k for k in (MATRIX, VECTOR) if k not in kinds]
        tail = f"; {' and '.join(missing)} work at the ideal model" if missing else ""
        out.append(("calibrated" if not missing else "partly calibrated") + " (" + "; ".join(parts) + ")" + tail)
    return tuple(out)


def calibrated_times(flops: np.ndarray, nbytes: np.ndarray, is_matrix: np.ndarray, mapping: np.ndarray,
                     ideal_model_time: np.ndarray, dev: DeviceArrays,
                     curves: tuple[CurveArrays, CurveArrays] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(time, calibrated)`` per row and device (L, D): seconds per instance, and whether the row's kind had a
    curve (else ``ideal_model_time`` is kept). ``flops`` (L, D) includes device-side conversions, ``nbytes`` (L,)
    or (L, D); ``curves``: :func:`device_curves` of ``dev`` when the caller has them."""
    mc, vc = device_curves(dev) if curves is None else curves
    shape = np.broadcast_shapes(np.shape(flops), np.shape(ideal_model_time), (1, len(dev.peak)))
    F = np.broadcast_to(np.asarray(flops, float), shape)
    out_time = np.array(np.broadcast_to(ideal_model_time, shape), dtype=float)
    out_ok = np.zeros(F.shape, dtype=bool)
    # only the devices with a curve are computed (most have none: their time is the ideal model's)
    sel = np.flatnonzero(mc.present | vc.present)
    if not len(sel):
        return out_time, out_ok
    B = np.asarray(nbytes, float)
    B = np.broadcast_to(B[:, None] if B.ndim == 1 else B, F.shape)[:, sel]
    F = F[:, sel]
    mapping = np.broadcast_to(np.asarray(mapping, float), out_time.shape)[:, sel]
    peak, bw = dev.peak[sel][None, :], dev.bandwidth[sel][None, :]
    mem_fraction = np.where(vc.present, vc.fraction, 1.0)[sel][None, :]
    t_matrix = matrix_time(F, B, peak, bw, mapping, mc.fraction[sel][None, :], mc.latency[sel][None, :],
                           mc.sharpness[sel][None, :], mem_fraction)
    t_vector = vector_time(F, B, peak, bw, vc.fraction[sel][None, :], vc.latency[sel][None, :],
                           vc.sharpness[sel][None, :])
    rows_matrix = np.asarray(is_matrix, bool)[:, None]
    present = np.where(rows_matrix, mc.present[sel][None, :], vc.present[sel][None, :])
    t = np.where(rows_matrix, t_matrix, t_vector)
    t = np.where((F > 0) | (B > 0), t, 0.0)  # a row with no work (a reshape, a view) launches no kernel
    ok = present & np.isfinite(t)
    out_time[:, sel] = np.where(ok, t, out_time[:, sel])
    out_ok[:, sel] = ok
    return out_time, out_ok
