"""Qt widgets for the chapter's calculators (issue 9); :class:`~.panel.CalculatorsPanel` hosts them all."""

from __future__ import annotations

from .alignment import AlignmentCalculator
from .amdahl import AmdahlCalculator
from .batch_sweep import BatchSweepCalculator
from .carbon import CarbonCalculator
from .dataflow import DataflowCalculator
from .fusion import FusionCalculator
from .iron_law import IronLawCalculator
from .sparsity import SparsityCalculator
from .speed_of_light import SpeedOfLightCalculator
from .transfer_scaling import TransferScalingCalculator

# calculator id -> widget class (ids are those of explorer.core.calculators.CALCULATORS)
WIDGET_CLASSES = {
    "amdahl": AmdahlCalculator,
    "iron-law": IronLawCalculator,
    "batch-sweep": BatchSweepCalculator,
    "dataflow": DataflowCalculator,
    "fusion": FusionCalculator,
    "sparsity": SparsityCalculator,
    "alignment": AlignmentCalculator,
    "transfer-scaling": TransferScalingCalculator,
    "carbon": CarbonCalculator,
    "speed-of-light": SpeedOfLightCalculator,
}

__all__ = ["WIDGET_CLASSES", *(cls.__name__ for cls in WIDGET_CLASSES.values())]
