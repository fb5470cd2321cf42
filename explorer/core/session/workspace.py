"""The workspace: the one object that owns the session's state and says what changed.

It holds the model, the selected devices, the assumptions, and the layer and device in focus; every edit
goes through :meth:`Workspace.execute` as an undoable command; after each change it runs the one analysis
pass that every panel reads (:attr:`analysis`), and emits past-tense psygnal events. Qt-free.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Callable, Sequence

from psygnal import Signal

from explorer.core.analysis.device_arrays import DeviceArrays, device_arrays
from explorer.core.analysis.evaluate import ModelAnalysis, evaluate
from explorer.core.hardware.device import Device
from explorer.core.precision import check_precision
from explorer.core.session.commands import Command, CommandStack, SelectDevices, SetAssumptions
from explorer.core.workload.layers import Context
from explorer.core.workload.model import Model, build_table

PHASES = ("prefill", "decode")


@dataclass(frozen=True)
class Assumptions:
    """What the analyses assume beyond the model and the devices. Units: USD/kWh, years, fractions."""

    precision: str = "fp16"
    batch: int = 1
    seq_len: int | None = None  # None = the model's own token count
    phase: str = "prefill"
    electricity_usd_per_kwh: float = 0.12
    pue: float = 1.3
    utilization: float = 0.6  # duty cycle for TCO and cost per million
    years: float = 3.0

    def checked(self) -> "Assumptions":
        check_precision(self.precision)
        if self.phase not in PHASES:
            raise ValueError(f"phase: expected prefill or decode, got {self.phase!r}")
        for name in ("batch",):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name}: must be a whole number >= 1, got {v!r}")
        if self.seq_len is not None and (not isinstance(self.seq_len, int) or self.seq_len < 1):
            raise ValueError(f"seq_len: must be a whole number >= 1, got {self.seq_len!r}")
        for name in ("electricity_usd_per_kwh", "pue", "years"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name}: must be positive, got {getattr(self, name)!r}")
        if not 0 < self.utilization <= 1:
            raise ValueError(f"utilization: must be in (0, 1], got {self.utilization!r}")
        if self.pue < 1:
            raise ValueError(f"pue: must be at least 1, got {self.pue!r}")
        return self

    @property
    def context(self) -> Context:
        return Context(batch=self.batch, seq_len=self.seq_len, phase=self.phase)

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: dict, where: str = "assumptions") -> "Assumptions":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{where}: unknown keys {', '.join(unknown)}")
        try:
            return cls(**data).checked()
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}.{exc}") from None


DeviceLookup = Callable[[Sequence[str]], Sequence[Device]]


class Workspace:
    """Model + selected devices + assumptions, an undo stack, and the shared analysis."""

    changed = Signal(object)  # frozenset of change names, after any command, undo or redo
    analysis_updated = Signal(object)  # the new ModelAnalysis (or None when nothing can be analyzed)
    layer_focused = Signal(int)  # top-level layer index, -1 for none (selection shared by every view)
    device_focused = Signal(str)  # device id in focus for single-device panels ('' for none)
    dirty_changed = Signal(bool)

    def __init__(self, model: Model | None = None, lookup: DeviceLookup | None = None,
                 assumptions: Assumptions | None = None):
        self._model = model or Model.make("untitled", {"tokens": 128, "hidden": 768})
        self._device_ids: tuple[str, ...] = ()
        self._assumptions = (assumptions or Assumptions()).checked()
        self._lookup = lookup or (lambda ids: ())
        self._devices: dict[str, Device] = {}
        self.stack = CommandStack()
        self._analysis: ModelAnalysis | None = None
        self._arrays: tuple[tuple, DeviceArrays] | None = None  # device arrays, reused while devices are unchanged
        self._stale = True
        self._focused_layer = -1
        self._focused_device = ""
        self._was_clean = True

    # -- state (read-only from outside; change it with commands)
    @property
    def model(self) -> Model:
        return self._model

    @property
    def device_ids(self) -> tuple[str, ...]:
        return self._device_ids

    @property
    def assumptions(self) -> Assumptions:
        return self._assumptions

    @property
    def devices(self) -> tuple[Device, ...]:
        missing = [i for i in self._device_ids if i not in self._devices]
        if missing:
            for d in self._lookup(missing):
                self._devices[d.id] = d
        return tuple(self._devices[i] for i in self._device_ids if i in self._devices)

    def put_devices(self, devices: Sequence[Device]) -> None:
        """Make devices known (e.g. after a catalog edit or for devices not in the catalog); re-analyzes."""
        for d in devices:
            self._devices[d.id] = d
        self._notify(frozenset({"devices"}))

    @property
    def focused_layer(self) -> int:
        return self._focused_layer

    def focus_layer(self, index: int) -> None:
        index = index if 0 <= index < len(self._model.layers) else -1
        if index != self._focused_layer:
            self._focused_layer = index
            self.layer_focused.emit(index)

    @property
    def focused_device(self) -> str:
        if self._focused_device in self._device_ids:
            return self._focused_device
        return self._device_ids[0] if self._device_ids else ""

    def focus_device(self, device_id: str) -> None:
        if device_id != self._focused_device:
            self._focused_device = device_id
            self.device_focused.emit(self.focused_device)

    # -- edits
    def execute(self, command: Command) -> None:
        self.stack.push(command, self)
        self._notify(command.changes)

    def undo(self) -> None:
        command = self.stack.undo(self)
        if command is not None:
            self._notify(command.changes)

    def redo(self) -> None:
        command = self.stack.redo(self)
        if command is not None:
            self._notify(command.changes)

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

    def _notify(self, changes: frozenset[str]) -> None:
        if self._focused_layer >= len(self._model.layers):
            self.focus_layer(-1)
        self._stale = True
        self.changed.emit(frozenset(changes))
        self._emit_dirty()
        self.analysis_updated.emit(self.analysis)

    # -- the one analysis pass
    @property
    def context(self) -> Context:
        return self._assumptions.context

    @property
    def table(self):
        return build_table(self._model, self.context)

    @property
    def analysis(self) -> ModelAnalysis | None:
        if self._stale:
            devices = self.devices
            self._analysis = None
            if devices:
                key = (tuple(id(d) for d in devices), self._assumptions.precision)
                if self._arrays is None or self._arrays[0] != key:
                    self._arrays = (key, device_arrays(devices, self._assumptions.precision))
                self._analysis = evaluate(self._model, self._arrays[1], ctx=self.context)
            self._stale = False
        return self._analysis

    def reset(self, model: Model, device_ids: Sequence[str] = (), assumptions: Assumptions | None = None) -> None:
        """Start over (new or opened project): no undo history, clean."""
        self._model = model
        self._device_ids = tuple(device_ids)
        self._assumptions = (assumptions or self._assumptions).checked()
        self.stack.clear()
        self._focused_layer = -1
        self._notify(frozenset({"layers", "input", "model", "devices", "assumptions"}))
