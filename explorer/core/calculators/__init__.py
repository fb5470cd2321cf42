"""The chapter's smaller design-review models as calculators (issue 9).

Each module holds one calculator: pure functions of plain SI floats (or numpy arrays where a sweep makes
sense) returning frozen dataclasses, plus a ``PRESETS`` list of named inputs that reproduce the chapter's
worked examples. :data:`CALCULATORS` lists them with stable public ids used by the UI and the docs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import (
    alignment,
    amdahl,
    batch_sweep,
    carbon,
    dataflow,
    fusion,
    iron_law,
    sparsity,
    speed_of_light,
    systolic,
    transfer_scaling,
)
from ._common import CalculatorInputError, Preset


@dataclass(frozen=True)
class Calculator:
    """One calculator: ``function`` is its main model; ``functions`` every model it offers."""

    id: str
    title: str
    function: Callable[..., Any]
    functions: tuple[Callable[..., Any], ...]
    presets: tuple[Preset, ...]
    summary: str


CALCULATORS: tuple[Calculator, ...] = (
    Calculator(
        "amdahl",
        "Amdahl and the acceleration wall",
        amdahl.amdahl,
        (amdahl.amdahl, amdahl.amdahl_grid),
        tuple(amdahl.PRESETS),
        "Speed-up against the accelerated fraction p and the hardware gain G; ceiling 1/(1-p).",
    ),
    Calculator(
        "iron-law",
        "Iron-law decomposition",
        iron_law.iron_law,
        (iron_law.iron_law,),
        tuple(iron_law.PRESETS),
        "T = D/BW + O/(R_peak eta) + L: which term dominates, and is the memory wall reached.",
    ),
    Calculator(
        "batch-sweep",
        "Batch sweep and decode ceiling",
        batch_sweep.batch_sweep,
        (batch_sweep.batch_sweep, batch_sweep.decode_ceiling),
        tuple(batch_sweep.PRESETS),
        "A dense layer's intensity against batch size and each device's ridge; decode tokens/s.",
    ),
    Calculator(
        "dataflow",
        "Dataflow comparison",
        dataflow.gemm_dataflow,
        (
            dataflow.gemm_dataflow,
            dataflow.conv_dataflow,
            dataflow.loop_order_weight_loads,
            systolic.systolic_energy,
        ),
        tuple(dataflow.PRESETS) + tuple(systolic.PRESETS),
        "Weight-, output- and input-stationary off-chip traffic; loop order; systolic energy.",
    ),
    Calculator(
        "fusion",
        "Kernel fusion",
        fusion.kernel_fusion,
        (fusion.kernel_fusion,),
        tuple(fusion.PRESETS),
        "Footprint and traffic of a chain of element-wise ops, fused and unfused.",
    ),
    Calculator(
        "sparsity",
        "N:M structured sparsity",
        sparsity.nm_sparsity,
        (sparsity.nm_sparsity,),
        tuple(sparsity.PRESETS),
        "Density, metadata, effective bytes and the theoretical speed-up.",
    ),
    Calculator(
        "alignment",
        "Tensor-core alignment",
        alignment.tensor_core_alignment,
        (alignment.tensor_core_alignment,),
        tuple(alignment.PRESETS),
        "Padding waste and the fallback penalty for dimensions that miss the tile.",
    ),
    Calculator(
        "transfer-scaling",
        "Host-device transfer and multi-chip scaling",
        transfer_scaling.gradient_sync_scaling,
        (
            transfer_scaling.gradient_sync_scaling,
            transfer_scaling.host_transfer,
            transfer_scaling.communication_cap,
        ),
        tuple(transfer_scaling.PRESETS),
        "Link transfer time (per direction vs bidirectional), gradient sync, overlap, efficiency.",
    ),
    Calculator(
        "carbon",
        "Carbon",
        carbon.carbon_comparison,
        (carbon.carbon_comparison,),
        tuple(carbon.PRESETS),
        "Operational energy and emissions of a fleet at a grid intensity.",
    ),
    Calculator(
        "speed-of-light",
        "Speed-of-light latency floor",
        speed_of_light.speed_of_light,
        (speed_of_light.speed_of_light,),
        tuple(speed_of_light.PRESETS),
        "How far a signal gets in one clock cycle; memory latency in cycles.",
    ),
)

_BY_ID = {c.id: c for c in CALCULATORS}


def get_calculator(calculator_id: str) -> Calculator:
    """The calculator with this public id; ``KeyError`` lists the known ids."""
    try:
        return _BY_ID[calculator_id]
    except KeyError:
        raise KeyError(f"unknown calculator {calculator_id!r}; known: {', '.join(_BY_ID)}") from None


__all__ = ["CALCULATORS", "Calculator", "CalculatorInputError", "Preset", "get_calculator"]
