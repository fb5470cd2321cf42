"""The pure computations behind the four analysis panels, each from the one shared :class:`ModelAnalysis`.

Every function returns a frozen result the panel only draws; none re-evaluates the whole model.
"""

from .cost import CostAssumptions, CostResult, compute_cost, with_price
from .energy_view import EnergyView, compute_energy_view, energy_table, with_energy
from .roofline_view import RooflineResult, compute_roofline
from .tiling_view import TilingView, compute_tiling_view, default_row

__all__ = [
    "CostAssumptions",
    "CostResult",
    "EnergyView",
    "RooflineResult",
    "TilingView",
    "compute_cost",
    "compute_energy_view",
    "compute_roofline",
    "compute_tiling_view",
    "default_row",
    "energy_table",
    "with_energy",
    "with_price",
]
