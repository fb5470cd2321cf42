"""Operational energy and emissions of two fleets sized for the same work (Napkin Math 1.10, R:2577-2591).

* Efficiency ``eta_E = R_peak / P_unit`` (FLOP/s per W);
* fleet energy per day ``= units * P_unit * hours_per_day`` (J; the app shows kWh, 1 kWh = 3.6e6 J);
* emissions per year ``= energy per day * days_per_year * CI`` with the grid intensity ``CI`` in kg CO2
  per joule (SI). The rendered text uses the US average 0.429 kg/kWh; the older source 0.4 kg/kWh.

Only operational carbon is modelled; the chapter quantifies no embodied carbon (D-19). Power is the
per-unit draw assumed constant over the hours of use (the chapter uses the rated power).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._common import CalculatorInputError, Preset, non_negative, positive

JOULES_PER_KWH = 3.6e6
US_AVERAGE_GRID = 0.429 / JOULES_PER_KWH  # kg CO2 per J (Grids.US_Avg, rendered text)
OLDER_SOURCE_GRID = 0.4 / JOULES_PER_KWH  # kg CO2 per J (S:14253-14471)


@dataclass(frozen=True)
class FleetCarbon:
    units: float
    power_per_unit: float  # W
    peak_per_unit: float  # FLOP/s
    throughput: float  # FLOP/s of the whole fleet
    efficiency: float  # FLOP/s per W
    energy_per_day: float  # J
    emissions_per_year: float  # kg CO2


@dataclass(frozen=True)
class CarbonResult:
    baseline: FleetCarbon
    replacement: FleetCarbon
    efficiency_gap: float
    energy_saved_per_day: float  # J
    emissions_saved_per_year: float  # kg CO2
    equal_throughput_units: int  # replacement units matching the baseline's throughput


def _fleet(
    units: float, power: float, peak: float, seconds_per_day: float, days: float, ci: float, label: str
) -> FleetCarbon:
    u = float(non_negative(units, f"{label}_units"))
    p = float(positive(power, f"{label}_power"))
    r = float(positive(peak, f"{label}_peak"))
    energy = u * p * seconds_per_day
    return FleetCarbon(u, p, r, u * r, r / p, energy, energy * days * ci)


def carbon_comparison(
    baseline_units: float,
    baseline_power: float,
    baseline_peak: float,
    replacement_units: float,
    replacement_power: float,
    replacement_peak: float,
    grid_intensity: float = US_AVERAGE_GRID,
    hours_per_day: float = 24.0,
    days_per_year: float = 365.0,
) -> CarbonResult:
    """Energy (J) and CO2 (kg) of a baseline fleet and its replacement, and what replacing it saves."""
    hours = float(non_negative(hours_per_day, "hours_per_day"))
    if hours > 24:
        raise CalculatorInputError("hours_per_day", f"cannot exceed 24, got {hours:g}")
    days = float(non_negative(days_per_year, "days_per_year"))
    ci = float(non_negative(grid_intensity, "grid_intensity"))
    seconds = hours * 3600.0
    base = _fleet(baseline_units, baseline_power, baseline_peak, seconds, days, ci, "baseline")
    new = _fleet(replacement_units, replacement_power, replacement_peak, seconds, days, ci, "replacement")
    return CarbonResult(
        base,
        new,
        new.efficiency / base.efficiency,
        base.energy_per_day - new.energy_per_day,
        base.emissions_per_year - new.emissions_per_year,
        math.ceil(base.throughput / new.peak_per_unit - 1e-9),
    )


_CHAPTER_FLEETS = {
    "baseline_units": 1000.0,
    "baseline_power": 100.0,
    "baseline_peak": 1e12,
    "replacement_units": 100.0,
    "replacement_power": 5.0,
    "replacement_peak": 10e12,
}

PRESETS: list[Preset] = [
    Preset(
        "1,000 CPUs vs 100 NPUs, US grid 0.429 kg/kWh",
        carbon_comparison,
        {**_CHAPTER_FLEETS, "grid_intensity": US_AVERAGE_GRID},
        "E-28, Napkin Math 1.10, R:2577-2591",
        "0.01 vs 2 TFLOP/s/W (200x); 2,400 vs 12 kWh/day; saves ~373.9 t CO2/yr",
    ),
    Preset(
        "Same fleets, older source's 0.4 kg/kWh",
        carbon_comparison,
        {**_CHAPTER_FLEETS, "grid_intensity": OLDER_SOURCE_GRID},
        "E-28 source variant, S:14253-14471",
        "~349 t CO2/yr",
    ),
]
