"""The Serving panel's "Simulate" button: the discrete-event simulation of each device's replica on a worker thread
(QThreadPool / QRunnable), so the window stays live. A run is tagged with the inputs it started from; a result
whose inputs are no longer the panel's (an edit came in meanwhile) is dropped. Progress is reported per device.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from explorer.core.serving.result import ServingResult
from explorer.core.serving.serve import simulate_replicas, summarize

REQUESTS = 2000  # requests simulated per device (the CLI's default)


@dataclass(frozen=True, eq=False)
class Simulated:
    """One device's simulation: the summary and each request's TTFT and TPOT [s] (NaN: none)."""

    result: ServingResult
    ttft: np.ndarray
    tpot: np.ndarray


def simulate_one(workload, setup, slo, n: int = REQUESTS, seed: int = 0) -> Simulated:
    req, runs = simulate_replicas(workload, setup, n, seed)
    ttft, tpot = np.full(len(req), np.nan), np.full(len(req), np.nan)
    for idx, run in runs:
        ttft[idx], tpot[idx] = run.ttft, run.tpot
    return Simulated(summarize(req, runs, setup, slo, workload.mean_rate()), ttft, tpot)


class _Signals(QObject):
    progress = Signal(object, int)  # (token, devices done)
    finished = Signal(object, object)  # (token, tuple of Simulated)
    failed = Signal(object, str)


class _Job(QRunnable):
    def __init__(self, token, workload, setups, slo, signals: _Signals, n: int):
        super().__init__()
        self.token, self.workload, self.setups, self.slo, self.signals, self.n = token, workload, setups, slo, signals, n

    def run(self) -> None:
        out = []
        try:
            for i, setup in enumerate(self.setups):
                out.append(simulate_one(self.workload, setup, self.slo, self.n))
                self.signals.progress.emit(self.token, i + 1)
        except Exception as exc:  # noqa: BLE001 - shown in the panel, never a crash of the worker thread
            self.signals.failed.emit(self.token, f"{type(exc).__name__}: {exc}")
            return
        self.signals.finished.emit(self.token, tuple(out))


class Simulator(QObject):
    """Starts simulations and hands back only the latest one's results (``done(results)``); ``progress(i, n)``."""

    done = Signal(object)
    progress = Signal(int, int)
    failed = Signal(str)

    def __init__(self, parent=None, n: int = REQUESTS):
        super().__init__(parent)
        self.n = n
        self.token = None  # the inputs of the run in flight (or of the last one)
        self.running = False
        self._total = 0
        self._signals = _Signals()
        self._signals.progress.connect(self._progress)
        self._signals.finished.connect(self._finished)
        self._signals.failed.connect(self._failed)
        self.pool = QThreadPool.globalInstance()

    def start(self, token, workload, setups, slo) -> None:
        self.token, self.running, self._total = token, True, len(setups)
        self.progress.emit(0, self._total)
        self.pool.start(_Job(token, workload, tuple(setups), slo, self._signals, self.n))

    def forget(self) -> None:
        """The inputs changed: whatever is in flight is stale."""
        self.token, self.running = None, False

    def _progress(self, token, i: int) -> None:
        if token is self.token:
            self.progress.emit(i, self._total)

    def _finished(self, token, results) -> None:
        if token is self.token:  # a stale run (the inputs changed since it started) is dropped
            self.running = False
            self.done.emit(results)

    def _failed(self, token, text: str) -> None:
        if token is self.token:
            self.running = False
            self.failed.emit(text)
