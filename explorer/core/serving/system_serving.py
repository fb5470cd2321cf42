"""Serving on the systems of a session: per system, every serving layout sized as ``hwexplorer plan --rate ...
--system S`` sizes them (:func:`explorer.core.serving.system_fleet.size_system`), the cheapest kept, and the analytic
answer (the load curve and the estimate at the workload's rate) of one replica of the chosen layout, for the Serving
panel and the planner's serving rows (``docs/serving.md``, "Systems in the app").

The work is split where the inputs change at different rates, each part kept by its inputs so that an edit costs only
what it touches:

    system_setups   the replica setup of every layout searched (the system pass per grid point: ~0.5 s per layout);
                    kept by model, system, device, grid, lengths, engine settings, precision and formats
    serve_system    the fleet of each layout (its service-level rate, replicas, cost), the chosen one, and its
                    replica's answer; kept by the setups, the workload, the service levels, the device's quote and
                    the cost assumptions (a rate or a price edit re-sizes; it never rebuilds a surface)

The numbers are :func:`size_system`'s: the same layouts (:func:`serving_layouts`, pipelines only when no tensor layout
leaves room for a KV block), the same setups (:func:`~.serve.system_setup` under the given system-pass options, one
replica), the same :func:`~.system_fleet.layout_fleet` and :func:`~.system_fleet.best_layout`. A replica's answer is
one replica of ``tp x pp`` devices at the workload's whole rate, as the panel's devices are one replica each.

Two threads asking for the same setups at once (the panel's worker and the planner's) compute them once. Qt-free.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from explorer.core.formats import TensorFormats
from explorer.core.hardware.device import Device
from explorer.core.hardware.system import System
from explorer.core.parallel.layout import Layout
from explorer.core.parallel.system_pass import Options
from explorer.core.workload.model import Model

from .analytic import Setup
from .fleet import FleetRow
from .serve import ServingAnswer, cached_answer, grid_for, system_setup
from .simulate import Policy
from .surfaces import KeyedCache, require_token_model
from .system_fleet import LayoutFleet, best_layout, layout_fleet, serving_layouts
from .workload import SLO, Workload

SETUPS = KeyedCache(16)  # per system: the (layout, setup) pairs of every layout searched
SERVED = KeyedCache(64)  # per system: the sized fleets and the chosen layout's answer
_GUARD = threading.Lock()
_COMPUTING: dict = {}  # key -> the lock held while its setups are computed


@dataclass(frozen=True, eq=False)
class SystemServing:
    """One system serving the workload: every layout's fleet (``fleets``, in the order searched), the chosen one
    (``chosen``: the cheapest owned USD per million output tokens, then the fewest devices) and one replica of the
    chosen layout at the workload's rate (``answer``; None when no layout leaves room for a KV block)."""

    system: System
    device: Device
    chosen: LayoutFleet
    fleets: tuple[LayoutFleet, ...]
    answer: ServingAnswer | None

    @property
    def fleet(self) -> FleetRow | None:
        """The chosen layout's fleet (None: no layout leaves room for the KV cache)."""
        return self.chosen.fleet

    @property
    def label(self) -> str:
        """The chosen replica's layout, ``TP2 PP1``."""
        return self.chosen.label

    @property
    def reason(self) -> str:
        """Why the system serves nothing at the service levels ("" when it does)."""
        if self.chosen.feasible:
            return self.chosen.fleet.reason
        if all(f.fleet is None for f in self.fleets):
            return (f"no layout on its {self.system.devices} devices leaves room for the KV cache after the weights ("
                    + ", ".join(f.label for f in self.fleets) + ")")
        return "no layout meets the service levels at any load"


def serving_options(choice) -> Options:
    """The system-pass options of a choice with ``overlap``, ``collective``, ``skew`` and ``offload`` (the Systems
    panel's :class:`~explorer.core.session.state.SystemChoice`); None: the defaults."""
    if choice is None:
        return Options()
    return Options(overlap=choice.overlap, algorithm=choice.collective, skew=choice.skew, offload=choice.offload)


def serving_hardware(hardware: Sequence[tuple[System, Device]], nodes: int = 1) -> tuple[tuple[System, Device], ...]:
    """Each (system, device) as a cluster of ``nodes`` such systems over its scale-out network (as the Systems panel
    sizes them); ValueError for a system with no scale-out network when ``nodes`` > 1."""
    return tuple((sy.with_nodes(nodes) if nodes > 1 else sy, d) for sy, d in hardware)


def _setups_key(model, system, device, workload, policy, precision, formats, utilization, block_size,
                options=None) -> tuple:
    g = grid_for(workload, policy, None, block_size)
    return ("system_setups", model, system, device, g, workload.mean_lengths(), policy, precision, formats,
            utilization, block_size, options or Options())


def _compute_setups(model, system, device, workload, policy, precision, formats, utilization,
                    block_size, options=None) -> tuple[tuple[Layout, Setup], ...]:
    def setups(layouts) -> list[tuple[Layout, Setup]]:
        return [(lay, replace(system_setup(model, system, device, lay, workload, policy, precision, formats,
                                           utilization, block_size, options=options), replicas=1))
                for lay in layouts]

    found = setups(serving_layouts(model, system, workload))
    if not any(s.memory.blocks >= 1 for _, s in found):  # as size_system: pipelines only when no tensor layout fits
        found += setups([lay for lay in serving_layouts(model, system, workload, pipeline=True) if lay.pp > 1])
    if not found:
        raise ValueError(f"system {system.id}: no valid layout of {model.name} on {system.devices} devices")
    return tuple(found)


def system_setups(model: Model, system: System, device: Device, workload: Workload, policy: Policy | None = None,
                  precision: str = "fp16", formats: TensorFormats | None = None, utilization: float = 0.9,
                  block_size: int = 16, options: Options | None = None) -> tuple[tuple[Layout, Setup], ...]:
    """(layout, one replica's setup) for every layout :func:`size_system` searches on ``system`` under the
    system-pass ``options`` (overlap, collective algorithm and format, skew, offload; None: the defaults), kept by
    key (the options are part of it); a second thread asking for the same key waits for the first's instead of
    computing it again."""
    policy = policy or Policy()
    key = _setups_key(model, system, device, workload, policy, precision, formats, utilization, block_size, options)
    found = SETUPS.peek(key)
    if found is not None:
        return found
    with _GUARD:
        lock = _COMPUTING.setdefault(key, threading.Lock())
    try:
        with lock:
            found = SETUPS.peek(key)
            if found is None:
                found = _compute_setups(model, system, device, workload, policy, precision, formats, utilization,
                                        block_size, options)
                SETUPS.put(key, found)
    finally:
        with _GUARD:
            _COMPUTING.pop(key, None)
    return found


def _served_key(setups, device: Device, workload, slo, quotes, years, usd_per_kwh, pue) -> tuple:
    quote = None if not quotes or device.id not in quotes else float(quotes[device.id])
    return ("served", setups, workload, slo, quote, float(years), float(usd_per_kwh), float(pue))


def serve_system(model: Model, system: System, device: Device, setups: Sequence[tuple[Layout, Setup]],
                 workload: Workload, slo: SLO, quotes: Mapping[str, float] | None = None, years: float = 3.0,
                 usd_per_kwh: float = 0.12, pue: float = 1.3) -> SystemServing:
    """Every layout of ``setups`` sized (:func:`layout_fleet`), the cheapest chosen (:func:`best_layout`) and its
    replica's analytic answer (:func:`~.serve.cached_answer`); kept by its inputs (the same setups object)."""

    def compute() -> SystemServing:
        fleets = tuple(layout_fleet(model, system, device, lay, workload, slo, quotes, years, usd_per_kwh, pue,
                                    setup=s)[0] for lay, s in setups)
        chosen = best_layout(fleets)
        setup = dict(setups)[chosen.layout]
        answer = cached_answer(workload, setup, slo) if chosen.fleet is not None else None
        return SystemServing(system, device, chosen, fleets, answer)

    key = _served_key(setups, device, workload, slo, quotes, years, usd_per_kwh, pue)
    try:
        hash(key)
    except TypeError:  # a workload with a trace: not kept
        return compute()
    return SERVED.get(key, compute)


def serve_systems(model: Model, hardware: Sequence[tuple[System, Device]], workload: Workload, slo: SLO,
                  policy: Policy | None = None, precision: str = "fp16", formats: TensorFormats | None = None,
                  utilization: float = 0.9, block_size: int = 16, quotes: Mapping[str, float] | None = None,
                  years: float = 3.0, usd_per_kwh: float = 0.12, pue: float = 1.3,
                  options: Options | None = None) -> tuple[SystemServing, ...]:
    """:func:`serve_system` on each (system, device) of ``hardware``, in order, under the system-pass ``options``;
    raises ValueError for a model that is not a token model."""
    if not hardware:
        return ()
    require_token_model(model)
    return tuple(serve_system(model, sy, d, system_setups(model, sy, d, workload, policy, precision, formats,
                                                          utilization, block_size, options),
                              workload, slo, quotes, years, usd_per_kwh, pue) for sy, d in hardware)


def serve_systems_ready(model: Model, hardware: Sequence[tuple[System, Device]], workload: Workload, slo: SLO,
                        policy: Policy | None = None, precision: str = "fp16", formats: TensorFormats | None = None,
                        utilization: float = 0.9, block_size: int = 16, quotes: Mapping[str, float] | None = None,
                        years: float = 3.0, usd_per_kwh: float = 0.12, pue: float = 1.3,
                        options: Options | None = None) -> bool:
    """Whether :func:`serve_systems` would compute nothing (every system's setups and sizing are kept, or it refuses
    the model at once)."""
    if not hardware:
        return True
    try:
        require_token_model(model)
    except ValueError:
        return True
    policy = policy or Policy()
    for sy, d in hardware:
        setups = SETUPS.peek(_setups_key(model, sy, d, workload, policy, precision, formats, utilization, block_size,
                                         options))
        if setups is None:
            return False
        try:
            if SERVED.peek(_served_key(setups, d, workload, slo, quotes, years, usd_per_kwh, pue)) is None:
                return False
        except TypeError:  # unhashable: never kept
            return False
    return True
