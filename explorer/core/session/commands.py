"""Undoable edits. Every change to a workspace is a Command: a pure map from one frozen :class:`State` to the next.

A command reports what it changed through ``changes`` (names from :data:`.state.PARTS`), so views refresh only
what they must and the results bundle recomputes only what depends on it. ``apply`` raises ``ValueError`` for an
edit that would make the state invalid, before anything changes. The :class:`CommandStack` keeps the states
before and after each command, so undo and redo swap a whole state back in. Qt-free; the UI shows the stack in
its Edit menu.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from explorer.core.analysis.procurement import Requirements
from explorer.core.traces.model import Trace
from explorer.core.workload.model import LayerSpec, Model
from explorer.core.workload.templates import edited_name

from .named_calibrations import Calibrations, StoreEdit
from .serving_choice import ServingChoice
from .state import State, SystemChoice


class Command:
    text = "edit"
    changes: frozenset[str] = frozenset({"layers"})
    #: Consecutive commands with the same non-empty key make one undo step (typing in one field, say).
    merge_key: str = ""

    def apply(self, state: State) -> State:  # pragma: no cover - abstract
        raise NotImplementedError


def _with_layers(state: State, layers: Sequence[LayerSpec]) -> State:
    """The state with new layers; a template's model is renamed "<name> (edited)" once they differ from it."""
    layers = tuple(layers)
    return state.with_(model=replace(state.model, name=edited_name(state.model.name, layers), layers=layers))


@dataclass
class AddLayers(Command):
    index: int
    specs: tuple[LayerSpec, ...]
    text: str = "add layer"

    def apply(self, state):
        layers = list(state.model.layers)
        index = max(0, min(self.index, len(layers)))
        layers[index:index] = self.specs
        return _with_layers(state, layers)


@dataclass
class RemoveLayers(Command):
    indices: tuple[int, ...]
    text: str = "delete layers"

    def apply(self, state):
        gone = set(self.indices)
        return _with_layers(state, [spec for i, spec in enumerate(state.model.layers) if i not in gone])


@dataclass
class MoveLayers(Command):
    """Move the layers at ``indices`` so that they sit, in order, before the layer now at ``dest``."""

    indices: tuple[int, ...]
    dest: int
    text: str = "move layers"

    def apply(self, state):
        layers = state.model.layers
        chosen = sorted(set(self.indices))
        moving = [layers[i] for i in chosen]
        dest = self.dest - sum(1 for i in chosen if i < self.dest)
        rest = [spec for i, spec in enumerate(layers) if i not in set(chosen)]
        dest = max(0, min(dest, len(rest)))
        return _with_layers(state, rest[:dest] + moving + rest[dest:])


@dataclass
class ReplaceLayer(Command):
    """Change one layer: parameters, name, repeat (the new spec replaces the old one)."""

    index: int
    spec: LayerSpec
    text: str = "edit layer"

    def apply(self, state):
        layers = list(state.model.layers)
        layers[self.index] = self.spec
        return _with_layers(state, layers)


@dataclass
class SetModel(Command):
    """Replace the whole model (new, from template, import) or its input description."""

    model: Model
    text: str = "replace model"
    changes: frozenset[str] = frozenset({"layers", "input", "model"})

    def apply(self, state):
        return state.with_(model=self.model)


@dataclass
class SelectDevices(Command):
    device_ids: tuple[str, ...]
    text: str = "select devices"
    changes: frozenset[str] = frozenset({"devices"})

    def apply(self, state):
        return state.with_(device_ids=tuple(self.device_ids))


@dataclass
class SetAssumptions(Command):
    values: dict[str, Any]
    text: str = "change assumptions"
    changes: frozenset[str] = frozenset({"assumptions"})

    def apply(self, state):
        return state.with_(assumptions=replace(state.assumptions, **self.values).checked())


@dataclass
class SetTrace(Command):
    """Load a profiler trace into the session (None clears it)."""

    trace: Trace | None
    text: str = "load trace"
    changes: frozenset[str] = frozenset({"trace"})

    def apply(self, state):
        return state.with_(trace=self.trace)


@dataclass
class SetRequirements(Command):
    """Replace the procurement planner's requirements and quotes."""

    requirements: Requirements
    text: str = "edit requirements"
    changes: frozenset[str] = frozenset({"requirements"})
    merge_key: str = ""

    def apply(self, state):
        return state.with_(requirements=self.requirements)


@dataclass
class SetDeviceOverrides(Command):
    """Replace the device overrides (figures by device id and field that win over the catalog's)."""

    overrides: Mapping[str, Mapping[str, float]]
    text: str = "edit device figures"
    changes: frozenset[str] = frozenset({"devices"})

    def apply(self, state):
        return state.with_(device_overrides=self.overrides)


@dataclass
class SetCalibrations(Command):
    """Replace the named calibrations and the choice in use (an import adds one and uses it; a choice picks
    another, or the catalog's). ``store``: the writes to the catalog database's named calibrations that go with it
    (an import or a removal there); the workspace runs them on do and redo and their inverse on undo."""

    calibrations: Calibrations
    text: str = "choose calibration"
    changes: frozenset[str] = frozenset({"devices"})
    store: tuple[StoreEdit, ...] = ()

    def apply(self, state):
        return state.with_(calibrations=self.calibrations.checked())


@dataclass
class Composite(Command):
    commands: tuple[Command, ...]
    text: str = "edit"

    @property
    def changes(self) -> frozenset[str]:  # type: ignore[override]
        return frozenset().union(*(c.changes for c in self.commands))

    def apply(self, state):
        for c in self.commands:
            state = c.apply(state)
        return state


@dataclass(frozen=True)
class Step:
    """One entry of the history: the command and the states on either side of it."""

    command: Command
    before: State
    after: State


@dataclass
class SetSystem(Command):
    """Choose the systems, their node count, the layout (None: the best) or the communication options."""

    choice: SystemChoice
    text: str = "choose systems"
    changes: frozenset[str] = frozenset({"system"})

    def apply(self, state):
        return state.with_(system=self.choice.checked())


@dataclass
class SetServing(Command):
    """Set the serving workload, service levels or engine settings (``docs/serving.md``)."""

    choice: ServingChoice
    text: str = "edit serving workload"
    changes: frozenset[str] = frozenset({"serving"})
    merge_key: str = ""

    def apply(self, state):
        return state.with_(serving=self.choice.checked())


class CommandStack:
    """Linear undo history of :class:`Step` entries with a clean mark (saved state)."""

    def __init__(self, limit: int = 500):
        self._done: list[Step] = []
        self._undone: list[Step] = []
        self._clean: int | None = 0
        self.limit = limit

    def push(self, command: Command, before: State, after: State) -> None:
        top = self._done[-1] if self._done else None
        if (top is not None and command.merge_key and command.merge_key == top.command.merge_key
                and self._clean != len(self._done) and not self._undone):
            self._done[-1] = Step(command, top.before, after)  # one step for a run of edits of one thing
            return
        self._done.append(Step(command, before, after))
        self._undone.clear()
        if self._clean is not None and self._clean > len(self._done) - 1:
            self._clean = None  # the saved state is no longer reachable
        if len(self._done) > self.limit:
            self._done.pop(0)
            self._clean = None if self._clean in (None, 0) else self._clean - 1

    def undo(self) -> Step | None:
        if not self._done:
            return None
        step = self._done.pop()
        self._undone.append(step)
        return step

    def redo(self) -> Step | None:
        if not self._undone:
            return None
        step = self._undone.pop()
        self._done.append(step)
        return step

    @property
    def can_undo(self) -> bool:
        return bool(self._done)

    @property
    def can_redo(self) -> bool:
        return bool(self._undone)

    @property
    def undo_text(self) -> str:
        return self._done[-1].command.text if self._done else ""

    @property
    def redo_text(self) -> str:
        return self._undone[-1].command.text if self._undone else ""

    def set_clean(self) -> None:
        self._clean = len(self._done)

    @property
    def is_clean(self) -> bool:
        return self._clean == len(self._done)

    def clear(self) -> None:
        self._done.clear()
        self._undone.clear()
        self._clean = 0
