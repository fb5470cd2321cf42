"""Size one model on several systems side by side: each system's layouts, ranked, and the one chosen.

The Systems panel, the CLI and the report read the same :class:`SystemResult` per system. A system whose layouts
cannot hold the model still gets a result (its best layout is marked as not fitting); one where no layout is
valid (the batch does not divide over its replicas, say) carries the reason in ``error``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from explorer.core.analysis.cost import CostAssumptions, CostAssumptionsLike
from explorer.core.formats import TensorFormats
from explorer.core.hardware.device import Device
from explorer.core.hardware.system import System
from explorer.core.workload.layers import Context
from explorer.core.workload.model import Model

from .layout import Layout, LayoutError, candidates, check, why_none
from .layout_cost import LayoutCost, layout_cost
from .system_pass import Options, SystemAnalysis, analyze_system, model_shape

OBJECTIVES = ("throughput", "latency", "cost")  # cost: per million tokens (or sequences), :mod:`.layout_cost`
TIERS = ("on-chip", "device memory", "scale-up", "scale-out")


@dataclass(frozen=True, eq=False)
class SystemResult:
    system: System
    device: Device
    analysis: SystemAnalysis | None
    chosen: int  # index into analysis.layouts
    order: np.ndarray  # the ranking (fitting layouts first, then by the objective)
    objective: str | None  # None: the one layout given
    error: str | None = None
    cost: LayoutCost | None = None  # cost per million tokens of every layout (unknown without a price)

    @property
    def layout(self) -> Layout | None:
        return None if self.analysis is None else self.analysis.layouts[self.chosen]


def choose(r: SystemAnalysis, objective: str | None, cost=None) -> tuple[int, np.ndarray]:
    """(index of the chosen layout, the ranking): fitting layouts first, then by the objective. ``cost`` (K,) is
    the cost per million tokens for ``objective="cost"``: layouts of unknown cost (NaN) rank after every priced
    one, by throughput per device among themselves."""
    if objective is None:
        return 0, np.arange(len(r))
    if objective not in OBJECTIVES:
        raise ValueError(f"objective: expected one of {', '.join(OBJECTIVES)}, got {objective!r}")
    tput = np.nan_to_num(-r.throughput_per_device, nan=np.inf)
    if objective == "cost":
        cost = np.full(len(r), np.nan) if cost is None else np.asarray(cost, dtype=float)
        order = np.lexsort((tput, np.nan_to_num(cost, nan=np.inf), ~r.fits))
        return int(order[0]), order
    key = r.latency if objective == "latency" else -r.throughput_per_device
    order = np.lexsort((np.nan_to_num(key, nan=np.inf), ~r.fits))
    return int(order[0]), order


def size_on_systems(model: Model, hardware: Sequence[tuple[System, Device]], precision: str, ctx: Context,
                    formats: TensorFormats | None = None, layout: Layout | None = None,
                    objective: str = "throughput", options: Options = Options(),
                    nodes: int = 1, quotes: Mapping[str, float] | None = None,
                    costs: CostAssumptionsLike | None = None) -> tuple[SystemResult, ...]:
    """Each (system, its device), as a cluster of ``nodes``: the given ``layout``, or every valid one ranked by
    ``objective``. With ``quotes`` (USD per device by device id) or ``costs`` (ownership assumptions), each result
    carries its layouts' cost per million tokens (a quote, else the catalog's list price). Ranking by cost needs
    neither: within one system it is the throughput's order (the TCO is the same for every layout)."""
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
                                      f"{ctx.batch}: {why_none(shape, system.devices)}")
        except LayoutError as exc:
            out.append(SystemResult(system, device, None, -1, np.zeros(0, int), None, str(exc)))
            continue
        r = analyze_system(model, system, device, layouts, precision, ctx, formats, options)
        cost = layout_cost(r, quotes, costs or CostAssumptions()) if quotes or costs is not None else None
        chosen, order = choose(r, rank_by, None if cost is None else cost.cost_per_million)
        out.append(SystemResult(system, device, r, chosen, order, rank_by, cost=cost))
    return tuple(out)


@dataclass(frozen=True)
class Rung:
    """One level of the bandwidth ladder: the bytes one device moves there per step, and its bandwidth (B/s; a
    link's per device and direction; NaN when the device or system file states none)."""

    name: str
    tier: str  # one of TIERS
    nbytes: float
    bandwidth: float
    energy_per_byte: float = float("nan")  # J/B over a link (its file's energy per bit / 8); NaN: not stated

    @property
    def joules(self) -> float:
        """J per step and device of the level's bytes at its energy: 0 without traffic, NaN when not stated."""
        if not self.nbytes > 0:
            return 0.0
        return self.nbytes * self.energy_per_byte

    @property
    def seconds(self) -> float:
        """The bytes at the level's bandwidth alone (NaN when the bandwidth is unknown)."""
        if not (self.bandwidth > 0):
            return float("nan")
        return self.nbytes / self.bandwidth


def bandwidth_ladder(result: SystemResult) -> tuple[Rung, ...]:
    """The chosen layout's bytes per step and device at each level, from the innermost on-chip memory out
    through device memory to the scale-up and scale-out links (empty without an analysis)."""
    r, k = result.analysis, result.chosen
    if r is None:
        return ()
    levels = {lv.name: lv for lv in result.device.memory if lv.role != "registers"}
    traffic = r.memory_traffic[k] if r.memory_traffic is not None else np.zeros(len(r.memory_names))
    out = []
    for j in reversed(range(len(r.memory_names))):  # stored off-chip first: innermost first here
        lv = levels.get(r.memory_names[j])
        bw = lv.bandwidth.value if lv is not None and lv.bandwidth is not None else float("nan")
        tier = "device memory" if lv is not None and lv.role == "offchip" else "on-chip"
        out.append(Rung(r.memory_names[j], tier, float(traffic[j]), float(bw)))
    for j, domain in enumerate(r.system.domains):
        out.append(Rung(domain.name, domain.scope.replace("_", "-"), float(r.level_bytes[k, j]),
                        float(r.system.bandwidth(domain)), float(domain.link.energy_per_byte)))
    return tuple(out)
