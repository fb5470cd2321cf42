"""Energy per operation: a vector unit vs an N x N systolic array (Napkin Math 1.1, R:767-782).

* Vector unit: every multiply-accumulate fetches A and B, reads and writes C off-chip:
  ``E_vector = a_vec * E_DRAM + E_MAC`` with ``a_vec = 4`` accesses.
* Systolic array: only A and B are fetched, and each fetched value is pulsed through ``N`` processing
  elements while C stays in the accumulators: ``E_systolic = (2 / N) * E_DRAM + E_MAC``.

"Operation" here is one multiply-accumulate (the chapter's "op"; 1 MAC = 2 FLOP). ``E_DRAM`` is per
*access* (the chapter's 640 pJ per 32-bit access, not per byte) and the chapter's ``E_MAC`` is the
hard-coded 1 pJ "compute cost", not the 3.7 pJ FP32 multiply of the Horowitz table. Valid only for
matrices large enough to fill the array (R:782).
"""

from __future__ import annotations

from dataclasses import dataclass

from ._common import Preset, non_negative, positive, positive_int


@dataclass(frozen=True)
class SystolicEnergyResult:
    vector_energy_per_mac: float  # J
    systolic_energy_per_mac: float  # J
    efficiency_ratio: float
    systolic_dram_accesses_per_mac: float
    macs_per_cycle: int
    peak_flops: float  # FLOP/s at ``clock``; 0 when no clock is given


def systolic_energy(
    array_side: int,
    dram_energy_per_access: float,
    mac_energy: float,
    vector_accesses_per_mac: float = 4.0,
    systolic_operands: float = 2.0,
    clock: float = 0.0,
) -> SystolicEnergyResult:
    """Energies in joules per MAC; ``peak_flops = 2 N^2 f`` when ``clock`` (Hz) is > 0."""
    n = positive_int(array_side, "array_side")
    e_dram = float(non_negative(dram_energy_per_access, "dram_energy_per_access"))
    e_mac = float(positive(mac_energy, "mac_energy"))
    a_vec = float(positive(vector_accesses_per_mac, "vector_accesses_per_mac"))
    a_sys = float(positive(systolic_operands, "systolic_operands")) / n
    f = float(non_negative(clock, "clock"))
    vector = a_vec * e_dram + e_mac
    systolic = a_sys * e_dram + e_mac
    return SystolicEnergyResult(vector, systolic, vector / systolic, a_sys, n * n, 2.0 * n * n * f)


PRESETS: list[Preset] = [
    Preset(
        "128x128 array, DRAM 640 pJ, MAC 1 pJ",
        systolic_energy,
        {"array_side": 128, "dram_energy_per_access": 640e-12, "mac_energy": 1e-12},
        "E20-E23, Napkin Math 1.1, R:767-782",
        "2561 vs 11 pJ/op, 232.8x, 16,384 MACs/cycle",
    ),
    Preset(
        "TPUv1-style 256x256 array",
        systolic_energy,
        {"array_side": 256, "dram_energy_per_access": 640e-12, "mac_energy": 1e-12},
        "footnote 3, R:104 (derived)",
        "65,536 MACs/cycle",
    ),
    Preset(
        "Edge 8x8 array (under-filled regime)",
        systolic_energy,
        {"array_side": 8, "dram_energy_per_access": 640e-12, "mac_energy": 1e-12},
        "R:782, R:843 (derived)",
        "small arrays fall back toward the vector baseline",
    ),
]
