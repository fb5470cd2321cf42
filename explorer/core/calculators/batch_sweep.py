"""Batch size as the lever on arithmetic intensity, and the decode tokens-per-second ceiling.

Dense layer ``(B x M) . (M x N)`` (chapter eq. 6, R:1459; Napkin Math 1.8, R:1458-1468)::

    I(B) = 2 B M N / (p (B M + M N + B N))        [FLOP/byte]

FLOP counts 2 per multiply-accumulate; the traffic counts input, weights and output once each (ideal
on-chip reuse); ``p`` is bytes per element (2 for FP16). As ``B -> inf``, ``I -> 2 M N / (p (M + N))``.
Setting ``I(B)`` equal to a device's ridge ``R_peak / BW`` gives the batch where the layer turns
compute-bound: ``B* = r p M N / (2 M N - r p (M + N))`` (derived; infinite when the ridge is above the
asymptote).

Decode at batch ``b`` (Napkin Math 1.9, R:1477-1504): every step reads all weights (``P x bytes``; KV
cache and activations ignored, as in the chapter) and does ``2 P`` FLOP per token, so ``I = 2 b / bytes``
and the tokens-per-second ceiling is ``b / max(P bytes / BW, 2 P b / R_peak)``; at batch 1 on a
memory-bound device that is ``BW / (P x bytes)``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from ._common import Number, Preset, as_number, positive, positive_int, scalar_or_array


@runtime_checkable
class RidgeDevice(Protocol):
    """What the sweep needs from a device: its name, dense peak (FLOP/s) and memory bandwidth (B/s).

    The peak must be for the precision the layer runs at; the ridge is ``peak_flops / bandwidth``.
    """

    name: str
    peak_flops: float
    bandwidth: float


@dataclass(frozen=True)
class DeviceRidge:
    """A plain :class:`RidgeDevice` (used for the chapter's devices and by tests)."""

    name: str
    peak_flops: float
    bandwidth: float

    @property
    def ridge(self) -> float:
        return self.peak_flops / self.bandwidth


# Dense FP16 tensor peaks and HBM bandwidths the chapter uses (reference notes, part 2, section 0.1).
CHAPTER_DEVICES: tuple[DeviceRidge, ...] = (
    DeviceRidge("V100 FP16", 125e12, 900e9),
    DeviceRidge("A100 FP16", 312e12, 2039e9),
    DeviceRidge("T4 FP16", 65e12, 320e9),
    DeviceRidge("H100 FP16", 989e12, 3.35e12),
)


@dataclass(frozen=True)
class RidgeCrossing:
    """Where the layer's intensity meets one device's ridge, and the roofline over the swept batches."""

    device: str
    ridge: float
    crossing_batch: float  # inf when the layer never becomes compute-bound on this device
    attainable_flops: Number  # min(peak, BW * I(B)), FLOP/s, per swept batch
    compute_bound: bool | np.ndarray


@dataclass(frozen=True)
class BatchSweepResult:
    batch: Number
    flops: Number
    bytes_moved: Number
    intensity: Number
    asymptote: float
    crossings: tuple[RidgeCrossing, ...]


def dense_layer_intensity(batch: Number, m: float, n: float, bytes_per_element: float = 2.0) -> Number:
    """Eq. 6: ``2BMN / (p(BM + MN + BN))`` in FLOP/byte."""
    b = positive(batch, "batch")
    m, n = positive(m, "m"), positive(n, "n")
    bytes_per_element = positive(bytes_per_element, "bytes_per_element")
    return 2.0 * b * m * n / (bytes_per_element * (b * m + m * n + b * n))


def crossing_batch(ridge: float, m: float, n: float, bytes_per_element: float = 2.0) -> float:
    """The batch at which eq. 6 reaches ``ridge`` (inf if the asymptote is at or below the ridge)."""
    r = positive(ridge, "ridge")
    denominator = 2.0 * m * n - r * bytes_per_element * (m + n)
    if denominator <= 0:
        return float("inf")
    return float(r * bytes_per_element * m * n / denominator)


def batch_sweep(
    batch: float | np.ndarray,
    m: int,
    n: int,
    bytes_per_element: float = 2.0,
    devices: Iterable[RidgeDevice] = CHAPTER_DEVICES,
) -> BatchSweepResult:
    """Intensity of a dense ``(B x m) . (m x n)`` layer for each batch, and each device's ridge crossing."""
    b = positive(batch, "batch")
    m_ = positive_int(m, "m")
    n_ = positive_int(n, "n")
    p = positive(bytes_per_element, "bytes_per_element")
    flops = 2.0 * np.asarray(b) * m_ * n_
    moved = p * (np.asarray(b) * m_ + m_ * n_ + np.asarray(b) * n_)
    intensity = flops / moved
    crossings = []
    for dev in devices:
        peak = positive(dev.peak_flops, f"{dev.name}.peak_flops")
        bw = positive(dev.bandwidth, f"{dev.name}.bandwidth")
        ridge = peak / bw
        attainable = np.minimum(peak, bw * intensity)
        bound = intensity >= ridge
        crossings.append(
            RidgeCrossing(
                dev.name,
                float(ridge),
                crossing_batch(ridge, m_, n_, p),
                scalar_or_array(attainable),
                bool(bound) if np.ndim(bound) == 0 else bound,
            )
        )
    return BatchSweepResult(
        scalar_or_array(b),
        scalar_or_array(flops),
        scalar_or_array(moved),
        scalar_or_array(intensity),
        2.0 * m_ * n_ / (p * (m_ + n_)),
        tuple(crossings),
    )


@dataclass(frozen=True)
class DecodeResult:
    weight_bytes: float
    flops_per_token: float
    intensity: float
    attainable_flops: float
    utilization: float
    step_time: float
    tokens_per_second: float
    bandwidth_tokens_per_second: float
    memory_bound: bool


def decode_ceiling(
    parameters: float, bytes_per_parameter: float, bandwidth: float, peak_flops: float, batch: int = 1
) -> DecodeResult:
    """Autoregressive decode ceiling. ``tokens_per_second`` counts tokens of all ``batch`` sequences.

    ``bandwidth_tokens_per_second = batch * BW / (P * bytes)`` is the memory ceiling; the result is the
    lower of it and the compute ceiling ``R_peak / (2 P)``. ``utilization`` is attainable / peak FLOP/s.
    """
    p = positive(parameters, "parameters")
    bpp = positive(bytes_per_parameter, "bytes_per_parameter")
    bw = positive(bandwidth, "bandwidth")
    peak = positive(peak_flops, "peak_flops")
    b = positive_int(batch, "batch")
    weight_bytes = float(as_number(p * bpp, "weight_bytes"))
    flops_token = 2.0 * p
    intensity = flops_token * b / weight_bytes
    attainable = min(peak, bw * intensity)
    t_mem = weight_bytes / bw
    t_cmp = flops_token * b / peak
    step = max(t_mem, t_cmp)
    return DecodeResult(
        weight_bytes,
        flops_token,
        intensity,
        attainable,
        attainable / peak,
        step,
        b / step,
        b * bw / weight_bytes,
        t_mem >= t_cmp,
    )


PRESETS: list[Preset] = [
    Preset(
        "Dense 2048x2048 FP16, batch 1",
        batch_sweep,
        {"batch": 1.0, "m": 2048, "n": 2048},
        "E-8, Napkin Math 1.8, R:1458-1468",
        "AI about 1 (0.999)",
    ),
    Preset(
        "Dense 2048x2048 FP16, batch 32",
        batch_sweep,
        {"batch": 32.0, "m": 2048, "n": 2048},
        "E-8 / E-6, R:1398-1468",
        "AI about 31 (31.03)",
    ),
    Preset(
        "Dense 2048x2048 FP16, batch 256",
        batch_sweep,
        {"batch": 256.0, "m": 2048, "n": 2048},
        "E-8, R:1458-1468",
        "AI 204.8, compute-bound on A100",
        notes="Ridge crossings (derived, not printed): A100 B~180, T4 ~254, H100 ~415; asymptote 1024.",
    ),
    Preset(
        "GPT-2 XL decode on A100 (1.5B params, FP16, batch 1)",
        decode_ceiling,
        {
            "parameters": 1.5e9,
            "bytes_per_parameter": 2.0,
            "bandwidth": 2039e9,
            "peak_flops": 312e12,
            "batch": 1,
        },
        "E-9, Napkin Math 1.9, R:1477-1504",
        "AI 1 FLOP/byte, 2.04 TFLOP/s, about 0.7% of peak (0.65%)",
    ),
    Preset(
        "GPT-2 XL decode on A100, INT8 weights",
        decode_ceiling,
        {
            "parameters": 1.5e9,
            "bytes_per_parameter": 1.0,
            "bandwidth": 2039e9,
            "peak_flops": 624e12,
            "batch": 1,
        },
        "M19 precision effects (derived)",
        "half the bytes: twice the tokens/s",
    ),
]
