"""Cost per TFLOP/s, per GB/s, total cost of ownership and cost per million inferences or tokens.

The chapter's cost-performance measures (Table 8 and around it), per selected device:

* price per peak FLOP/s at the analysis precision  = list price / peak
* price per sustained FLOP/s on *this* model        = list price / achieved FLOP/s (total FLOPs / total time)
* price per B/s of main-memory bandwidth             = list price / bandwidth
* TCO over ``years``                                 = list price + electricity
* electricity = average power x hours x PUE x price per kWh, where the **power assumption** is
  ``average power = TDP x utilization`` (the device draws its TDP while busy and nothing while idle; PUE adds
  cooling and facility overhead)
* cost per million inferences (prefill) or tokens (decode) = TCO / (throughput x utilization x seconds owned)
  x 10^6; from the cloud hourly price, = hourly price / (throughput x utilization x 3600 s) x 10^6 (the hours
  rented include the idle share).

Numbers are SI: USD, USD per FLOP/s, USD per B/s, J, s. A figure that cannot be computed is NaN and the reason
is recorded (``reasons``), so a device without a price shows "—" and says why instead of disappearing.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Protocol

import numpy as np

from explorer.core.hardware.device import Cited, Device

from .evaluate import ModelAnalysis

SECONDS_PER_YEAR = 365.25 * 24 * 3600.0  # Julian year
JOULES_PER_KWH = 3.6e6
POWER_ASSUMPTION = (
    "average power = TDP x utilization (busy at TDP, idle draw neglected), "
    "times PUE for cooling and facility overhead"
)
METRICS = (
    "price_per_peak",
    "price_per_sustained",
    "price_per_bandwidth",
    "energy_cost",
    "tco",
    "cost_per_million",
    "cloud_cost_per_million",
)


class CostAssumptionsLike(Protocol):
    """What :func:`compute_cost` reads (the workspace's ``Assumptions`` has these fields)."""

    years: float
    electricity_usd_per_kwh: float
    pue: float
    utilization: float


@dataclass(frozen=True)
class CostAssumptions:
    """Ownership assumptions. Units: years, USD per kWh, PUE ratio (>= 1), utilization fraction (0, 1]."""

    years: float = 3.0
    electricity_usd_per_kwh: float = 0.12
    pue: float = 1.3
    utilization: float = 0.6


def _checked(a: CostAssumptionsLike) -> tuple[float, float, float, float]:
    values = {}
    for name in ("years", "electricity_usd_per_kwh", "pue", "utilization"):
        v = getattr(a, name, None)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"{name}: expected a finite number, got {v!r}")
        values[name] = float(v)
    if values["years"] <= 0:
        raise ValueError(f"years: must be positive, got {values['years']!r}")
    if values["electricity_usd_per_kwh"] < 0:
        raise ValueError(
            f"electricity_usd_per_kwh: must not be negative, got {values['electricity_usd_per_kwh']!r}"
        )
    if values["pue"] < 1:
        raise ValueError(f"pue: must be at least 1, got {values['pue']!r}")
    if not 0 < values["utilization"] <= 1:
        raise ValueError(f"utilization: must be in (0, 1], got {values['utilization']!r}")
    return values["years"], values["electricity_usd_per_kwh"], values["pue"], values["utilization"]


@dataclass(frozen=True, eq=False)
class CostResult:
    """Per device (D,) arrays in SI units (USD, USD/(FLOP/s), USD/(B/s), W, J); NaN where unknown."""

    ids: tuple[str, ...]
    names: tuple[str, ...]
    precision: str
    unit: str  # "inference", "token" or "sequence" (one trained, phase train): what cost_per_million counts
    years: float
    electricity_usd_per_kwh: float
    pue: float
    utilization: float
    power_assumption: str
    price: np.ndarray
    peak: np.ndarray
    achieved: np.ndarray  # FLOP/s on this model
    bandwidth: np.ndarray
    tdp: np.ndarray
    cloud_price: np.ndarray  # USD/s
    throughput: np.ndarray  # inferences/s or tokens/s at full use
    price_per_peak: np.ndarray  # USD per FLOP/s
    price_per_sustained: np.ndarray  # USD per FLOP/s
    price_per_bandwidth: np.ndarray  # USD per B/s
    average_power: np.ndarray  # W at the wall (TDP x utilization x PUE)
    energy: np.ndarray  # J over the years owned, at the wall
    energy_cost: np.ndarray  # USD
    tco: np.ndarray  # USD
    units_served: np.ndarray  # inferences or tokens over the years owned
    cost_per_million: np.ndarray  # USD per 10^6 inferences or tokens, from the TCO
    cloud_cost_per_million: np.ndarray  # USD per 10^6 inferences or tokens, from the cloud hourly price
    reasons: Mapping[str, tuple[str, ...]]  # metric -> per device reason ('' where the figure is known)

    def reason(self, metric: str, index: int) -> str:
        return self.reasons[metric][index]

    @functools.cached_property
    def missing(self) -> tuple[str, ...]:
        """Per device, every distinct reason a figure is missing, joined ('' when all are known)."""
        out = []
        for i in range(len(self.ids)):
            seen = dict.fromkeys(r for m in METRICS for r in self.reasons[m][i].split("; ") if r)
            out.append("; ".join(seen))
        return tuple(out)


def _reasons(known: dict[str, np.ndarray], needs: tuple[str, ...], text: dict[str, str]) -> tuple[str, ...]:
    n = len(next(iter(known.values())))
    return tuple("; ".join(text[k] for k in needs if not known[k][i]) for i in range(n))


def compute_cost(analysis: ModelAnalysis, assumptions: CostAssumptionsLike) -> CostResult:
    """Cost figures for every device of ``analysis`` under the ownership ``assumptions``."""
    years, usd_per_kwh, pue, util = _checked(assumptions)
    dev, totals = analysis.devices, analysis.totals
    price, peak, bw, tdp, cloud = dev.price, dev.peak, dev.bandwidth, dev.tdp, dev.cloud_price
    achieved, throughput = totals.achieved_flops, totals.throughput
    seconds = years * SECONDS_PER_YEAR
    with np.errstate(invalid="ignore", divide="ignore"):
        price_per_peak = price / peak
        price_per_sustained = price / achieved
        price_per_bandwidth = price / bw
        average_power = tdp * util * pue
        energy = average_power * seconds
        energy_cost = energy / JOULES_PER_KWH * usd_per_kwh
        tco = price + energy_cost
        units = throughput * util * seconds
        cost_per_million = tco / units * 1e6
        cloud_per_million = cloud / (throughput * util) * 1e6

    def ok(a):
        return np.isfinite(a) & (a > 0)

    has_peak = ok(peak)  # an unknown peak already explains an unknown model time: say it once
    known = {
        "price": ok(price),
        "peak": has_peak,
        "achieved": ok(achieved) | ~has_peak,
        "bandwidth": ok(bw),
        "tdp": ok(tdp),
        "cloud": ok(cloud),
        "throughput": ok(throughput) | ~has_peak,
    }
    text = {
        "price": "no list price in the catalog",
        "peak": f"no {dev.precision} peak",
        "achieved": "model time unknown (no memory bandwidth or no work)",
        "bandwidth": "no memory bandwidth",
        "tdp": "no TDP",
        "cloud": "no cloud hourly price",
        "throughput": "model time unknown (no memory bandwidth or no work)",
    }
    reasons = {
        "price_per_peak": _reasons(known, ("price", "peak"), text),
        "price_per_sustained": _reasons(known, ("price", "peak", "achieved"), text),
        "price_per_bandwidth": _reasons(known, ("price", "bandwidth"), text),
        "energy_cost": _reasons(known, ("tdp",), text),
        "tco": _reasons(known, ("price", "tdp"), text),
        "cost_per_million": _reasons(known, ("price", "tdp", "peak", "throughput"), text),
        "cloud_cost_per_million": _reasons(known, ("cloud", "peak", "throughput"), text),
    }
    return CostResult(
        ids=dev.ids,
        names=tuple(d.name for d in dev.devices),
        precision=dev.precision,
        unit={"tokens/s": "token", "sequences/s": "sequence"}.get(totals.throughput_unit, "inference"),
        years=years,
        electricity_usd_per_kwh=usd_per_kwh,
        pue=pue,
        utilization=util,
        power_assumption=POWER_ASSUMPTION,
        price=price,
        peak=peak,
        achieved=achieved,
        bandwidth=bw,
        tdp=tdp,
        cloud_price=cloud,
        throughput=throughput,
        price_per_peak=price_per_peak,
        price_per_sustained=price_per_sustained,
        price_per_bandwidth=price_per_bandwidth,
        average_power=average_power,
        energy=energy,
        energy_cost=energy_cost,
        tco=tco,
        units_served=units,
        cost_per_million=cost_per_million,
        cloud_cost_per_million=cloud_per_million,
        reasons=MappingProxyType(reasons),
    )


def with_price(device: Device, usd: float | None, note: str = "entered in the cost panel") -> Device:
    """A copy of ``device`` with its list price set (USD) or cleared (None): a what-if, marked as user-
    entered."""
    if usd is None:
        return replace(device, price=None, price_date=None)
    if isinstance(usd, bool) or not isinstance(usd, (int, float)) or not math.isfinite(usd) or usd <= 0:
        raise ValueError(f"price: must be a positive amount in USD, got {usd!r}")
    return replace(device, price=Cited(float(usd), f"{usd:g} USD", None, note), price_date=None)
