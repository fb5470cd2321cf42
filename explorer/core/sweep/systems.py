"""Systems in a sweep: each (system, context, precision) at its best layout by throughput per device.

A system's point is the layout :func:`explorer.core.parallel.compare.size_on_systems` chooses (fitting layouts
first, then the highest throughput per device), at the grid's context and precision; unlike the single-device
sweep this is one system pass per (context, precision), not one pass per precision. Columns as
:data:`.run.COLUMNS`, with ``device`` the system's id and ``layout`` the chosen layout:

* ``latency_s``: the step time (one decode step of the whole batch, or one prefill of it) at that layout
* ``throughput_per_device_tok_s``: the system's tokens/s per device (prefill: sequences/s x seq_len)
* ``cost_per_million_tokens_usd``: :func:`explorer.core.parallel.layout_cost.layout_cost` (the catalog's list
  price of the device and its TDP; chassis, switches and network not priced); NaN without a price
* ``energy_per_token_j``: the devices' on-chip energy per step (MACs + memory levels, x devices) / tokens; the
  links' energy is not included
* ``memory_bytes`` and ``fits``: per device, at the chosen layout
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from explorer.core.analysis.cost import CostAssumptions, CostAssumptionsLike
from explorer.core.analysis.time_source import SPEC, system_time_sources
from explorer.core.formats import TensorFormats
from explorer.core.hardware.device import Device
from explorer.core.hardware.system import System
from explorer.core.parallel.compare import size_on_systems
from explorer.core.parallel.system_pass import Options
from explorer.core.workload.model import Model

from .grid import Grid
from .run import NAMES, SweepResult, contexts_of, with_front

DEFAULT_ASSUMPTIONS = CostAssumptions()


def sweep_systems(model: Model, hardware: Sequence[tuple[System, Device]], grid: Grid,
                  assumptions: CostAssumptionsLike = DEFAULT_ASSUMPTIONS,
                  formats: TensorFormats | None = None, time_model: str = "ideal") -> SweepResult:
    """Every point of ``grid`` on every (system, its device), each at its best layout, timed by the system pass
    under ``time_model`` (the device's curves and the system's stored link fits under ``calibrated``)."""
    options = Options(time_model=time_model)
    rows: list[dict] = []
    notes: dict[str, dict[str, None]] = {}
    passes = 0
    default_seq = model.default_seq_len()
    for precision in grid.precisions:
        for ctx in contexts_of(model, grid):
            seq = ctx.seq_len or default_seq or 1
            per_token = 1 if ctx.phase == "decode" or default_seq is None else seq
            for system, device in hardware:
                (res,) = size_on_systems(model, [(system, device)], precision, ctx, formats,
                                         objective="throughput", options=options, costs=assumptions)
                passes += 1
                row = {"device": system.id, "precision": precision, "phase": ctx.phase, "batch": ctx.batch,
                       "seq_len": seq, "layout": "", "latency_s": math.nan, "throughput_per_device_tok_s": math.nan,
                       "cost_per_million_tokens_usd": math.nan, "cost_source": "", "time_source": SPEC,
                       "energy_per_token_j": math.nan,
                       "memory_bytes": math.nan, "fits": False, "pareto": False}
                if res.analysis is None:
                    notes.setdefault(f"no layout at {precision}", {})[
                        f"{system.id} (batch {ctx.batch}, seq_len {seq}: {res.error})"] = None
                    rows.append(row)
                    continue
                r, k = res.analysis, res.chosen
                tokens = ctx.batch * per_token  # tokens per step of the whole system
                cost = res.cost.cost_per_million[k] / per_token if res.cost is not None else math.nan
                if not math.isfinite(cost) and res.cost is not None and res.cost.reason:
                    notes.setdefault("cost unknown", {})[f"{system.id} ({res.cost.reason})"] = None
                energy = (r.device_energy[k] * system.devices / tokens if r.device_energy is not None
                          else math.nan)
                row.update(layout=r.layouts[k].label(), latency_s=float(r.step_time[k]),
                           throughput_per_device_tok_s=float(r.throughput_per_device[k]) * per_token,
                           cost_per_million_tokens_usd=float(cost),
                           cost_source="list price" if math.isfinite(cost) else "",
                           time_source=system_time_sources(r)[k],
                           energy_per_token_j=float(energy), memory_bytes=float(r.memory_bytes[k]),
                           fits=bool(r.fits[k]))
                rows.append(row)
    cols = {n: np.array([row[n] for row in rows],
                        dtype=object if n in ("device", "precision", "phase", "layout", "cost_source", "time_source")
                        else None)
            for n in NAMES}
    return with_front(SweepResult(model_name=model.name, columns=cols, passes=passes,
                                  notes=tuple(f"{why}: {', '.join(ids)}" for why, ids in notes.items())))
