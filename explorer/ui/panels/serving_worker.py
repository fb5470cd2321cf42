"""The serving estimates off the UI thread: a results bundle's ``serving`` (or ``serving_fleet``, ``serving_systems``)
entry is read on a worker thread (QThreadPool) when it would build step-time surfaces or run searches
(``Results.serving_ready``; for systems: the system pass per layout, ~0.5 s each), so an
edit with the Serving panel or the planner's serving box on screen repaints at once ("estimating...") and the
numbers follow. A run is tagged with the inputs it started from (:func:`inputs_token`); a result whose inputs are
no longer the workspace's is dropped, as the panel's Simulate does. Reading a kept entry stays on the UI thread.
An estimator runs one job at a time: edits made while it runs keep only the latest inputs, started when it is done,
and a job whose inputs are no longer wanted when its turn comes is skipped (a burst of edits on a 10,000-layer model
does not queue one long run per edit, each holding the interpreter beside the UI thread).
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QRunnable, QThreadPool, QTimer, Signal


def inputs_token(results, name: str = "serving") -> tuple:
    """What ``results.<name>`` is computed from, as plain values (equal tokens: equal results), read without
    computing anything."""
    st, a = results.state, results.state.assumptions
    token = (name, st.model, tuple(results.devices), a.precision, a.tensor_formats, results.serving_choice,
             a.time_model)  # the Times switch: switching re-estimates
    if name in ("serving_fleet", "serving_systems"):
        token += (st.requirements.price, a.years, a.electricity_usd_per_kwh, a.pue)
    if name == "serving_systems":
        c = st.system  # the Systems panel's nodes and communication options: an edit of one re-sizes
        token += (results.hardware, c.nodes, c.overlap, c.offload, c.collective, c.skew)
    return token


START_DELAY_MS = 40  # a worker run starts this long after the edit that needs it
STALE = "\x00stale"  # a job's error when it was skipped: its inputs were no longer wanted when its turn came
_RUNNING: set = set()  # jobs asked for or running: a job's Python object must outlive its owner (a panel closed)


class _Signals(QObject):
    finished = Signal(object, object, str)  # (token, value, error)


class _Flight:
    """The inputs an estimator wants now, read by its jobs on the worker thread (a plain object: no Qt call)."""

    token = None


class _Job(QRunnable):
    def __init__(self, token, results, name: str, signals: _Signals, flight: _Flight | None = None):
        super().__init__()
        self.token, self.results, self.name, self.signals = token, results, name, signals
        self.flight = flight

    def run(self) -> None:
        if self.flight is not None and self.flight.token is not self.token:  # stale before it began: skip it
            self._emit(None, STALE)
            return
        try:
            value, error = getattr(self.results, self.name), ""
        except ValueError as exc:  # a model or setting the serving model refuses: said, not raised
            value, error = (), str(exc)
        except Exception as exc:  # noqa: BLE001 - shown in the panel, never a crash of the worker thread
            value, error = (), f"{type(exc).__name__}: {exc}"
        self._emit(value, error)

    def _emit(self, value, error: str) -> None:
        try:
            self.signals.finished.emit(self.token, value, error)
        except RuntimeError:  # the owner was closed meanwhile: nobody to tell
            pass
        finally:
            _RUNNING.discard(self)


class Estimator(QObject):
    """Reads one serving entry of a results bundle now when it is kept, else on a worker thread.

    :meth:`get` answers ``(value, error, busy)``: the entry (or () while it is computed, or when refused), the
    refusal's message, and whether a worker is computing it. ``ready`` is emitted when a worker's result for the
    workspace's current inputs is in (the owner redraws then)."""

    ready = Signal()

    def __init__(self, workspace, name: str = "serving", parent=None):
        super().__init__(parent)
        self.workspace, self.name = workspace, name
        self.token = None  # the inputs of the run in flight
        self._last = None  # (token, value, error) of the last answer
        self.runs = 0  # worker runs asked for (one per new set of inputs; tests read it)
        self._flight = _Flight()
        self._running = None  # the job in the pool (queued or running): one at a time per estimator
        self._next = None  # the job to start when it is done
        self._signals = _Signals()
        self._signals.finished.connect(self._finished)
        self.pool = QThreadPool.globalInstance()

    @property
    def busy(self) -> bool:
        return self.token is not None

    def get(self) -> tuple:
        r = self.workspace.results
        token = inputs_token(r, self.name)
        if self._last is not None and self._last[0] == token:
            return self._last[1], self._last[2], False
        if r.serving_ready(self.name):  # kept (or refused at once): no worker
            try:
                value, error = getattr(r, self.name), ""
            except ValueError as exc:
                value, error = (), str(exc)
            self._last, self.token = (token, value, error), None
            self._flight.token = None  # a job still queued is no longer wanted
            return value, error, False
        if self.token != token:  # not in flight yet: start it (an older run's result will be dropped)
            self.token = token
            self.runs += 1
            self._flight.token = token
            job = _Job(token, r, self.name, self._signals, self._flight)
            job.setAutoDelete(False)  # the Python object stays whole while it runs: kept until it is done
            # after the edit's repaint (the worker would share the interpreter with it), and not at all when
            # another edit comes first (typing in a field starts one run, not one per key)
            _RUNNING.add(job)
            QTimer.singleShot(START_DELAY_MS, self, lambda: self._start(job))
        return (), "", True

    def _start(self, job: _Job) -> None:
        if job.token is not self.token:
            _RUNNING.discard(job)
            return  # stale before it started
        if self._running is not None:  # one run at a time: edits during a long run queue only the latest
            if self._next is not None:
                _RUNNING.discard(self._next)
            self._next = job
            return
        self._running = job
        self.pool.start(job)

    def _finished(self, token, value, error: str) -> None:
        self._running, job, self._next = None, self._next, None
        if job is not None:
            self._start(job)
        if token != self.token or error == STALE:
            return  # stale: the inputs changed since it started
        self.token = None
        self._last = (token, value, error)
        self.ready.emit()
