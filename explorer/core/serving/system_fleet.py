"""Serving fleets of system layouts: a replica is one model instance over ``tp x pp`` devices of a system (the
system pass's own step times, communication included: :func:`explorer.core.serving.serve.system_setup`), and the
fleet is the fewest such replicas meeting the service levels at the workload's rate
(:func:`explorer.core.serving.fleet.fleet_row`, the same sizing as one device a replica).

Per system every candidate layout is sized and the cheapest kept:

    replicas = ceil(rate / the replica's service-level rate);   devices = replicas x tp x pp
    nodes    = ceil(devices / the system's devices per node)
    chosen   = the feasible layout with the lowest owned cost per million output tokens, then the fewest devices,
               then the highest rate per replica (unpriced: the fewest devices)

A layout whose weights leave no room for a KV block is refused, saying so. Qt-free.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from explorer.core.formats import TensorFormats
from explorer.core.hardware.device import Device
from explorer.core.hardware.system import System
from explorer.core.parallel.layout import Layout, candidates
from explorer.core.parallel.system_pass import Options, model_shape
from explorer.core.workload.layers import Context
from explorer.core.workload.model import Model

from .analytic import Setup
from .fleet import FleetRow, fleet_row
from .serve import system_setup
from .simulate import Policy
from .workload import SLO, Workload


@dataclass(frozen=True)
class LayoutFleet:
    """One system layout's fleet. ``fleet`` is the sizing of one replica of ``layout`` (its ``dp`` is the
    system's own and plays no part: the fleet's replicas are ``fleet.replicas``); ``reason``: why it serves none."""

    system: System
    layout: Layout
    fleet: FleetRow | None  # None: no room for the KV cache
    reason: str = ""

    @property
    def replica(self) -> Layout:
        """The replica's own layout: the system layout's tp, pp and ep, one data-parallel copy."""
        return replace(self.layout, dp=1)

    @property
    def label(self) -> str:
        return replica_label(self.layout)

    @property
    def replica_devices(self) -> int:
        return self.layout.tp * self.layout.pp

    @property
    def feasible(self) -> bool:
        return self.fleet is not None and self.fleet.feasible

    @property
    def devices(self) -> int:
        return self.fleet.replicas * self.replica_devices if self.feasible else 0

    @property
    def nodes(self) -> int:
        return math.ceil(self.devices / max(self.system.node_devices, 1)) if self.devices else 0


def replica_label(layout: Layout) -> str:
    """``TP2 PP1`` (``EP`` where > 1): a replica's layout, without the system's data-parallel degree."""
    return f"TP{layout.tp} PP{layout.pp}" + (f" EP{layout.ep}" if layout.ep > 1 else "")


def serving_layouts(model: Model, system: System, workload: Workload, pipeline: bool = False) -> list[Layout]:
    """The replica layouts searched on ``system``: every valid tensor-parallel degree (pp = 1, one micro-batch;
    with ``pipeline`` the pipeline splits too). A serving replica gains nothing from a pipeline of one micro-batch
    but memory, so pipelines are searched only where asked (or where no tensor layout holds the weights)."""
    i, o = workload.mean_lengths()
    shape = model_shape(model, Context(batch=system.devices, seq_len=max(1, int(i + o)), phase="decode"))
    found = [lay for lay in candidates(shape, system.devices) if lay.microbatches == 1 and lay.ep in (1, lay.tp)]
    return [lay for lay in found if pipeline or lay.pp == 1]


def layout_fleet(model: Model, system: System, device: Device, layout: Layout, workload: Workload, slo: SLO,
                 quotes=None, years: float = 3.0, usd_per_kwh: float = 0.12, pue: float = 1.3,
                 setup: Setup | None = None, **setup_args) -> tuple[LayoutFleet, Setup]:
    """The fleet of replicas of ``layout`` (``setup_args``: :func:`system_setup`'s keywords) and the replica setup."""
    setup = setup or system_setup(model, system, device, layout, workload, **setup_args)
    setup = replace(setup, replicas=1)
    if setup.memory.blocks < 1:
        return LayoutFleet(system, layout, None, "no room for the KV cache (the weights fill each device)"), setup
    row = fleet_row(workload, setup, device, slo, quotes, years, usd_per_kwh, pue, system.id, system.name)
    return LayoutFleet(system, layout, row, "" if row.feasible else "no load meets the service levels"), setup


def _key(f: LayoutFleet):
    r = f.fleet
    owned = r.cost_per_million if (r is not None and math.isfinite(r.cost_per_million)) else math.inf
    return (not f.feasible, owned, f.devices if f.feasible else math.inf, -(r.slo_rate if r else 0.0))


def best_layout(fleets: Sequence[LayoutFleet]) -> LayoutFleet:
    """The cheapest feasible layout (owned USD per million output tokens, then fewest devices, then the fastest
    replica); where none is feasible, the first."""
    return min(fleets, key=_key)


def size_system(model: Model, system: System, device: Device, workload: Workload, slo: SLO,
                layouts: Sequence[Layout] | None = None, quotes=None, years: float = 3.0,
                usd_per_kwh: float = 0.12, pue: float = 1.3, policy: Policy | None = None,
                precision: str = "fp16", formats: TensorFormats | None = None, utilization: float = 0.9,
                block_size: int = 16, options: Options | None = None,
                usd_per_s: float | None = None) -> tuple[LayoutFleet, tuple[LayoutFleet, ...], dict]:
    """Every layout's fleet on ``system``: (the chosen one, all of them in the order searched, their setups by
    layout). Without ``layouts``: :func:`serving_layouts`, adding pipelines only when no tensor layout fits."""
    args = {"policy": policy, "precision": precision, "formats": formats, "utilization": utilization,
            "block_size": block_size, "options": options, "usd_per_s": usd_per_s}
    searched = list(layouts) if layouts else serving_layouts(model, system, workload)
    fleets, setups = [], {}
    for lay in searched:
        f, s = layout_fleet(model, system, device, lay, workload, slo, quotes, years, usd_per_kwh, pue, **args)
        fleets.append(f)
        setups[lay] = s
    if not layouts and not any(f.fleet is not None for f in fleets):
        for lay in serving_layouts(model, system, workload, pipeline=True):
            if lay.pp > 1:
                f, s = layout_fleet(model, system, device, lay, workload, slo, quotes, years, usd_per_kwh, pue,
                                    **args)
                fleets.append(f)
                setups[lay] = s
    if not fleets:
        raise ValueError(f"system {system.id}: no valid layout of {model.name} on {system.devices} devices")
    return best_layout(fleets), tuple(fleets), setups
