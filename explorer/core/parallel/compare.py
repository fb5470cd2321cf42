"""Size one model on several systems side by side: each system's layouts, ranked, and the one chosen.

The Systems panel, the CLI and the report read the same :class:`SystemResult` per system. A system whose layouts
cannot hold the model still gets a result (its best layout is marked as not fitting); one where no layout is
valid (the batch does not divide over its replicas, say) carries the reason in ``error``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from explorer.core.formats import TensorFormats
from explorer.core.hardware.device import Device
from explorer.core.hardware.system import System
from explorer.core.workload.layers import Context
from explorer.core.workload.model import Model

from .layout import Layout, LayoutError, candidates, check
from .system_pass import Options, SystemAnalysis, analyze_system, model_shape

OBJECTIVES = ("throughput", "latency")


@dataclass(frozen=True, eq=False)
class SystemResult:
    system: System
    device: Device
    analysis: SystemAnalysis | None
    chosen: int  # index into analysis.layouts
    order: np.ndarray  # the ranking (fitting layouts first, then by the objective)
    objective: str | None  # None: the one layout given
    error: str | None = None

    @property
    def layout(self) -> Layout | None:
        return None if self.analysis is None else self.analysis.layouts[self.chosen]


def choose(r: SystemAnalysis, objective: str | None) -> tuple[int, np.ndarray]:
    """(index of the chosen layout, the ranking): fitting layouts first, then by the objective."""
    if objective is None:
        return 0, np.arange(len(r))
    key = r.latency if objective == "latency" else -r.throughput_per_device
    order = np.lexsort((np.nan_to_num(key, nan=np.inf), ~r.fits))
    return int(order[0]), order


def size_on_systems(model: Model, hardware: Sequence[tuple[System, Device]], precision: str, ctx: Context,
                    formats: TensorFormats | None = None, layout: Layout | None = None,
                    objective: str = "throughput", options: Options = Options(),
                    nodes: int = 1) -> tuple[SystemResult, ...]:
    """Each (system, its device), as a cluster of ``nodes``: the given ``layout``, or every valid one ranked by
    ``objective``."""
    out = []
    shape = model_shape(model, ctx)
    for system, device in hardware:
        try:
            system = system.with_nodes(nodes) if nodes > 1 else system
        except ValueError as exc:
            out.append(SystemResult(system, device, None, -1, np.zeros(0, int), None, str(exc)))
            continue
        try:
            if layout is not None:
                check(layout, shape, system.devices)
                layouts, rank_by = [layout], None
            else:
                layouts, rank_by = candidates(shape, system.devices), objective
                if not layouts:
                    raise LayoutError(f"no valid layout of {model.name} on {system.devices} devices at batch "
                                      f"{ctx.batch} (dp must divide the batch)")
        except LayoutError as exc:
            out.append(SystemResult(system, device, None, -1, np.zeros(0, int), None, str(exc)))
            continue
        r = analyze_system(model, system, device, layouts, precision, ctx, formats, options)
        chosen, order = choose(r, rank_by)
        out.append(SystemResult(system, device, r, chosen, order, rank_by))
    return tuple(out)
