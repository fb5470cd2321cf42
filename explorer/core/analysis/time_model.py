"""The analysis as one time model shows it: ``ideal`` (the roofline with efficiency factors, ``time``) or
``calibrated`` (fitted to measured kernels, ``calibrated_time``; docs/calibration.md).

:func:`as_time_model` returns the analysis itself for ``ideal``, and for ``calibrated`` a copy whose ``time`` per
row and whose totals that follow from time (``time``, ``throughput``, ``achieved_flops``, ``utilization``) are the
calibrated model's. Everything computed from time downstream (the roofline's attained points, cost per
million, the planner) then follows the switch without knowing of it. FLOPs, bytes, energy, the roofline's
bound and the ideal fields (``ideal_time``, ``calibrated_time``) are the same in both. Rows the device has no
curve for keep the ideal model's time (``calibrated`` False), as in the CLI.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .evaluate import MODELS, ModelAnalysis

TITLES = {"ideal": "ideal model", "calibrated": "calibrated model"}


def as_time_model(analysis: ModelAnalysis, model: str) -> ModelAnalysis:
    """``analysis`` with the times of ``model`` ('ideal' or 'calibrated')."""
    if model not in MODELS:
        raise ValueError(f"time_model: expected one of {', '.join(MODELS)}, got {model!r}")
    if model == "ideal":
        return analysis
    tot = analysis.totals
    t_new = tot.calibrated_time
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = np.where(t_new > 0, tot.time / t_new, 1.0)  # the ideal time over the calibrated one, per device
    totals = replace(tot, time=t_new, throughput=tot.throughput * scale, achieved_flops=tot.achieved_flops * scale,
                     utilization=tot.utilization * scale)
    return replace(analysis, time=analysis.calibrated_time, totals=totals)


def model_title(model: str, analysis: ModelAnalysis | None = None) -> str:
    """What a panel's title says it shows: 'ideal model', 'calibrated model', or for the calibrated model on
    devices of which none is calibrated, that it shows the ideal times."""
    if model not in TITLES:
        raise ValueError(f"time_model: expected one of {', '.join(TITLES)}, got {model!r}")
    if model == "calibrated" and analysis is not None and analysis.calibrated.size and not analysis.calibrated.any():
        return "calibrated model (no device calibrated: ideal times)"
    return TITLES[model]
