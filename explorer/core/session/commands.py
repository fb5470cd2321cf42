"""Undoable edits. Every change to a workspace is a Command pushed on its CommandStack.

A command is a small object with ``do(ws)`` and ``undo(ws)``; it reports what it changed through
``changes`` (a set of names: "layers", "devices", "assumptions", "input", "model"), so views refresh only
what they must. The stack is Qt-free; the UI shows it in its Edit menu.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Sequence

from explorer.core.workload.model import LayerSpec, Model

if TYPE_CHECKING:  # pragma: no cover
    from explorer.core.session.workspace import Workspace


class Command:
    text = "edit"
    changes: frozenset[str] = frozenset({"layers"})

    def do(self, ws: "Workspace") -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def undo(self, ws: "Workspace") -> None:  # pragma: no cover - abstract
        raise NotImplementedError


def _set_layers(ws: "Workspace", layers: Sequence[LayerSpec]) -> None:
    ws._model = replace(ws._model, layers=tuple(layers))


@dataclass
class AddLayers(Command):
    index: int
    specs: tuple[LayerSpec, ...]
    text: str = "add layer"

    def do(self, ws):
        layers = list(ws.model.layers)
        self.index = max(0, min(self.index, len(layers)))
        layers[self.index:self.index] = self.specs
        _set_layers(ws, layers)

    def undo(self, ws):
        layers = list(ws.model.layers)
        del layers[self.index:self.index + len(self.specs)]
        _set_layers(ws, layers)


@dataclass
class RemoveLayers(Command):
    indices: tuple[int, ...]
    text: str = "delete layers"
    removed: list[tuple[int, LayerSpec]] = field(default_factory=list)

    def do(self, ws):
        layers = list(ws.model.layers)
        self.removed = [(i, layers[i]) for i in sorted(set(self.indices))]
        for i, _ in reversed(self.removed):
            del layers[i]
        _set_layers(ws, layers)

    def undo(self, ws):
        layers = list(ws.model.layers)
        for i, spec in self.removed:
            layers.insert(i, spec)
        _set_layers(ws, layers)


@dataclass
class MoveLayers(Command):
    """Move the layers at ``indices`` so that they sit, in order, before the layer now at ``dest``."""

    indices: tuple[int, ...]
    dest: int
    text: str = "move layers"
    before: tuple[LayerSpec, ...] = ()

    def do(self, ws):
        self.before = ws.model.layers
        layers = list(self.before)
        chosen = sorted(set(self.indices))
        moving = [layers[i] for i in chosen]
        dest = self.dest - sum(1 for i in chosen if i < self.dest)
        rest = [spec for i, spec in enumerate(layers) if i not in set(chosen)]
        dest = max(0, min(dest, len(rest)))
        _set_layers(ws, rest[:dest] + moving + rest[dest:])

    def undo(self, ws):
        _set_layers(ws, self.before)


@dataclass
class ReplaceLayer(Command):
    """Change one layer: parameters, name, repeat (the new spec replaces the old one)."""

    index: int
    spec: LayerSpec
    text: str = "edit layer"
    old: LayerSpec | None = None

    def do(self, ws):
        layers = list(ws.model.layers)
        self.old = layers[self.index]
        layers[self.index] = self.spec
        _set_layers(ws, layers)

    def undo(self, ws):
        layers = list(ws.model.layers)
        layers[self.index] = self.old
        _set_layers(ws, layers)


@dataclass
class SetModel(Command):
    """Replace the whole model (new, from template, import) or its input description."""

    model: Model
    text: str = "replace model"
    changes: frozenset[str] = frozenset({"layers", "input", "model"})
    old: Model | None = None

    def do(self, ws):
        self.old = ws.model
        ws._model = self.model

    def undo(self, ws):
        ws._model = self.old


@dataclass
class SelectDevices(Command):
    device_ids: tuple[str, ...]
    text: str = "select devices"
    changes: frozenset[str] = frozenset({"devices"})
    old: tuple[str, ...] = ()

    def do(self, ws):
        self.old = ws.device_ids
        ws._device_ids = tuple(dict.fromkeys(self.device_ids))

    def undo(self, ws):
        ws._device_ids = self.old


@dataclass
class SetAssumptions(Command):
    values: dict[str, Any]
    text: str = "change assumptions"
    changes: frozenset[str] = frozenset({"assumptions"})
    old: Any = None

    def do(self, ws):
        self.old = ws.assumptions
        ws._assumptions = replace(ws.assumptions, **self.values).checked()

    def undo(self, ws):
        ws._assumptions = self.old


@dataclass
class Composite(Command):
    commands: tuple[Command, ...]
    text: str = "edit"

    @property
    def changes(self) -> frozenset[str]:  # type: ignore[override]
        return frozenset().union(*(c.changes for c in self.commands))

    def do(self, ws):
        for c in self.commands:
            c.do(ws)

    def undo(self, ws):
        for c in reversed(self.commands):
            c.undo(ws)


class CommandStack:
    """Linear undo history with a clean mark (saved state)."""

    def __init__(self, limit: int = 500):
        self._done: list[Command] = []
        self._undone: list[Command] = []
        self._clean: int | None = 0
        self.limit = limit

    def push(self, command: Command, ws: "Workspace") -> None:
        command.do(ws)
        self._done.append(command)
        self._undone.clear()
        if self._clean is not None and self._clean > len(self._done) - 1:
            self._clean = None  # the saved state is no longer reachable
        if len(self._done) > self.limit:
            self._done.pop(0)
            self._clean = None if self._clean in (None, 0) else self._clean - 1

    def undo(self, ws: "Workspace") -> Command | None:
        if not self._done:
            return None
        command = self._done.pop()
        command.undo(ws)
        self._undone.append(command)
        return command

    def redo(self, ws: "Workspace") -> Command | None:
        if not self._undone:
            return None
        command = self._undone.pop()
        command.do(ws)
        self._done.append(command)
        return command

    @property
    def can_undo(self) -> bool:
        return bool(self._done)

    @property
    def can_redo(self) -> bool:
        return bool(self._undone)

    @property
    def undo_text(self) -> str:
        return self._done[-1].text if self._done else ""

    @property
    def redo_text(self) -> str:
        return self._undone[-1].text if self._undone else ""

    def set_clean(self) -> None:
        self._clean = len(self._done)

    @property
    def is_clean(self) -> bool:
        return self._clean == len(self._done)

    def clear(self) -> None:
        self._done.clear()
        self._undone.clear()
        self._clean = 0
