"""Time and cost to train on T tokens, per layout: steps, wall time, device-hours, energy, rent and a TCO share.

    steps = T / (global batch x sequence length)          (tokens per step)
    time  = steps x step time
    energy = devices x TDP x PUE x time                    (every device busy at its TDP for the whole run: the
                                                            cost panel's power assumption at utilization 1)
    electricity = energy / 3.6e6 J/kWh x price per kWh
    rent = devices x the device's cloud price per hour x hours
    TCO share = devices x list price x time / years of ownership + electricity   (straight-line depreciation)

Unknown prices or TDP stay NaN (never guessed); chassis, switches and network are not priced.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from explorer.core.analysis.cost import JOULES_PER_KWH, SECONDS_PER_YEAR, CostAssumptions
from explorer.core.analysis.device_arrays import device_arrays

from .step import PRECISION, TrainingAnalysis


@dataclass(frozen=True, eq=False)
class TrainingCost:
    """Arrays over layouts (K,): SI (s, J) and USD; NaN where a price or TDP is unknown."""

    tokens: float
    steps: float
    time_s: np.ndarray
    device_hours: np.ndarray
    energy_j: np.ndarray
    electricity_usd: np.ndarray
    rent_usd: np.ndarray
    tco_usd: np.ndarray
    assumptions: CostAssumptions


DEFAULT_ASSUMPTIONS = CostAssumptions()


def cost_to_train(r: TrainingAnalysis, tokens: float,
                  assumptions: CostAssumptions = DEFAULT_ASSUMPTIONS) -> TrainingCost:
    if not (np.isfinite(tokens) and tokens > 0):
        raise ValueError(f"tokens: must be a positive number, got {tokens!r}")
    dev = device_arrays([r.device], PRECISION)
    tdp, usd_per_s, price = float(dev.tdp[0]), float(dev.cloud_price[0]), float(dev.price[0])
    n = r.system.devices
    steps = tokens / (r.setup.global_batch * r.setup.seq_len)
    time = steps * r.step_time
    energy = n * tdp * assumptions.pue * time
    electricity = energy / JOULES_PER_KWH * assumptions.electricity_usd_per_kwh
    rent = n * usd_per_s * time
    tco = n * price * time / (assumptions.years * SECONDS_PER_YEAR) + electricity
    return TrainingCost(tokens=float(tokens), steps=float(steps), time_s=time, device_hours=n * time / 3600.0,
                        energy_j=energy, electricity_usd=electricity, rent_usd=rent, tco_usd=tco,
                        assumptions=assumptions)
