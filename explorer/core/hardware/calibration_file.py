"""The ``calibration:`` block of a device file (``docs/device-file.md``): read, checked and written back.

::

    calibration:
      matrix:                       # per precision; ``also`` lists precisions the same curve is used for
        bf16: {fraction: 0.83, latency: 5.6 us, sharpness: 0.87, also: [fp16], source: xla, fit: {...}}
      vector: {fraction: 0.89, latency: 2.5 us, sharpness: 1.0, source: bw, fit: {...}}

``fit`` records the provenance: ``data`` (the measurement file), ``split``, ``points``, ``method``, ``date``,
``mape`` (on the fitted points, a fraction) and an optional ``note``.
"""

from __future__ import annotations

from typing import Any

from explorer.core.calibration.model import Curve, DeviceCalibration, Fit
from explorer.core.hardware.cited_reader import Reader
from explorer.core.precision import PRECISIONS
from explorer.core.units import UnitError, parse_si

CURVE_KEYS = {"fraction", "latency", "sharpness", "also", "source", "note", "fit"}
FIT_KEYS = {"data", "points", "method", "date", "split", "mape", "note"}


def read_calibration(r: Reader, raw: Any) -> DeviceCalibration | None:
    """The block as a :class:`DeviceCalibration`; every problem is reported on ``r`` (None when absent)."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or set(raw) - {"matrix", "vector"}:
        r.problem("calibration", "expected a mapping with matrix and/or vector")
        return None
    matrix: dict[str, Curve] = {}
    raw_matrix = raw.get("matrix") or {}
    if not isinstance(raw_matrix, dict):
        r.problem("calibration.matrix", "expected a mapping from precision to a curve")
        raw_matrix = {}
    for precision, item in raw_matrix.items():
        field = f"calibration.matrix.{precision}"
        if precision not in PRECISIONS:
            r.problem(field, f"unknown precision; expected one of {', '.join(PRECISIONS)}")
            continue
        curve, also = _curve(r, item, field)
        if curve is None:
            continue
        matrix[precision] = curve
        for other in also:
            if other not in PRECISIONS or other == precision or other in raw_matrix:
                r.problem(f"{field}.also", f"'{other}' must be another precision without a curve of its own")
                continue
            matrix[other] = Curve(curve.fraction, curve.latency, curve.sharpness, curve.source, curve.fit,
                                  curve.note, measured_as=precision)
    vector = None
    if raw.get("vector") is not None:
        vector, also = _curve(r, raw["vector"], "calibration.vector")
        if also:
            r.problem("calibration.vector.also", "the vector curve holds for every precision; 'also' is for matrix")
    return DeviceCalibration(matrix, vector)


def _curve(r: Reader, raw: Any, field: str) -> tuple[Curve | None, tuple[str, ...]]:
    if not isinstance(raw, dict):
        r.problem(field, "expected a mapping with fraction, latency and sharpness")
        return None, ()
    unknown = set(raw) - CURVE_KEYS
    if unknown:
        r.problem(field, f"unknown keys {sorted(unknown)}")
    numbers = {}
    for key in ("fraction", "sharpness"):
        v = raw.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            r.problem(f"{field}.{key}", f"expected a number, got {v!r}")
            return None, ()
        numbers[key] = float(v)
    if raw.get("latency") is None:
        r.problem(f"{field}.latency", "is required (a time, e.g. '5 us')")
        return None, ()
    try:
        latency = parse_si(raw["latency"], "time", f"{field}.latency")
    except UnitError as exc:
        r.problems.append(f"{r.where}: {r.owner}: {exc}")
        return None, ()
    source = raw.get("source")
    if source is None and r.require_sources:
        r.problem(field, "has no source (a calibration in the catalog must cite its measurements)")
    elif source is not None and str(source) not in r.source_keys:
        r.problem(f"{field}.source", f"'{source}' is not a key of 'sources'")
    also = raw.get("also") or []
    if not isinstance(also, list) or not all(isinstance(a, str) for a in also):
        r.problem(f"{field}.also", "expected a list of precisions")
        also = []
    try:
        curve = Curve(numbers["fraction"], latency, numbers["sharpness"],
                      None if source is None else str(source), _fit(r, raw.get("fit"), f"{field}.fit"),
                      None if raw.get("note") is None else str(raw["note"]))
    except ValueError as exc:
        r.problem(field, str(exc))
        return None, ()
    return curve, tuple(also)


def _fit(r: Reader, raw: Any, field: str) -> Fit | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or "data" not in raw or "points" not in raw:
        r.problem(field, "expected a mapping with at least data and points")
        return None
    unknown = set(raw) - FIT_KEYS
    if unknown:
        r.problem(field, f"unknown keys {sorted(unknown)}")
    points = raw["points"]
    if isinstance(points, bool) or not isinstance(points, int) or points < 1:
        r.problem(f"{field}.points", f"expected a positive whole number, got {points!r}")
        return None
    mape = raw.get("mape")
    if mape is not None and (isinstance(mape, bool) or not isinstance(mape, (int, float)) or mape < 0):
        r.problem(f"{field}.mape", f"expected a fraction >= 0, got {mape!r}")
        mape = None
    text = {k: (None if raw.get(k) is None else str(raw[k])) for k in ("method", "date", "split", "note")}
    return Fit(str(raw["data"]), points, text["method"] or Fit.method, text["date"], text["split"],
               None if mape is None else float(mape), text["note"])


# ----------------------------------------------------------------------------------------------- writing
def latency_text(seconds: float) -> str:
    return f"{seconds * 1e6:.4g} us"


def calibration_to_dict(cal: DeviceCalibration | None) -> dict | None:
    """The file form of ``cal`` (the inverse of :func:`read_calibration`); None when there is none."""
    if cal is None or (not cal.matrix and cal.vector is None):
        return None
    out: dict[str, Any] = {}
    if cal.matrix:
        own = {p: c for p, c in cal.matrix.items() if c.measured_as is None}
        matrix = {}
        for p, c in own.items():
            also = [q for q, d in cal.matrix.items() if d.measured_as == p]
            matrix[p] = _curve_out(c, also)
        out["matrix"] = matrix
    if cal.vector is not None:
        out["vector"] = _curve_out(cal.vector, [])
    return out


def _curve_out(c: Curve, also: list[str]) -> dict:
    out: dict[str, Any] = {"fraction": round(c.fraction, 4), "latency": latency_text(c.latency),
                           "sharpness": round(c.sharpness, 4)}
    if also:
        out["also"] = also
    if c.source is not None:
        out["source"] = c.source
    if c.note is not None:
        out["note"] = c.note
    if c.fit is not None:
        f = c.fit
        fit = {"data": f.data, "split": f.split, "points": f.points, "method": f.method, "date": f.date,
               "mape": f.mape, "note": f.note}
        out["fit"] = {k: v for k, v in fit.items() if v is not None}
    return out
