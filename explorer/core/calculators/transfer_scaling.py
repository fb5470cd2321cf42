"""Host-device transfer and multi-chip scaling (R:1137-1190; R:2430-2458; Fallacy E-32, R:2624).

**Per direction vs bidirectional.** Link bandwidths are quoted two ways: NVLink 3.0 on the A100 is
"600 GB/s" *bidirectional* (the sum of both directions), i.e. 300 GB/s per direction, which is what a
one-way stream (a host-to-device copy, a gradient push) gets; the rendered text uses 300 GB/s, the older
source used 600 GB/s and so printed half the time. Every function here takes the quoted figure plus
``bidirectional_rating``: when True the per-direction bandwidth is half of it. The PCIe figures the
chapter uses (Gen3 15.75, Gen4 32, Gen5 64 GB/s for x16) are per direction.

Transfer: ``t = latency + bytes / BW_dir``. The host pipeline (Fig. 13) copies inputs in, computes and
copies results out: ``t_in + t_compute + t_out`` in sequence, or ``max(t_in, t_compute, t_out)`` per
batch in steady state when copies overlap compute (double buffering on a full-duplex link, M-17).

Scaling (Q ``FpMultigpuScalingCalc``): gradient sync ``T_sync = payload / BW_dir``, overhead
``T_sync / T_step``; with ``overlap`` (the fraction of ``T_sync`` hidden behind compute, never more than
``T_step``) the exposed time is ``T_exp``, speed-up ``S = N T_step / (T_step + T_exp)``, efficiency
``S / N``. Like the chapter, the payload crosses the link once, whatever ``N`` (a ring all-reduce would
move ``2 (N-1) / N`` payloads). The Amdahl view, ``S_max = 1 / s`` for an exposed serial fraction
``s`` (footnote 41, R:2446), is a separate, labelled bound (see D-11): :func:`communication_cap`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._common import (
    CalculatorInputError,
    Number,
    Preset,
    as_number,
    fraction,
    non_negative,
    positive,
    scalar_or_array,
)
from .amdahl import amdahl

# name -> (quoted bandwidth in B/s, quoted figure is bidirectional?)
LINKS: dict[str, tuple[float, bool]] = {
    "PCIe Gen3 x16": (15.75e9, False),
    "PCIe Gen4 x16": (32e9, False),
    "PCIe Gen5 x16": (64e9, False),
    "NVLink 3.0 (A100)": (600e9, True),
    "NVLink 4.0 (H100)": (900e9, True),
    "InfiniBand HDR (200 Gb/s)": (25e9, False),
    "InfiniBand NDR (400 Gb/s)": (50e9, False),
}


def per_direction(link_bandwidth: float, bidirectional_rating: bool) -> float:
    bw = float(positive(link_bandwidth, "link_bandwidth"))
    return bw / 2.0 if bidirectional_rating else bw


@dataclass(frozen=True)
class HostTransferResult:
    per_direction_bandwidth: float
    input_time: float
    output_time: float
    sequential_time: float
    overlapped_time: float
    transfer_share: float  # share of the sequential time spent copying


def host_transfer(
    input_bytes: float,
    link_bandwidth: float,
    bidirectional_rating: bool = False,
    output_bytes: float = 0.0,
    compute_time: float = 0.0,
    latency: float = 0.0,
) -> HostTransferResult:
    """Times (s) of the host -> device -> host sequence over one link."""
    bw = per_direction(link_bandwidth, bidirectional_rating)
    b_in = float(non_negative(input_bytes, "input_bytes"))
    b_out = float(non_negative(output_bytes, "output_bytes"))
    t_c = float(non_negative(compute_time, "compute_time"))
    lat = float(non_negative(latency, "latency"))
    t_in = lat + b_in / bw
    t_out = (lat + b_out / bw) if b_out > 0 else 0.0
    seq = t_in + t_c + t_out
    return HostTransferResult(
        bw, t_in, t_out, seq, max(t_in, t_c, t_out), (t_in + t_out) / seq if seq > 0 else 0.0
    )


@dataclass(frozen=True)
class ScalingResult:
    per_direction_bandwidth: float
    sync_time: float
    overhead_fraction: float
    exposed_sync_time: float
    devices: Number
    speedup: Number
    efficiency: Number


def gradient_sync_scaling(
    payload_bytes: float,
    link_bandwidth: float,
    bidirectional_rating: bool,
    step_time: float,
    devices: float | np.ndarray,
    overlap: float = 0.0,
    latency: float = 0.0,
) -> ScalingResult:
    """Data-parallel scaling with a per-step gradient sync; ``devices`` may be an array for a sweep."""
    bw = per_direction(link_bandwidth, bidirectional_rating)
    payload = float(non_negative(payload_bytes, "payload_bytes"))
    t_step = float(positive(step_time, "step_time"))
    n = as_number(devices, "devices")
    if np.any(np.asarray(n) < 1) or np.any(np.isinf(n)):
        raise CalculatorInputError("devices", "must be finite and >= 1")
    ov = float(fraction(overlap, "overlap"))
    lat = float(non_negative(latency, "latency"))
    t_sync = lat + payload / bw
    exposed = t_sync - min(ov * t_sync, t_step)
    n_arr = np.asarray(n, float)
    speedup = np.where(n_arr > 1, n_arr * t_step / (t_step + exposed), 1.0)
    return ScalingResult(
        bw,
        t_sync,
        t_sync / t_step,
        exposed,
        scalar_or_array(n_arr),
        scalar_or_array(speedup),
        scalar_or_array(speedup / n_arr),
    )


@dataclass(frozen=True)
class CapResult:
    serial_fraction: float
    cap: float
    speedup: Number  # Amdahl speed-up at ``devices``


def communication_cap(serial_fraction: float, devices: float | np.ndarray = 8.0) -> CapResult:
    """Amdahl bound on scaling when a fraction ``serial_fraction`` of the work does not parallelise."""
    s = float(fraction(serial_fraction, "serial_fraction", allow_zero=False))
    n = as_number(devices, "devices")
    if np.any(np.asarray(n) < 1):
        raise CalculatorInputError("devices", "must be >= 1")
    result = amdahl(1.0 - s, n)
    return CapResult(s, 1.0 / s, result.speedup)


_NVLINK_A100 = LINKS["NVLink 3.0 (A100)"][0]

PRESETS: list[Preset] = [
    Preset(
        "1 GB gradients over A100 NVLink, 50 ms step, 8 GPUs",
        gradient_sync_scaling,
        {
            "payload_bytes": 1e9,
            "link_bandwidth": _NVLINK_A100,
            "bidirectional_rating": True,
            "step_time": 50e-3,
            "devices": 8.0,
            "overlap": 0.0,
        },
        "E-32, Fallacy 'linear scaling', R:2624",
        "3.33 ms, 6.7% of the step, 7.5x, 93.8%",
    ),
    Preset(
        "Older source: 600 GB/s taken per direction",
        gradient_sync_scaling,
        {
            "payload_bytes": 1e9,
            "link_bandwidth": _NVLINK_A100,
            "bidirectional_rating": False,
            "step_time": 50e-3,
            "devices": 8.0,
            "overlap": 0.0,
        },
        "E-32 source variant, S:13643-13758",
        "1.67 ms, 3.3%",
    ),
    Preset(
        "5% exposed sync: Amdahl cap",
        communication_cap,
        {"serial_fraction": 0.05, "devices": 8.0},
        "E-26, footnote 41, R:2446",
        "cap 20x",
    ),
    Preset(
        "KWS 32 kB tensor over PCIe Gen5",
        host_transfer,
        {"input_bytes": 32e3, "link_bandwidth": LINKS["PCIe Gen5 x16"][0], "bidirectional_rating": False},
        "M21 derived example",
        "0.5 us",
    ),
    Preset(
        "7B FP16 gradients (14 GB) over PCIe Gen4",
        host_transfer,
        {"input_bytes": 14e9, "link_bandwidth": LINKS["PCIe Gen4 x16"][0], "bidirectional_rating": False},
        "source S:7784 (AllReduce ~14 GB per step)",
        "about 0.44 s one way",
    ),
]
