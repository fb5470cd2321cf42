"""The Design-space panel's sweep on a worker thread (QThreadPool / QRunnable), so the window stays live while a
large grid is analyzed. A run is tagged with the inputs it started from (model, devices, grid, cost
assumptions); a result that arrives after the inputs changed is dropped, and only the newest request runs next
(requests made while one runs collapse into one); a sweep starts once the inputs have settled (300 ms)."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QObject, QRunnable, QThreadPool, QTimer, Signal

from explorer.core.analysis.cost import CostAssumptions
from explorer.core.hardware.device import Device
from explorer.core.sweep.grid import Grid
from explorer.core.sweep.run import SweepResult, sweep
from explorer.core.workload.model import Model

SETTLE_MS = 300  # inputs unchanged this long before a sweep starts


@dataclass(frozen=True, eq=False)
class SweepInputs:
    """What one sweep is computed from; two are the same when every part is (models and devices by identity:
    the workspace hands out the same frozen objects until they change)."""

    model: Model
    devices: tuple[Device, ...]
    grid: Grid
    assumptions: CostAssumptions
    time_model: str = "ideal"  # the toolbar's Times switch: the points' latencies under it

    def same(self, other: SweepInputs | None) -> bool:
        return (other is not None and self.model is other.model and self.grid == other.grid
                and self.assumptions == other.assumptions and self.time_model == other.time_model
                and len(self.devices) == len(other.devices)
                and all(a is b for a, b in zip(self.devices, other.devices)))


class _Signals(QObject):
    finished = Signal(object, object)  # (inputs, SweepResult)
    failed = Signal(object, str)  # (inputs, reason)


class _Job(QRunnable):
    def __init__(self, inputs: SweepInputs, signals: _Signals):
        super().__init__()
        self.inputs, self.signals = inputs, signals

    def run(self) -> None:
        i = self.inputs
        try:
            result = sweep(i.model, i.devices, i.grid, i.assumptions, time_model=i.time_model)
        except ValueError as exc:  # a grid the model does not take: said in the panel
            self.signals.failed.emit(self.inputs, str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - shown in the panel, never a crash of the worker thread
            self.signals.failed.emit(self.inputs, f"{type(exc).__name__}: {exc}")
            return
        self.signals.finished.emit(self.inputs, result)


class SweepWorker(QObject):
    """``request(inputs)`` runs the sweep off the GUI thread; ``done(inputs, result)`` or ``failed(inputs,
    reason)`` come back only for the latest request."""

    done = Signal(object, object)
    failed = Signal(object, str)

    def __init__(self, parent=None, pool: QThreadPool | None = None):
        super().__init__(parent)
        self.wanted: SweepInputs | None = None  # the newest request
        self.running: SweepInputs | None = None  # the one on the pool now
        self.dropped = 0  # results thrown away because the inputs had changed (tests read it)
        self._signals = _Signals()
        self._signals.finished.connect(self._finished)
        self._signals.failed.connect(self._failed)
        self.pool = pool or QThreadPool.globalInstance()
        self._settle = QTimer(self)
        self._settle.setSingleShot(True)
        self._settle.setInterval(SETTLE_MS)
        self._settle.timeout.connect(self._settled)

    @property
    def waiting(self) -> bool:
        """A request waits for its inputs to settle."""
        return self._settle.isActive()

    @property
    def busy(self) -> bool:
        return self.running is not None

    def request(self, inputs: SweepInputs) -> None:
        """Sweep ``inputs`` once they have stayed the same for :data:`SETTLE_MS` (a burst of edits, e.g. typing
        or dragging, starts one sweep at its end, not one per keystroke)."""
        if inputs.same(self.wanted):
            return
        self.wanted = inputs
        self._settle.start()

    def _settled(self) -> None:
        if self.running is None and self.wanted is not None:
            self._start(self.wanted)

    def _start(self, inputs: SweepInputs) -> None:
        self.running = inputs
        self.pool.start(_Job(inputs, self._signals))

    def _next(self, inputs) -> bool:
        """The run of ``inputs`` ended: True when it is still the one wanted, else start the newest."""
        self.running = None
        if inputs is self.wanted:
            return True
        self.dropped += 1
        if self.wanted is not None and not self._settle.isActive():
            self._start(self.wanted)
        return False

    def _finished(self, inputs, result: SweepResult) -> None:
        if self._next(inputs):
            self.done.emit(inputs, result)

    def _failed(self, inputs, reason: str) -> None:
        if self._next(inputs):
            self.failed.emit(inputs, reason)
