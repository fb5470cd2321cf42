"""The batch and the layout each system runs at in the planner (issue 23): over the powers of two up to a cap and
every valid layout, the pair that meets the latency limit with the fewest devices, instead of the toolbar's batch.

For every batch ``1, 2, 4, ... cap`` each chosen system is analysed over all its valid layouts
(:func:`~.compare.size_on_systems`, one vectorized system pass per system and batch) and sized for the target
(:func:`~.sizing.size_fleet`: per batch, the layout needing the fewest devices that fits and meets the limit, as
``hwexplorer plan --system``). The choice is then made over the batches: the fewest devices, which is the lowest
capital since one system has one device type and one price per device (chassis, switches and network are not
priced, :data:`~.sizing.NOT_PRICED`); ties go to the lower latency, then the smaller batch. A system that no
batch and layout make feasible is shown at batch 1 (the shortest pass), and says so.

The times are those of ``options.time_model`` (the system pass's: ideal, or calibrated kernels and fitted links
where stored), so the search under the calibrated model is the brute force over ``plan --system --batch B
--time-model calibrated``; each plan's time source (spec | partly calibrated | calibrated) is kept beside it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from explorer.core.analysis.batch_search import DEFAULT_CAP, batches_up_to
from explorer.core.analysis.time_source import SPEC, system_time_sources
from explorer.core.formats import TensorFormats
from explorer.core.hardware.device import Device
from explorer.core.hardware.system import System
from explorer.core.units import format_si
from explorer.core.workload.layers import Context
from explorer.core.workload.model import Model

from .compare import SystemResult, size_on_systems
from .sizing import SystemPlan, size_fleet
from .system_pass import Options

DEFAULT_OPTIONS = Options()


@dataclass(frozen=True, eq=False)
class SystemBatchSearch:
    """The grid and the choice. ``plans[i][s]``: system ``s`` at ``batches[i]`` (its best layout there);
    ``devices`` and ``latency`` are (batches, systems) arrays (devices inf, latency NaN where infeasible)."""

    batches: tuple[int, ...]
    plans: tuple[tuple[SystemPlan, ...], ...]
    devices: np.ndarray
    latency: np.ndarray
    chosen: tuple[int, ...]  # per system, the batch chosen
    why: tuple[str, ...]  # per system, why that batch and layout
    result: tuple[SystemPlan, ...]  # each system at its chosen batch and layout, in the given order
    time_model: str = "ideal"  # the times the search compared (Options.time_model)
    sources: tuple[tuple[str, ...], ...] = ()  # [batch][system]: where the plan's times come from (.time_source)

    @property
    def result_sources(self) -> tuple[str, ...]:
        """Per system, where the times of its chosen batch and layout come from: spec | partly calibrated |
        calibrated."""
        return tuple(self.sources[self.batches.index(b)][s] for s, b in enumerate(self.chosen))

    def batch_of(self, system_id: str) -> int:
        return next(b for b, p in zip(self.chosen, self.result) if p.system_id == system_id)


def _devices(n: int) -> str:
    return f"{n} device{'' if n == 1 else 's'}"


def search_system_batch(model: Model, hardware: Sequence[tuple[System, Device]], precision: str, ctx: Context,
                        target: float | None = None, latency_limit: float | None = None,
                        price: Mapping[str, float] | None = None, formats: TensorFormats | None = None,
                        objective: str = "throughput", options: Options = DEFAULT_OPTIONS, nodes: int = 1,
                        cap: int = DEFAULT_CAP) -> SystemBatchSearch:
    """Each system of ``hardware`` at the batch (a power of two up to ``cap``) and layout that meet
    ``latency_limit`` (s) for ``target`` (the phase's rate unit) with the fewest devices; see the module's
    docstring. ``price``: USD per device by device id (quotes)."""
    batches = batches_up_to(cap)
    grid, sources = [], []
    for b in batches:
        results = size_on_systems(model, hardware, precision, replace(ctx, batch=b), formats, None, objective,
                                  options, nodes)
        plans = size_fleet(results, target, latency_limit, price)
        grid.append(tuple(replace(p, batch=b) for p in plans))
        sources.append(tuple(plan_time_source(r, p) for r, p in zip(results, plans)))
    feasible = np.array([[p.feasible and p.devices > 0 for p in row] for row in grid], dtype=bool)
    devices = np.where(feasible, np.array([[p.devices for p in row] for row in grid], dtype=float), np.inf)
    latency = np.where(feasible, np.array([[p.latency for p in row] for row in grid], dtype=float), np.nan)
    order = np.arange(len(batches))
    limit = (f"the {format_si(latency_limit, 's', 3)} latency limit" if latency_limit is not None
             else "no latency limit")
    span = f"batches {batches[0]}-{batches[-1]}" if len(batches) > 1 else "batch 1"
    chosen, why, result = [], [], []
    for s in range(len(hardware)):
        if feasible[:, s].any():
            i = int(np.lexsort((order, np.nan_to_num(latency[:, s], nan=np.inf), devices[:, s]))[0])
            p = grid[i][s]
            text = (f"batch {batches[i]}, {p.layout.label()}: the fewest devices ({_devices(p.devices)}, "
                    f"{p.replicas} replica{'' if p.replicas == 1 else 's'} of {p.replica_devices}) over the {span} "
                    f"and every valid layout that meet {limit}")
            if i + 1 < len(batches):
                nxt = grid[i + 1][s]
                text += (f"; at batch {batches[i + 1]}: {nxt.reason}" if not nxt.feasible else
                         f"; batch {batches[i + 1]} needs {_devices(nxt.devices)}")
            elif len(batches) > 1:
                text += f" (the cap, {batches[-1]}, was reached)"
        else:
            i = 0
            p = grid[0][s]
            text = (f"batch {batches[0]}: no batch from {batches[0]} to {batches[-1]} and no layout meets {limit} "
                    "with the model in memory; shown at the shortest pass")
        chosen.append(batches[i])
        why.append(text)
        result.append(p)
    return SystemBatchSearch(batches, tuple(grid), devices, latency, tuple(chosen), tuple(why), tuple(result),
                             options.time_model, tuple(sources))


def plan_time_source(result: SystemResult, plan: SystemPlan) -> str:
    """Where the times of ``plan``'s layout on its system come from (spec | partly calibrated | calibrated; spec
    where the system has no analysis)."""
    a = result.analysis
    if a is None:
        return SPEC
    k = a.layouts.index(plan.layout) if plan.layout in a.layouts else result.chosen
    return system_time_sources(a)[k]
