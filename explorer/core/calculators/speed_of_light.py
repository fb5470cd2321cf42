"""Speed-of-light latency floor on a die (Napkin Math 1.2, R:1085-1096).

``t_signal = d / (f_c * c)`` for a distance ``d`` (m) and a propagation speed ``f_c`` times the vacuum
speed of light ``c`` (on-chip wires are RC-limited; the chapter assumes about 0.5 c); at clock ``f`` the
cycle is ``1 / f`` and the trip takes ``t_signal * f`` cycles. A memory latency (e.g. HBM ~100 ns in
Table 10, ~300 ns in the KWS lighthouse) converts to cycles the same way: the reason operands must sit in
registers and SRAM next to the arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._common import Number, Preset, fraction, non_negative, positive, scalar_or_array

SPEED_OF_LIGHT = 299_792_458.0  # m/s


@dataclass(frozen=True)
class SpeedOfLightResult:
    signal_time: Number  # s
    cycle_time: Number  # s
    cycles: Number  # signal time in clock cycles
    reach_per_cycle: Number  # m a signal covers in one cycle
    fits_in_one_cycle: bool | np.ndarray
    memory_latency_cycles: Number


def speed_of_light(
    distance: float | np.ndarray,
    velocity_fraction: float | np.ndarray,
    clock: float | np.ndarray,
    memory_latency: float | np.ndarray = 0.0,
) -> SpeedOfLightResult:
    """Time for a signal to cross ``distance`` metres at ``velocity_fraction`` of c, at ``clock`` Hz."""
    d = non_negative(distance, "distance")
    v = fraction(velocity_fraction, "velocity_fraction", allow_zero=False)
    f = positive(clock, "clock")
    lat = non_negative(memory_latency, "memory_latency")
    speed = np.asarray(v) * SPEED_OF_LIGHT
    t = np.asarray(d) / speed
    cycles = t * np.asarray(f)
    fits = cycles <= 1.0
    return SpeedOfLightResult(
        scalar_or_array(t),
        scalar_or_array(1.0 / np.asarray(f)),
        scalar_or_array(cycles),
        scalar_or_array(speed / np.asarray(f)),
        bool(fits) if np.ndim(fits) == 0 else fits,
        scalar_or_array(np.asarray(lat) * np.asarray(f)),
    )


PRESETS: list[Preset] = [
    Preset(
        "20 mm across an H100-class die, 0.5c, 2 GHz, HBM ~100 ns",
        speed_of_light,
        {"distance": 20e-3, "velocity_fraction": 0.5, "clock": 2e9, "memory_latency": 100e-9},
        "E39, Napkin Math 1.2, R:1085-1096; Table 10",
        "about 130 ps (133 ps) vs a 500 ps cycle; HBM 100+ cycles",
    ),
    Preset(
        "Same die, KWS lighthouse HBM latency ~300 ns",
        speed_of_light,
        {"distance": 20e-3, "velocity_fraction": 0.5, "clock": 2e9, "memory_latency": 300e-9},
        "E38, Lighthouse 1.2, R:994-1012",
        "600 cycles",
    ),
]
