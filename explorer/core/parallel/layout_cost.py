"""Cost per million tokens of each layout on a system: the third objective beside throughput and latency.

The cost model is the cost panel's (:mod:`explorer.core.analysis.cost`), applied to the whole system:

    TCO per device   = price + TDP x utilization x PUE x seconds owned x USD per kWh / 3.6e6 J
    cost per million = devices x TCO per device / (throughput x utilization x seconds owned) x 10^6

in USD per 10^6 tokens (decode) or sequences (prefill), ``throughput`` the system's (:class:`SystemAnalysis`).
The price per device is the planner's quote for the device when there is one, else the catalog's list price. The
chassis, switches and network are not priced (no sourced figures; :data:`.sizing.NOT_PRICED`).

Within one system every layout has the same devices and price, so ranking by cost is ranking by throughput (the
TCO is a constant over the layouts); the objective matters across systems and where prices are missing: a layout
without a price (or TDP) has an unknown cost (NaN, never 0), ranks after every priced one, and carries the reason.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from explorer.core.analysis.cost import (
    JOULES_PER_KWH,
    SECONDS_PER_YEAR,
    CostAssumptions,
    CostAssumptionsLike,
    _checked,  # the cost panel's checks of the ownership assumptions
)
from explorer.core.hardware.device import Device

from .system_pass import SystemAnalysis


def device_price(device: Device, quotes: Mapping[str, float] | None = None) -> tuple[float, str]:
    """(USD per device, where it comes from: "quote", "list price" or "" when neither is known)."""
    if quotes and device.id in quotes:
        usd = float(quotes[device.id])
        if not math.isfinite(usd) or usd <= 0:
            raise ValueError(f"price: the quote for {device.id} must be a positive amount, got {usd!r}")
        return usd, "quote"
    if device.price is not None and device.price.value > 0:
        return float(device.price.value), "list price"
    return math.nan, ""


@dataclass(frozen=True, eq=False)
class LayoutCost:
    """USD; ``cost_per_million`` (K,) per 10^6 of ``unit``; ``reason`` says why it is unknown ("" when known)."""

    price_per_device: float
    price_source: str  # "quote" | "list price" | ""
    tdp: float  # W per device
    tco_per_device: float  # USD over the years owned
    unit: str  # "token" | "sequence"
    years: float
    utilization: float
    cost_per_million: np.ndarray
    reason: str

    @property
    def priced(self) -> bool:
        return not self.reason


def layout_cost(r: SystemAnalysis, quotes: Mapping[str, float] | None = None,
                assumptions: CostAssumptionsLike = CostAssumptions()) -> LayoutCost:
    """Cost per million tokens (decode) or sequences (prefill) of every layout of ``r``."""
    years, usd_per_kwh, pue, util = _checked(assumptions)
    price, source = device_price(r.device, quotes)
    tdp = float(r.device.tdp.value) if r.device.tdp is not None else math.nan
    seconds = years * SECONDS_PER_YEAR
    tco = price + tdp * util * pue * seconds / JOULES_PER_KWH * usd_per_kwh
    with np.errstate(invalid="ignore", divide="ignore"):
        per_million = r.system.devices * tco / (np.asarray(r.throughput, dtype=float) * util * seconds) * 1e6
    missing = [why for why, ok in ((f"no price for {r.device.id} (no quote, no list price in the catalog)",
                                    math.isfinite(price)),
                                   (f"no TDP for {r.device.id} (its electricity is unknown)", math.isfinite(tdp)))
               if not ok]
    if missing:
        per_million = np.full(len(r), math.nan)
    return LayoutCost(price_per_device=price, price_source=source, tdp=tdp, tco_per_device=tco,
                      unit="token" if r.throughput_unit == "tokens/s" else "sequence", years=years,
                      utilization=util, cost_per_million=per_million, reason="; ".join(missing))
