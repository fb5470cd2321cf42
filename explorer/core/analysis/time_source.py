"""Where a time comes from (docs/calibration.md, "Where a time comes from"): every time and throughput the product
shows carries one of these labels, so that an ideal number is never mistaken for a measured one.

* ``spec``: computed from datasheet figures only (the ideal model, or the calibrated model on a device with no
  calibration at the precision, or on a link with no stored fit);
* ``partly calibrated``: the calibrated model where only some of the work (matrix or vector rows, or some of the
  links a layout uses) has measured curves, the rest at the ideal model;
* ``calibrated``: every part of the time comes from curves fitted to measurements;
* ``measured``: read from a trace or a measurement file, not predicted (the Fidelity view's measured column).

A label never claims more than its least certain input: one uncalibrated part makes a calibrated time 'partly'.
Pure functions over the analyses (``ModelAnalysis``, ``SystemAnalysis``).
"""

from __future__ import annotations

import numpy as np

SPEC, PARTLY, CALIBRATED, MEASURED = "spec", "partly calibrated", "calibrated", "measured"
SOURCES = (SPEC, PARTLY, CALIBRATED, MEASURED)
MEANING = {
    SPEC: "predicted from datasheet figures (ideal model)",
    PARTLY: "predicted, part of it from curves fitted to measurements, the rest from datasheet figures",
    CALIBRATED: "predicted from curves fitted to measurements",
    MEASURED: "measured (a trace or measurement file)",
}


def _label(parts: np.ndarray) -> str:
    """``parts``: whether each part of a time is calibrated."""
    parts = np.asarray(parts, dtype=bool)
    if not parts.size or not parts.any():
        return SPEC
    return CALIBRATED if parts.all() else PARTLY


def device_time_sources(analysis, model: str) -> tuple[str, ...]:
    """Per device of a single-device analysis (``ModelAnalysis``): the label of its times under ``model``."""
    if model == "ideal":
        return tuple(SPEC for _ in range(len(analysis.devices)))
    if model != "calibrated":
        raise ValueError(f"time_model: expected ideal or calibrated, got {model!r}")
    cal = np.asarray(analysis.calibrated, dtype=bool)
    used = np.asarray(analysis.count) > 0  # rows that run at all
    return tuple(_label(cal[used, j]) for j in range(cal.shape[1]))


def system_time_sources(r) -> tuple[str, ...]:
    """Per layout of a system analysis (``SystemAnalysis``): the label of its step time. Its parts are the
    device's kernels and every domain the layout sends bytes over (``level_bytes`` > 0)."""
    if r.time_model == "ideal":
        return tuple(SPEC for _ in range(len(r)))
    fitted = np.array([d.name in r.calibrated_links for d in r.system.domains], dtype=bool)
    kernels = {SPEC: [False], PARTLY: [True, False], CALIBRATED: [True]}[r.kernel_source]
    out = []
    for k in range(len(r)):
        used = np.asarray(r.level_bytes[k]) > 0
        out.append(_label(np.concatenate([kernels, fitted[used]])))
    return tuple(out)


def heading(label: str) -> str:
    """A label with its meaning, for a line of text: 'spec (predicted from datasheet figures (ideal model))'."""
    return f"{label}: {MEANING[label]}"
