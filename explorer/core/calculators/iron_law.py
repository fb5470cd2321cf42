"""Iron law of ML systems, additive form (chapter R:61-63, footnote 1).

``T = D_vol / BW + O / (R_peak * eta_hw) + L_lat``

* ``D_vol`` data volume moved, bytes; ``BW`` bandwidth of the memory it moves through, bytes/s;
* ``O`` operations in FLOP (one multiply-accumulate = 2 FLOP); ``R_peak`` FLOP/s at the precision the
  kernel actually issues; ``eta_hw`` realised hardware utilisation in (0, 1];
* ``L_lat`` fixed latency (launch overhead and the like), seconds.

The chapter adds the terms: no overlap between data movement and compute is assumed, so the total is an
upper bound of an overlapped kernel, whose time would be ``max(...) + L_lat`` (reported as
``overlapped_time`` for comparison). The older source writes the compute term ``O / R_peak * eta``; the
rendered text's ``O / (R_peak * eta_hw)`` is used here. The "memory wall" (Definition 1.4, R:950-956) is
reached when the data term dominates.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._common import Number, Preset, fraction, non_negative, positive, scalar_or_array

TERM_NAMES = ("data movement", "compute", "fixed latency")


@dataclass(frozen=True)
class IronLawResult:
    memory_time: Number
    compute_time: Number
    latency_time: Number
    total_time: Number
    overlapped_time: Number
    dominant_term: str | np.ndarray
    memory_wall: bool | np.ndarray
    arithmetic_intensity: Number
    effective_ridge: Number

    @property
    def shares(self) -> tuple[Number, Number, Number]:
        """Each term's fraction of the total time (data, compute, latency)."""
        total = np.asarray(self.total_time, float)
        with np.errstate(divide="ignore", invalid="ignore"):
            return tuple(
                scalar_or_array(np.where(total > 0, np.asarray(t) / np.where(total > 0, total, 1), 0))
                for t in (self.memory_time, self.compute_time, self.latency_time)
            )  # type: ignore


def iron_law(
    data_bytes: float | np.ndarray,
    bandwidth: float | np.ndarray,
    operations: float | np.ndarray,
    peak_flops: float | np.ndarray,
    efficiency: float | np.ndarray = 1.0,
    fixed_latency: float | np.ndarray = 0.0,
) -> IronLawResult:
    """Split a kernel's (or a step's) time into the three iron-law terms, in seconds.

    ``arithmetic_intensity = operations / data_bytes`` (FLOP/byte; ``inf`` when no data moves) and
    ``effective_ridge = peak_flops * efficiency / bandwidth`` tell which side of the roofline it is on.
    """
    d = non_negative(data_bytes, "data_bytes")
    bw = positive(bandwidth, "bandwidth")
    o = non_negative(operations, "operations")
    peak = positive(peak_flops, "peak_flops")
    eta = fraction(efficiency, "efficiency", allow_zero=False)
    lat = non_negative(fixed_latency, "fixed_latency")
    t_mem = np.asarray(d) / np.asarray(bw)
    t_cmp = np.asarray(o) / (np.asarray(peak) * np.asarray(eta))
    t_mem, t_cmp, t_lat = np.broadcast_arrays(t_mem, t_cmp, np.asarray(lat, float))
    stacked = np.stack([t_mem, t_cmp, t_lat])
    dominant_idx = np.argmax(stacked, axis=0)
    names = np.asarray(TERM_NAMES, dtype=object)[dominant_idx]
    wall = (dominant_idx == 0) & (t_mem > 0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        intensity = np.where(np.asarray(d) > 0, np.asarray(o) / np.where(np.asarray(d) > 0, d, 1), np.inf)
    ridge = np.asarray(peak) * np.asarray(eta) / np.asarray(bw)
    scalar = np.ndim(dominant_idx) == 0
    return IronLawResult(
        memory_time=scalar_or_array(t_mem),
        compute_time=scalar_or_array(t_cmp),
        latency_time=scalar_or_array(t_lat),
        total_time=scalar_or_array(t_mem + t_cmp + t_lat),
        overlapped_time=scalar_or_array(np.maximum(t_mem, t_cmp) + t_lat),
        dominant_term=str(names) if scalar else names,
        memory_wall=bool(wall) if scalar else wall,
        arithmetic_intensity=scalar_or_array(intensity),
        effective_ridge=scalar_or_array(ridge),
    )


_A100_BW = 2039e9  # A100 HBM2e, bytes/s (constants, R:233)
_A100_FP16 = 312e12  # A100 FP16/BF16 tensor peak, FLOP/s
_H100_FP8 = 1979e12  # H100 FP8 tensor peak (dense), FLOP/s

PRESETS: list[Preset] = [
    Preset(
        "Dense layer (32x2048)x(2048x2048) FP16 on A100",
        iron_law,
        {
            "data_bytes": 8_650_752.0,
            "bandwidth": _A100_BW,
            "operations": 2 * 32 * 2048 * 2048.0,
            "peak_flops": _A100_FP16,
            "efficiency": 1.0,
            "fixed_latency": 0.0,
        },
        "E-6, Napkin Math 1.6, R:1398-1420",
        "AI 31 FLOP/byte, memory-bound (63.3 TFLOP/s, 20.3%)",
    ),
    Preset(
        "LayerNorm (32, 512, 768) FP16 on A100",
        iron_law,
        {
            "data_bytes": 50_334_720.0,
            "bandwidth": _A100_BW,
            "operations": 6 * 12_582_912.0,
            "peak_flops": _A100_FP16,
            "efficiency": 1.0,
            "fixed_latency": 0.0,
        },
        "E-7, Napkin Math 1.7, R:1423-1443",
        "AI 1.5 FLOP/byte, 102x below the ridge",
    ),
    Preset(
        "70B FP16 decode token at 1 TB/s",
        iron_law,
        {
            "data_bytes": 140e9,
            "bandwidth": 1e12,
            "operations": 2 * 70e9,
            "peak_flops": _A100_FP16,
            "efficiency": 1.0,
            "fixed_latency": 0.0,
        },
        "E-36, feasibility check (S:13978-14225)",
        "about 140 ms per token; fails a 50 ms target",
        notes="The chapter gives no peak for this check; A100 FP16 is assumed for the compute term.",
    ),
    Preset(
        "GPT-3 training on one H100 (FP8, 60% utilisation)",
        iron_law,
        {
            "data_bytes": 0.0,
            "bandwidth": 3.35e12,
            "operations": 3.14e23,
            "peak_flops": _H100_FP8,
            "efficiency": 0.6,
            "fixed_latency": 0.0,
        },
        "E-25, R:2401",
        "about 5 years at peak; 8.4 years at 60%",
    ),
]
