"""The workspace: the one object that owns the session's state and says what changed.

It holds one frozen :class:`~.state.State` (model, selected devices, assumptions, trace, planner requirements)
and the layer and device in focus. Every edit goes through :meth:`Workspace.execute` as an undoable command
that maps the state to a new one; :meth:`Workspace._swap` is the one place a new state comes in, and from it the
workspace emits past-tense psygnal events. :attr:`results` is the bundle of every analysis of the current state
(:mod:`.results`), shared by the panels, the report and the command line. Qt-free.
"""

from __future__ import annotations

import functools
from typing import Callable, Sequence

from psygnal import Signal

from explorer.core.analysis.evaluate import ModelAnalysis
from explorer.core.analysis.procurement import Requirements
from explorer.core.hardware.device import Device
from explorer.core.hardware.system import System
from explorer.core.traces.model import Trace
from explorer.core.workload.layers import Context
from explorer.core.workload.model import Model, build_table

from .commands import (
    Command,
    CommandStack,
    SelectDevices,
    SetAssumptions,
    SetDeviceOverrides,
)
from .device_overrides import apply_overrides, overrides_between
from .named_calibrations import Calibrations, CalibrationStore, NamedCalibration, apply_calibration
from .results import Results
from .serving_choice import ServingChoice
from .state import PARTS, PHASES, Assumptions, State, SystemChoice
from .training_choice import TrainingChoice
from .workspace_calibrations import CalibrationEdits

__all__ = ["PHASES", "Assumptions", "DeviceLookup", "State", "SystemLookup", "Workspace"]

DeviceLookup = Callable[[Sequence[str]], Sequence[Device]]
SystemLookup = Callable[[Sequence[str] | None], Sequence[System]]  # None: every system of the catalog


def shipped_systems(ids: Sequence[str] | None) -> tuple[System, ...]:
    """The shipped catalog's systems with these ids, in order (unknown ids are left out); None: all of them."""
    if ids is None:
        return _shipped()
    found = {s.id: s for s in _shipped()} if ids else {}
    return tuple(found[i] for i in ids if i in found)


@functools.lru_cache(maxsize=1)
def _shipped() -> tuple[System, ...]:
    from explorer.core.hardware.catalog_files import load_shipped_systems

    return load_shipped_systems()


class Workspace(CalibrationEdits):
    """The current state, an undo stack, and the results of the state (named kernel and link calibrations:
    :class:`~.workspace_calibrations.CalibrationEdits`)."""

    changed = Signal(object)  # frozenset of change names, after any command, undo or redo
    analysis_updated = Signal(object)  # the new ModelAnalysis (or None when nothing can be analyzed)
    layer_focused = Signal(int)  # top-level layer index, -1 for none (selection shared by every view)
    device_focused = Signal(str)  # device id in focus for single-device panels ('' for none)
    dirty_changed = Signal(bool)
    systems_reloaded = Signal()  # the catalog's systems changed (added, edited, deleted, imported)

    def __init__(self, model: Model | None = None, lookup: DeviceLookup | None = None,
                 assumptions: Assumptions | None = None, systems: SystemLookup | None = None,
                 calibration_store: CalibrationStore | None = None):
        self._state = State(model=model or State().model, assumptions=(assumptions or Assumptions()).checked())
        self._lookup = lookup or (lambda ids: ())
        self._system_lookup = systems or shipped_systems
        # the catalog database's named calibrations (None: the project keeps its own, as format 8 did)
        self._store = calibration_store
        self._catalog_named: dict[str, tuple[NamedCalibration, ...]] = {}
        self._hardware: tuple[tuple, tuple] = ((), ())  # (key, resolved systems) of the last resolution
        self._devices: dict[str, Device] = {}
        # per device id: (catalog device, its overrides, the device with them applied), so that an unchanged
        # device stays the same object (the results bundle reuses what depends on it by identity)
        self._applied: dict[str, tuple[Device, object, Device]] = {}
        self.stack = CommandStack()
        self._results: Results | None = None  # the current state's bundle; None until asked for after a change
        self._last: Results | None = None  # the last bundle made (its results are reused where still valid)
        self._focused_layer = -1
        self._focused_device = ""
        self._was_clean = True

    # -- state (read-only from outside; change it with commands)
    @property
    def state(self) -> State:
        return self._state

    @property
    def model(self) -> Model:
        return self._state.model

    @property
    def device_ids(self) -> tuple[str, ...]:
        return self._state.device_ids

    @property
    def assumptions(self) -> Assumptions:
        return self._state.assumptions

    @property
    def trace(self) -> Trace | None:
        return self._state.trace

    @property
    def requirements(self) -> Requirements:
        return self._state.requirements

    @property
    def devices(self) -> tuple[Device, ...]:
        """The selected devices, with the project's device overrides applied."""
        ids = self._state.device_ids
        missing = [i for i in ids if i not in self._devices]
        if missing:
            for d in self._lookup(missing):
                self._devices[d.id] = d
        return tuple(self._overridden(self._devices[i]) for i in ids if i in self._devices)

    def _overridden(self, device: Device) -> Device:
        values = self._state.device_overrides.get(device.id)
        named = self.used_calibration(device.id)
        if not values and named is None:
            return device
        base, was, applied = self._applied.get(device.id, (None, None, None))
        if base is not device or was != (values, named):
            applied = apply_calibration(apply_overrides(device, values), named)
            self._applied[device.id] = (device, (values, named), applied)
        return applied

    @property
    def device_overrides(self):
        """The project's device overrides: figures by device id and field (SI) that win over the catalog's."""
        return self._state.device_overrides

    def override_device(self, device: Device, base: Device | None = None) -> None:
        """Record an edit of ``device`` as project overrides (one undoable step): its figures that differ from
        ``base`` (default: the device as the session shows it now) join the device's overrides, so the edit
        travels with the project file. Nothing is recorded when no overridable figure changed."""
        if base is None:
            base = next((d for d in self.devices if d.id == device.id), None)
        changed = overrides_between(base, device) if base is not None else {}
        if not changed:
            return
        overrides = {k: dict(v) for k, v in self._state.device_overrides.items()}
        overrides[device.id] = {**overrides.get(device.id, {}), **changed}
        self.execute(SetDeviceOverrides(overrides, text=f"override {device.name}"))

    def clear_overrides(self, device_id: str) -> None:
        """Drop a device's overrides (the catalog's figures apply again), as one undoable step."""
        if device_id in self._state.device_overrides:
            overrides = {k: v for k, v in self._state.device_overrides.items() if k != device_id}
            self.execute(SetDeviceOverrides(overrides, text=f"clear the overrides of {device_id}"))

    def put_devices(self, devices: Sequence[Device]) -> None:
        """Make devices known (e.g. after a catalog edit or for devices not in the catalog); re-analyzes."""
        for d in devices:
            self._devices[d.id] = d
            self._catalog_named.pop(d.id, None)  # an import may have brought named calibrations with the device
        if {d.id for d in devices} & {device.id for _, device in self._hardware[1]}:
            self._hardware = ((None,), ())  # a chosen system's device was edited: resolve the systems again
        self._notify(frozenset({"devices"}))

    def reload_systems(self) -> None:
        """The catalog's systems changed (a system added, edited, deleted or imported in the catalog dock): the
        chosen systems are resolved again (an edited one is re-analyzed), the views re-read their choices
        (:attr:`systems_reloaded`), and the results that read the systems are recomputed."""
        self._hardware = ((None,), ())
        self._results = None
        self.systems_reloaded.emit()
        self._notify(frozenset({"system"}))

    @property
    def focused_layer(self) -> int:
        return self._focused_layer

    def focus_layer(self, index: int) -> None:
        index = index if 0 <= index < len(self._state.model.layers) else -1
        if index != self._focused_layer:
            self._focused_layer = index
            self.layer_focused.emit(index)

    @property
    def focused_device(self) -> str:
        ids = self._state.device_ids
        if self._focused_device in ids:
            return self._focused_device
        return ids[0] if ids else ""

    def focus_device(self, device_id: str) -> None:
        if device_id != self._focused_device:
            self._focused_device = device_id
            self.device_focused.emit(self.focused_device)

    # -- edits
    def execute(self, command: Command) -> None:
        """Apply ``command`` (a ValueError leaves everything as it was) and record it for undo."""
        before = self._state
        after = command.apply(before)
        self._store_edits(command, forward=True)
        self.stack.push(command, before, after)
        self._swap(after, command.changes)

    def undo(self) -> None:
        step = self.stack.undo()
        if step is not None:
            self._store_edits(step.command, forward=False)
            self._swap(step.before, step.command.changes)

    def redo(self) -> None:
        step = self.stack.redo()
        if step is not None:
            self._store_edits(step.command, forward=True)
            self._swap(step.after, step.command.changes)

    def select_devices(self, ids: Sequence[str]) -> None:
        self.execute(SelectDevices(tuple(ids)))

    def set_assumptions(self, **values) -> None:
        self.execute(SetAssumptions(values))

    def mark_clean(self) -> None:
        self.stack.set_clean()
        self._emit_dirty()

    @property
    def is_dirty(self) -> bool:
        return not self.stack.is_clean

    def _emit_dirty(self) -> None:
        clean = self.stack.is_clean
        if clean != self._was_clean:
            self._was_clean = clean
            self.dirty_changed.emit(not clean)

    def _swap(self, state: State, changes: frozenset[str]) -> None:
        """The one place a new state comes in."""
        if state.device_overrides != self._state.device_overrides or state.calibrations != self._state.calibrations:
            self._hardware = ((None,), ())  # a chosen system's device may have new figures: resolve them again
        self._state = state
        self._notify(changes)

    def _notify(self, changes: frozenset[str]) -> None:
        if self._focused_layer >= len(self._state.model.layers):
            self.focus_layer(-1)
        self._results = None
        self.changed.emit(frozenset(changes))
        self._emit_dirty()
        self.analysis_updated.emit(self.analysis)

    # -- the results of the state
    @property
    def results(self) -> Results:
        """Every analysis of the current state, computed on first use (panels, report and CLI read it)."""
        if self._results is None:
            self._results = (Results(self._state, self.devices, hardware=self.hardware) if self._last is None
                             else self._last.successor(self._state, self.devices, self.hardware))
            self._last = self._results
        return self._results

    def available_systems(self) -> tuple[System, ...]:
        """Every system the catalog offers (the Systems panel's choices)."""
        return tuple(self._system_lookup(None))

    @property
    def hardware(self) -> tuple[tuple[System, Device], ...]:
        """The chosen systems with their devices (systems whose device the catalog lacks are left out), resolved
        again only when the ids change; ``results.systems`` makes them clusters of ``system.nodes``."""
        ids = self._state.system.system_ids
        if self._hardware[0] != ids:
            links = self._state.calibrations.links  # the project's named link fits in use (.link_calibrations)
            systems = tuple(links.apply(s) for s in self._system_lookup(ids))
            devices = {d.id: self._overridden(d)
                       for d in self._lookup(tuple(dict.fromkeys(s.device_id for s in systems)))}
            self._hardware = (ids, tuple((s, devices[s.device_id]) for s in systems if s.device_id in devices))
        return self._hardware[1]

    @property
    def context(self) -> Context:
        return self._state.assumptions.context

    @property
    def table(self):
        return build_table(self._state.model, self.context)

    @property
    def analysis(self) -> ModelAnalysis | None:
        return self.results.analysis

    def reset(self, model: Model, device_ids: Sequence[str] = (), assumptions: Assumptions | None = None,
              trace: Trace | None = None, requirements: Requirements | None = None,
              system: SystemChoice | None = None, training: TrainingChoice | None = None,
              serving: ServingChoice | None = None, device_overrides=None,
              calibrations: Calibrations | None = None) -> None:
        """Start over (new or opened project): no undo history, clean. ``device_overrides`` (by device id, field:
        SI value) are applied to the catalog's devices from here on."""
        self._state = State(model=model, device_ids=tuple(device_ids),
                            assumptions=(assumptions or self._state.assumptions).checked(), trace=trace,
                            requirements=requirements or Requirements(), system=system or SystemChoice(),
                            training=training or TrainingChoice(), serving=serving,
                            device_overrides=device_overrides or {}, calibrations=calibrations or Calibrations())
        self._hardware = ((None,), ())
        self._catalog_named.clear()  # read the catalog's named calibrations again (another project, a new catalog)
        self.stack.clear()
        self._focused_layer = -1
        self._notify(frozenset(PARTS))
