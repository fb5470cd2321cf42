"""Amdahl's law for accelerators and the acceleration wall (chapter Theorem 1.1, R:50-57, eq. 1).

``speedup = 1 / ((1 - p) + p / G)`` where ``p`` is the fraction of the original run time that the
accelerator speeds up (the matrix work) and ``G`` (the chapter's ``G_accel``; ``S`` in the older source)
is the raw hardware gain on that fraction. As ``G -> inf`` the speed-up tends to the ceiling
``1 / (1 - p)``: the serial part (data loading, Python, kernel launches) is the wall.

All quantities are dimensionless ratios. ``p`` and ``G`` may be numpy arrays (broadcast together).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._common import CalculatorInputError, Number, Preset, as_number, fraction, scalar_or_array

# Figure 1 of the chapter (S:382-410): the heat-map grid and its contour levels.
HEATMAP_P = np.linspace(0.8, 0.999, 100)
HEATMAP_G = np.logspace(0.0, 3.0, 100)
HEATMAP_LEVELS = (1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0)


@dataclass(frozen=True)
class AmdahlResult:
    """Speed-up of the whole run and how the accelerated run time splits.

    ``serial_share`` and ``accelerated_share`` are fractions of the *new* run time; ``new_time_fraction``
    is the new run time as a fraction of the original. ``gain_if_g_doubled`` and
    ``gain_if_serial_halved`` are the extra speed-up factors from doubling ``G`` or halving ``1 - p``
    ("how much does faster hardware help vs removing serial work").
    """

    parallel_fraction: Number
    hardware_gain: Number
    speedup: Number
    ceiling: Number
    new_time_fraction: Number
    serial_share: Number
    accelerated_share: Number
    fraction_of_ceiling: Number
    gain_if_g_doubled: Number
    gain_if_serial_halved: Number


def _speedup(p: Number, g: Number) -> Number:
    return 1.0 / ((1.0 - p) + p / g)


def amdahl(parallel_fraction: float | np.ndarray, hardware_gain: float | np.ndarray) -> AmdahlResult:
    """Amdahl speed-up for accelerated fraction ``parallel_fraction`` (0..1) and gain ``hardware_gain``.

    ``hardware_gain`` must be >= 1 and may be ``inf`` (an infinitely fast accelerator), which returns the
    ceiling. ``parallel_fraction == 1`` has no ceiling (``inf``).
    """
    p = fraction(parallel_fraction, "parallel_fraction")
    g = as_number(hardware_gain, "hardware_gain")
    if np.any(np.asarray(g) < 1):
        raise CalculatorInputError("hardware_gain", "must be >= 1 (an accelerator is not slower)")
    p_arr, g_arr = np.broadcast_arrays(np.asarray(p, float), np.asarray(g, float))
    with np.errstate(divide="ignore", invalid="ignore"):
        accelerated = np.where(np.isinf(g_arr), 0.0, p_arr / g_arr)
        serial = 1.0 - p_arr
        new_time = serial + accelerated
        speedup = 1.0 / new_time
        ceiling = np.where(serial > 0, 1.0 / np.where(serial > 0, serial, 1.0), np.inf)
        doubled_time = serial + np.where(np.isinf(g_arr), 0.0, p_arr / (2.0 * g_arr))
        halved_time = serial / 2.0 + accelerated
        fraction_of_ceiling = np.where(
            np.isinf(ceiling), 0.0, speedup / np.where(np.isinf(ceiling), 1, ceiling)
        )
    return AmdahlResult(
        parallel_fraction=scalar_or_array(p_arr),
        hardware_gain=scalar_or_array(g_arr),
        speedup=scalar_or_array(speedup),
        ceiling=scalar_or_array(ceiling),
        new_time_fraction=scalar_or_array(new_time),
        serial_share=scalar_or_array(serial / new_time),
        accelerated_share=scalar_or_array(accelerated / new_time),
        fraction_of_ceiling=scalar_or_array(fraction_of_ceiling),
        gain_if_g_doubled=scalar_or_array(new_time / doubled_time),
        gain_if_serial_halved=scalar_or_array(new_time / halved_time),
    )


@dataclass(frozen=True)
class AmdahlGrid:
    """Speed-up over a grid: ``speedup[i, j]`` is for ``parallel_fractions[i]`` and ``hardware_gains[j]``."""

    parallel_fractions: np.ndarray
    hardware_gains: np.ndarray
    speedup: np.ndarray
    levels: tuple[float, ...]


def amdahl_grid(
    parallel_fractions: np.ndarray = HEATMAP_P,
    hardware_gains: np.ndarray = HEATMAP_G,
    levels: tuple[float, ...] = HEATMAP_LEVELS,
) -> AmdahlGrid:
    """The chapter's heat map (Fig. 1): speed-up over p (rows) x G (columns); contour ``levels`` kept."""
    p = np.atleast_1d(fraction(parallel_fractions, "parallel_fractions"))
    g = np.atleast_1d(as_number(hardware_gains, "hardware_gains"))
    if np.any(g < 1) or np.any(np.isinf(g)):
        raise CalculatorInputError("hardware_gains", "must be finite and >= 1")
    pp, gg = np.meshgrid(p, g, indexing="ij")
    return AmdahlGrid(p.astype(float), g.astype(float), _speedup(pp, gg), tuple(levels))


# The H100 gain of the rendered text: 1979 TOPS INT8 vs ~8 TOPS on the baseline CPU, rounded by hand to 247.
H100_GAIN = 247.0

PRESETS: list[Preset] = [
    Preset(
        "ResNet-50 inference on H100 (p = 0.95, G = 247)",
        amdahl,
        {"parallel_fraction": 0.95, "hardware_gain": H100_GAIN},
        "E2, Lighthouse 1.1, R:81-87",
        "18.6x (1/(0.05 + 0.0038))",
    ),
    Preset(
        "GPT-2 token generation on H100 (p = 0.80, G = 247)",
        amdahl,
        {"parallel_fraction": 0.80, "hardware_gain": H100_GAIN},
        "E3, R:89-93",
        "4.9x, ceiling 5x",
    ),
    Preset(
        "Data loading is 10% of the run (p = 0.9, G -> inf)",
        amdahl,
        {"parallel_fraction": 0.90, "hardware_gain": float("inf")},
        "E1, R:57",
        "10x",
    ),
    Preset(
        "1,000x faster GPU, slow data loading (p = 0.8, G = 1000)",
        amdahl,
        {"parallel_fraction": 0.80, "hardware_gain": 1000.0},
        "E4, checkpoint S:461",
        "at most 5x",
    ),
    Preset(
        "Older source: ResNet-50 with G = 500",
        amdahl,
        {"parallel_fraction": 0.95, "hardware_gain": 500.0},
        "E2 source variant, S:477-772",
        "19.3x (printed '19x')",
    ),
    Preset(
        "100x raw throughput, p = 0.95",
        amdahl,
        {"parallel_fraction": 0.95, "hardware_gain": 100.0},
        "footnote S:246 ('5-20x end-to-end')",
        "16.8x",
    ),
]
