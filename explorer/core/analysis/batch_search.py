"""The batch the planner runs each device at: the power of two, up to a cap, that meets the latency limit at the
lowest cost (issue 23), instead of the toolbar's batch.

A larger batch raises each unit's throughput (fewer units for the target, so a lower cost) and lengthens each
pass (an inference, or a decode step, now carries ``batch`` requests), until the latency limit or the memory for
the KV cache and activations stops it. For every batch ``1, 2, 4, ... cap`` the model is analysed once on all
devices (:func:`evaluate`, vectorized over layers and devices) and planned (:func:`plan`); the choice is then made
over the (batch x device) grid of costs at once: per device the feasible batch of the lowest cost on the ranking's
basis (buy TCO, rent, or the cheaper), the smaller batch on a tie (a shorter pass for the same money). A device
that is feasible but unpriced takes the batch that needs the fewest units; one that no batch makes feasible is
shown at batch 1 (the shortest pass), and says so. The devices are then ranked again, each at its own batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

import numpy as np

from ..units import format_si
from ..workload.layers import Context
from .cost import CostAssumptionsLike
from .evaluate import evaluate
from .procurement import DevicePlan, PlanResult, Requirements, _plural, _rank, format_usd, plan
from .time_model import as_time_model

DEFAULT_CAP = 256


def batches_up_to(cap: int) -> tuple[int, ...]:
    """1, 2, 4, ... the largest power of two not above ``cap``."""
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise ValueError(f"max_batch: expected a positive whole number, got {cap!r}")
    return tuple(1 << k for k in range(cap.bit_length()))


@dataclass(frozen=True, eq=False)
class BatchSearch:
    """The search's grid and its choice. Arrays are (batches, devices); costs in USD over the horizon on the
    ranking's basis (NaN: unpriced), latency in s per pass (an inference or a decode step, shards applied)."""

    batches: tuple[int, ...]
    ids: tuple[str, ...]
    rank_cost: np.ndarray
    latency: np.ndarray
    units: np.ndarray  # 0 where unknown
    feasible: np.ndarray  # True only where the plan is feasible
    chosen: tuple[int, ...]  # per device, the batch chosen
    why: tuple[str, ...]  # per device, why that batch
    plans: tuple[PlanResult, ...]  # one per batch, in ``batches`` order
    result: PlanResult  # every device at its chosen batch, ranked again
    time_model: str = "ideal"  # the times every batch was planned with (ideal | calibrated)

    def batch_of(self, device_id: str) -> int:
        return self.chosen[self.ids.index(device_id)]


def _device_dict(p: DevicePlan, batch: int) -> dict:
    out = {f.name: getattr(p, f.name) for f in fields(DevicePlan) if f.name not in ("rank", "reason")}
    out["batch"] = batch
    return out


def _limit_text(req: Requirements) -> str:
    return f"the {format_si(req.latency, 's', 3)} latency limit" if req.latency is not None else "no latency limit"


def search_batch(model, devices, precision: str, ctx: Context, requirements: Requirements,
                 assumptions: CostAssumptionsLike, formats=None, cap: int = DEFAULT_CAP,
                 time_model: str = "ideal") -> BatchSearch:
    """Plan every device at the batch (a power of two up to ``cap``) that meets the latency limit at the lowest
    cost, each batch's times those of ``time_model`` (:func:`~.time_model.as_time_model`: ideal, or calibrated
    where a device has curves); see the module's docstring. Raises ValueError naming the field on bad input."""
    batches = batches_up_to(cap)
    plans = []
    for b in batches:
        analysis = evaluate(model, devices, precision, replace(ctx, batch=b), formats=formats)
        if analysis.table.errors:
            i, msg = analysis.table.errors[0]
            raise ValueError(f"batch {b}: layer {i}: {msg}")
        plans.append(plan(as_time_model(analysis, time_model), requirements, assumptions))
    ids = plans[0].analysis.devices.ids
    grid = [[r.by_id(i) for i in ids] for r in plans]
    rank_cost = np.array([[p.rank_cost for p in row] for row in grid], dtype=float)
    latency = np.array([[p.latency for p in row] for row in grid], dtype=float)
    units = np.array([[p.units for p in row] for row in grid], dtype=float)
    feasible = np.array([[p.feasible is True for p in row] for row in grid], dtype=bool)

    priced = feasible & np.isfinite(rank_cost)
    cost = np.where(priced, rank_cost, np.inf)
    by_cost = np.argmin(cost, axis=0)  # the first (smallest) batch among equal costs
    fewest = np.argmin(np.where(feasible & (units > 0), units, np.inf), axis=0)
    any_priced, any_feasible = priced.any(axis=0), feasible.any(axis=0)
    index = np.where(any_priced, by_cost, np.where(any_feasible, fewest, 0))

    limit = _limit_text(requirements)
    span = f"batches {batches[0]}-{batches[-1]}" if len(batches) > 1 else "batch 1"
    why, chosen_plans = [], []
    for d, i in enumerate(index.tolist()):
        p, b = grid[i][d], batches[i]
        if any_priced[d]:
            text = (f"batch {b}: the lowest cost ({format_usd(p.rank_cost)}, {_plural(p.units, 'unit')}) of the "
                    f"{span} that meet {limit}")
        elif any_feasible[d]:
            text = f"batch {b}: the fewest units ({p.units}) of the {span} that meet {limit}; unpriced, so not by cost"
        else:
            text = (f"batch {b}: no batch from {batches[0]} to {batches[-1]} meets {limit} and the other "
                    "requirements; shown at the shortest pass")
        if any_feasible[d] and i + 1 < len(batches):
            nxt = grid[i + 1][d]
            if nxt.feasible is False:
                text += f"; at batch {batches[i + 1]}: {nxt.reason.removeprefix('infeasible: ')}"
            elif math.isfinite(nxt.rank_cost) and nxt.rank_cost <= p.rank_cost:
                text += f"; batch {batches[i + 1]} costs the same, so the smaller batch (a shorter pass)"
            elif math.isfinite(nxt.rank_cost):
                text += (f"; at batch {batches[i + 1]}: {format_usd(nxt.rank_cost)} with "
                         f"{_plural(nxt.units, 'unit')}")
        elif any_feasible[d] and b == batches[-1]:
            text += f" (the cap, {batches[-1]}, was reached)"
        why.append(text)
        chosen_plans.append(_device_dict(p, b))

    best = plans[int(index[0])]
    req = best.requirements
    ranked = _rank(chosen_plans, req, best.cost)
    ranked = [replace(p, reason=f"{p.reason} [{why[ids.index(p.id)]}]") for p in ranked]
    first = min(ranked, key=lambda p: p.rank)
    anchor = plans[batches.index(first.batch)]
    notes = anchor.assumptions + (("Batch", ("each device at the batch (a power of two up to "
                                             f"{batches[-1]}) that meets the latency limit at the lowest cost on the "
                                             f"{req.rank_by} basis; the tables that are not per device show the "
                                             f"batch of the first-ranked device ({first.batch})")),)
    result = PlanResult(anchor.requirements, anchor.analysis, anchor.cost, anchor.unit, tuple(ranked), notes)
    return BatchSearch(batches, ids, rank_cost, latency, units, feasible, tuple(batches[i] for i in index.tolist()),
                       tuple(why), tuple(plans), result, time_model)
