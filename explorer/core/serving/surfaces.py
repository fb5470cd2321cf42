"""Step-time surfaces on devices (:func:`device_surface`), many at once: one stacked work table per (model,
grid), one analysis pass over every device, both kept in small caches so an edit that does not touch them (a
device checked, a rate, a service level) costs no work.

The numbers are those of the earlier per-device algorithm (each device its own stacked table and pass), to 1e-12:
the stacked table is the same and :func:`explorer.core.analysis.evaluate.evaluate` is element-wise per device
column (``tests/core/serving/test_surface_fast.py`` keeps that algorithm as its reference). What used to cost
the time: the work table of each of the ~155 grid points was built once per device (the work-table cache of 64
entries is smaller than the grid, so it never hit); here it is built once per model and grid.

Only token models are served: a model whose input has no ``tokens`` (a CNN) raises ``ValueError`` ("not a token
model") before any table is built.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from explorer.core.analysis.evaluate import MODELS, evaluate
from explorer.core.analysis.time_source import device_time_sources
from explorer.core.formats import TensorFormats
from explorer.core.hardware.device import Device
from explorer.core.parallel.system_pass import _concat as concat_tables
from explorer.core.workload.layers import Context
from explorer.core.workload.model import LayerTable, Model, build_table

from .surface import Grid, StepSurface, _contexts, _lengths, grid

WORK_ENTRIES = 4  # stacked work tables kept (one per model and grid: 0.3 MB for Llama-3-70B, 4 MB for 200 layers)
SURFACE_ENTRIES = 64  # surfaces kept (one per model, device, grid, precision, formats, attention, time model)


class KeyedCache:
    """A small least-recently-used cache, safe to share between the UI thread and a worker thread."""

    def __init__(self, size: int):
        self.size = size
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                self.hits += 1
                return self._items[key]
        value = compute()  # outside the lock: a long computation never blocks another thread's hit
        self.put(key, value)
        return value

    def peek(self, key: Hashable, default: Any = None) -> Any:
        with self._lock:
            return self._items.get(key, default)

    def put(self, key: Hashable, value: Any) -> None:
        with self._lock:
            self.misses += 1
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.hits = self.misses = 0


WORK = KeyedCache(WORK_ENTRIES)
SURFACES = KeyedCache(SURFACE_ENTRIES)


def require_token_model(model: Model) -> None:
    """Raise ValueError unless ``model`` takes tokens (serving is token by token)."""
    if not model.layers:
        raise ValueError("model: it has no layers to serve")
    if "tokens" not in model.input_dict:
        raise ValueError(f"model: {model.name or 'the model'} is not a token model (its input has no tokens, "
                         "e.g. a CNN); serving estimates need a language model")


@dataclass(frozen=True, eq=False)
class SurfaceWork:
    """The work of every grid point of a surface, as one table: decode points (batch x context, row-major) then
    prefill points (prompts x length); ``starts`` the first row of each point."""

    batch: np.ndarray
    context: np.ndarray
    prefill_batch: np.ndarray
    length: np.ndarray
    points: tuple[Context, ...]
    table: LayerTable
    starts: np.ndarray


def surface_work(model: Model, g: Grid, attention: str = "fused") -> SurfaceWork:
    """The stacked work table of a device surface's grid (cached per model, grid and attention kernel)."""
    require_token_model(model)
    return WORK.get(("work", model, g, attention), lambda: _build_work(model, g, attention))


def _build_work(model: Model, g: Grid, attention: str) -> SurfaceWork:
    batch, ctxs = grid(g.max_batch, g.points), _contexts(g)
    pbatch, lengths = grid(g.max_prefill_batch, max(g.points // 2, 3)), _lengths(g)
    points = [Context(batch=int(b), seq_len=int(c), phase="decode", attention=attention)
              for b in batch for c in ctxs]
    points += [Context(batch=int(n), seq_len=int(L), phase="prefill", attention=attention)
               for n in pbatch for L in lengths]
    tables = [build_table.__wrapped__(model, ctx) for ctx in points]  # each once: the lru cache would only churn
    if not any(len(t) for t in tables):
        raise ValueError("model: it has no layers to serve")
    for t in tables:
        if t.errors:
            i, msg = t.errors[0]
            raise ValueError(f"layer {i} ({model.layers[i].name or model.layers[i].kind}): {msg}")
    starts = np.cumsum([0] + [len(t) for t in tables])[:-1]
    return SurfaceWork(batch, ctxs, pbatch, lengths, tuple(points), concat_tables(tables), starts)


def device_surfaces(model: Model, devices: Sequence[Device], g: Grid, precision: str = "fp16",
                    formats: TensorFormats | None = None, attention: str = "fused",
                    time_model: str = "ideal") -> tuple[StepSurface, ...]:
    """The surface of each device (in order): the ones not cached come from one :func:`evaluate` pass over the
    stacked work table and all of them. ``time_model``: each row's time under the ideal or the calibrated model
    (:meth:`~explorer.core.analysis.evaluate.ModelAnalysis.model_time`; rows a device has no curve for keep the
    ideal time), and the surface labelled with where its times come from."""
    if time_model not in MODELS:
        raise ValueError(f"time_model: expected one of {', '.join(MODELS)}, got {time_model!r}")
    keys = [("surface", model, d, g, precision, formats, attention, time_model) for d in devices]
    found = [SURFACES.peek(k) for k in keys]
    todo = [i for i, s in enumerate(found) if s is None]
    if todo:
        w = surface_work(model, g, attention)
        r = evaluate(w.table, [devices[i] for i in todo], precision, w.points[0], model, formats)
        times, sources = r.model_time(time_model), device_time_sources(r, time_model)
        n_dec = len(w.batch) * len(w.context)
        for col, i in enumerate(todo):  # a point's time: the sum of its rows' count x time (as evaluate sums)
            s = np.add.reduceat(r.count * np.ascontiguousarray(times[:, col]), w.starts)
            found[i] = StepSurface(w.batch, w.context, s[:n_dec].reshape(len(w.batch), len(w.context)),
                                   w.prefill_batch, w.length, s[n_dec:].reshape(len(w.prefill_batch), len(w.length)),
                                   1, devices[i].id, time_model, sources[col],
                                   r.calibration_status[col] if time_model == "calibrated" else "")
            SURFACES.put(keys[i], found[i])
    return tuple(found)


def device_surface(model: Model, device: Device, g: Grid, precision: str = "fp16",
                   formats: TensorFormats | None = None, attention: str = "fused",
                   time_model: str = "ideal") -> StepSurface:
    """The surface on one device: every grid point's table stacked, one :func:`evaluate` pass (cached by key;
    :func:`device_surfaces` does many devices in that one pass)."""
    return device_surfaces(model, [device], g, precision, formats, attention, time_model)[0]
