"""Fit a device's calibration to measured kernels and measure its error, through the analysis pass itself.

Each measured kernel becomes a one-layer model (a GEMM: a ``matmul`` layer of two activations, the batch as its
GEMM count; an element-wise kernel: an ``opaque`` layer reading and writing its bytes) and is analysed by
:func:`~.evaluate.evaluate`, so the fit sees exactly the FLOPs, bytes and mapping efficiency that ``analyze``
uses, and the error is that of the times ``analyze`` reports (``time_s`` for the ideal model,
``calibrated_time_s`` for the calibrated one).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from explorer.core.calibration.fit import FitResult, fit_curve, mape
from explorer.core.calibration.measurements import Measurement
from explorer.core.calibration.model import MATRIX, VECTOR, DeviceCalibration, Fit
from explorer.core.hardware.device import Device
from explorer.core.precision import BYTES_PER_ELEMENT, check_precision
from explorer.core.workload.layers import Context
from explorer.core.workload.model import LayerSpec, Model

from .evaluate import evaluate

KIND_OF = {"gemm": MATRIX, "elementwise": VECTOR}


@dataclass(frozen=True)
class KernelTimes:
    """Per measured kernel: the analysis's features and times on one device (arrays in the rows' order)."""

    flops: np.ndarray
    bytes: np.ndarray
    mapping: np.ndarray
    measured: np.ndarray
    ideal: np.ndarray  # the ideal model's time (``time_s``)
    calibrated: np.ndarray  # the calibrated model's time (``calibrated_time_s``)
    is_calibrated: np.ndarray


def _layer(r: Measurement, bpe: float) -> LayerSpec:
    if r.kind == "gemm":
        return LayerSpec.make("matmul", f"{r.batch}x{r.m}x{r.n}x{r.k}", m=r.m, n=r.n, k=r.k, weights=False)
    elems = int(round(r.bytes / 2 / bpe))  # read and written once each
    return LayerSpec.make("opaque", f"{r.op} {int(r.bytes)} B", op_type="copy", input_elems=elems, output_elems=elems)


def kernel_times(rows: list[Measurement], device: Device, precision: str) -> KernelTimes:
    """Analyse every measured kernel on ``device`` at ``precision`` (GEMMs grouped by batch, one pass each)."""
    bpe = BYTES_PER_ELEMENT[check_precision(precision)]
    n = len(rows)
    out = {k: np.full(n, np.nan) for k in ("flops", "bytes", "mapping", "ideal", "calibrated", "ok")}
    for batch in sorted({r.batch if r.kind == "gemm" else 1 for r in rows}):
        idx = [i for i, r in enumerate(rows) if (r.batch if r.kind == "gemm" else 1) == batch]
        model = Model.make("measured kernels", {"features": 1}, [_layer(rows[i], bpe) for i in idx])
        res = evaluate(model, [device], precision, Context(batch=batch))
        if res.table.errors:
            raise ValueError(f"measured kernel {res.table.errors[0]}")
        out["flops"][idx] = res.flops
        out["bytes"][idx] = res.bytes
        out["mapping"][idx] = res.mapping_efficiency[:, 0]
        out["ideal"][idx] = res.time[:, 0]
        out["calibrated"][idx] = res.calibrated_time[:, 0]
        out["ok"][idx] = res.calibrated[:, 0]
    return KernelTimes(out["flops"], out["bytes"], out["mapping"], np.array([r.time_s for r in rows]),
                       out["ideal"], out["calibrated"], out["ok"].astype(bool))


def fit_device(rows: list[Measurement], device: Device, precision: str, provenance: Fit,
               also: tuple[str, ...] = ()) -> tuple[DeviceCalibration, dict[str, FitResult]]:
    """Fit ``device``'s curves to the measured ``rows`` on it (both kinds where present; the vector curve first,
    since sustained bandwidth bounds matrix kernels too). ``provenance`` names the data; each curve's source is
    the rows' ``source``. Returns the device's calibration with the new curves and each fit's result."""
    cal = device.calibration or DeviceCalibration()
    results: dict[str, FitResult] = {}
    for kind_name in ("elementwise", "gemm"):
        sel = [r for r in rows if r.kind == kind_name and r.device == device.id]
        if not sel:
            continue
        sources = sorted({r.source for r in sel})
        if len(sources) != 1:
            raise ValueError(f"{device.id}: {kind_name} rows from several sources {sources}: fit them apart")
        kind = KIND_OF[kind_name]
        feats = kernel_times(sel, replace(device, calibration=cal), precision)
        mem_fraction = cal.vector.fraction if cal.vector is not None else 1.0
        peak, bw = device.peak_flops(precision), device.bandwidth
        res = fit_curve(kind, feats.flops, feats.bytes, feats.measured, peak, bw, feats.mapping, mem_fraction,
                        source=sources[0], provenance=provenance)
        results[kind] = res
        cal = cal.with_curve(kind, res.curve, precision)
        if kind == MATRIX:
            for other in also:
                cal = cal.with_curve(kind, replace(res.curve, measured_as=precision), other)
    return cal, results


@dataclass(frozen=True)
class ErrorReport:
    device: str
    kind: str
    points: int
    ideal_mape: float
    calibrated_mape: float


def error_report(rows: list[Measurement], device: Device, precision: str) -> list[ErrorReport]:
    """MAPE of the ideal and calibrated models on ``rows`` (e.g. the held-out split), per kind of kernel."""
    out = []
    for kind_name in ("gemm", "elementwise"):
        sel = [r for r in rows if r.kind == kind_name and r.device == device.id]
        if not sel:
            continue
        t = kernel_times(sel, device, precision)
        out.append(ErrorReport(device.id, kind_name, len(sel), mape(t.ideal, t.measured),
                               mape(t.calibrated, t.measured)))
    return out
