"""Training on several systems side by side: each system's training layouts ranked, its best one, and the time
and cost to train on T tokens. The CLI, a panel and the report read the same :class:`TrainingResult`.

A system where no layout is valid (the global batch does not divide over its replicas, the heads over any TP
degree...) still gets a result, with the reason in ``error``; one whose layouts do not fit gets its fastest one,
marked as not fitting.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from explorer.core.analysis.cost import CostAssumptions
from explorer.core.hardware.device import Device
from explorer.core.hardware.system import System
from explorer.core.parallel.layout import LayoutError
from explorer.core.workload.model import Model

from .cost import DEFAULT_ASSUMPTIONS, TrainingCost, cost_to_train
from .layout import TrainingLayout, candidates, check
from .step import TrainingAnalysis, TrainingSetup, analyze_training, rank, training_shape


@dataclass(frozen=True, eq=False)
class TrainingResult:
    system: System
    device: Device
    analysis: TrainingAnalysis | None
    cost: TrainingCost | None
    order: np.ndarray  # the ranking (fitting layouts first, then by step time); [0] is the chosen layout
    error: str | None = None

    @property
    def chosen(self) -> int:
        return int(self.order[0]) if len(self.order) else -1

    @property
    def layout(self) -> TrainingLayout | None:
        return None if self.analysis is None else self.analysis.layouts[self.chosen]


def train_on_system(model: Model, system: System, device: Device, setup: TrainingSetup, tokens: float,
                    layout: TrainingLayout | None = None, schedule: str = "1f1b", virtual: int = 1, cp: int = 1,
                    sp: bool = True, assumptions: CostAssumptions = DEFAULT_ASSUMPTIONS) -> TrainingResult:
    """The given ``layout`` (checked), or every valid one (TP inside the scale-up domain; the given ``cp``,
    ``schedule``, ``virtual`` stages and sequence parallelism) ranked."""
    shape = training_shape(model, setup)
    try:
        if layout is not None:
            check(layout, shape, system.devices, setup.zero, setup.recompute)
            layouts, ranked = [layout], False
        else:
            scale_up = system.domains[0].size if system.domains else 1
            layouts = candidates(shape, system.devices, scale_up, cp, schedule, virtual, setup.zero,
                                 setup.recompute, sp)
            ranked = True
            if not layouts:
                raise LayoutError(f"no valid training layout of {model.name} on {system.devices} devices for a "
                                  f"global batch of {setup.global_batch} in micro-batches of {setup.micro_batch}")
    except LayoutError as exc:
        return TrainingResult(system, device, None, None, np.zeros(0, int), str(exc))
    r = analyze_training(model, system, device, layouts, setup)
    order = rank(r) if ranked else np.arange(len(r))
    return TrainingResult(system, device, r, cost_to_train(r, tokens, assumptions), order)


def train_on_systems(model: Model, hardware: Sequence[tuple[System, Device]], setup: TrainingSetup, tokens: float,
                     assumptions: CostAssumptions = DEFAULT_ASSUMPTIONS) -> tuple[TrainingResult, ...]:
    """Each (system, its device) with its best training layout, in the given order."""
    return tuple(train_on_system(model, s, d, setup, tokens, assumptions=assumptions) for s, d in hardware)
