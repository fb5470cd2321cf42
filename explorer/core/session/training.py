"""The training part of the session: what a training run is (:class:`TrainingChoice`), the command that changes
it (:class:`SetTraining`), and the results it gives on the systems chosen in ``State.system``
(:func:`train_choice`, read through ``Results.training``). docs/training.md "In the app" and docs/project-file.md.

The systems are those of the Systems panel (``State.system.system_ids`` as clusters of ``State.system.nodes``); the
layout is each system's best training layout (fitting ones first, then by step time) or one given by hand (tp, pp,
dp; the choice's cp, schedule and virtual stages), which is then analysed beside every valid layout so that the
ranked table still lists them all. Qt-free.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from explorer.core.analysis.cost import CostAssumptions
from explorer.core.hardware.device import Device
from explorer.core.hardware.system import System
from explorer.core.parallel.layout import LayoutError
from explorer.core.training.compare import TrainingResult, train_on_system
from explorer.core.training.cost import cost_to_train
from explorer.core.training.layout import candidates, check
from explorer.core.training.step import analyze_training, rank, training_shape
from explorer.core.workload.model import Model

from .commands import Command
from .training_choice import TrainingChoice

DEFAULT_COST = CostAssumptions()


@dataclass
class SetTraining(Command):
    """Change the training run (tokens, batch, ZeRO, recomputation, schedule, layout...)."""

    choice: TrainingChoice
    text: str = "change training"
    changes: frozenset[str] = frozenset({"training"})

    def apply(self, state):
        return state.with_(training=self.choice.checked())


def cost_assumptions(assumptions) -> CostAssumptions:
    """The session's electricity price, PUE and horizon, as the training cost reads them."""
    return CostAssumptions(electricity_usd_per_kwh=assumptions.electricity_usd_per_kwh, pue=assumptions.pue,
                           years=assumptions.years)


def _error(system: System, device: Device, message: str) -> TrainingResult:
    return TrainingResult(system, device, None, None, np.zeros(0, int), message)


def train_system(model: Model, system: System, device: Device, choice: TrainingChoice,
                 assumptions: CostAssumptions = DEFAULT_COST, time_model: str = "ideal") -> TrainingResult:
    """One system (already a cluster of its nodes) under ``choice``: its best layout, or the one given by hand
    first and every other valid layout ranked after it; ``time_model``: the session's Times switch."""
    setup = replace(choice.setup, time_model=time_model)
    hand = choice.training_layout()
    try:
        if hand is None:
            return train_on_system(model, system, device, setup, choice.tokens, None, choice.schedule,
                                   choice.virtual, choice.cp, True, assumptions)
        shape = training_shape(model, setup)
        check(hand, shape, system.devices, setup.zero, setup.recompute)
        scale_up = system.domains[0].size if system.domains else 1
        others = [lay for lay in candidates(shape, system.devices, scale_up, choice.cp, choice.schedule,
                                            choice.virtual, setup.zero, setup.recompute, True) if lay != hand]
        r = analyze_training(model, system, device, [hand, *others], setup)
    except (LayoutError, ValueError) as exc:
        return _error(system, device, str(exc))
    rest = rank(r)
    order = np.concatenate([[0], rest[rest != 0]]).astype(int)
    return TrainingResult(system, device, r, cost_to_train(r, choice.tokens, assumptions), order)


def train_choice(model: Model, hardware: Sequence[tuple[System, Device]], nodes: int, choice: TrainingChoice,
                 assumptions: CostAssumptions = DEFAULT_COST, time_model: str = "ideal") -> tuple[TrainingResult, ...]:
    """Each (system, its device) as a cluster of ``nodes`` (or of ``choice.devices`` devices) under ``choice``, in order; a system that cannot take
    it carries the reason in ``error``."""
    out = []
    for system, device in hardware:
        n = nodes
        if choice.devices:
            n, rest = divmod(choice.devices, system.devices)
            if rest or not n:
                out.append(_error(system, device, f"devices: {choice.devices} is not a whole number of "
                                  f"{system.name}'s nodes of {system.devices} devices"))
                continue
        try:
            system = system.with_nodes(n) if n > 1 else system
        except ValueError as exc:
            out.append(_error(system, device, str(exc)))
            continue
        out.append(train_system(model, system, device, choice, assumptions, time_model))
    return tuple(out)


def recost(results: Sequence[TrainingResult], tokens: float,
           assumptions: CostAssumptions) -> tuple[TrainingResult, ...]:
    """The same analyses costed for ``tokens`` under ``assumptions`` (a token count or a price re-costs only)."""
    return tuple(r if r.analysis is None else
                 TrainingResult(r.system, r.device, r.analysis, cost_to_train(r.analysis, tokens, assumptions),
                                r.order, r.error) for r in results)
