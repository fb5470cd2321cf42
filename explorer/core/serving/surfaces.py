"""Step-time surfaces on devices (:func:`device_surface`), many at once: every grid point's work table (one per
model and grid, patched from the last model's after an edit), one analysis pass over every device per group of
rows, each surface's times kept per segment of layers so that an edit passes only the segments it changed
(:mod:`.surface_work`); all of it kept in small caches so an edit that does not touch them (a device checked, a
rate, a service level) costs no work.

The numbers are those of the earlier per-device algorithm (each device its own stacked table and pass), to 1e-12:
the rows are the same and :func:`explorer.core.analysis.evaluate.evaluate` is element-wise per row and device
column (``tests/core/serving/test_surface_fast.py`` keeps that algorithm as its reference;
``tests/core/serving/test_surface_patch.py`` checks surfaces after random edits against it). What used to cost the
time: the work table of each of the ~155 grid points was built once per device (the work-table cache of 64 entries
is smaller than the grid, so it never hit); then once per model and grid, afresh, and the whole stack passed again
after every edit (seconds at 2,000-10,000 layers).

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

from explorer.core.analysis.evaluate import MODELS
from explorer.core.analysis.time_source import CALIBRATED, PARTLY, SPEC
from explorer.core.formats import TensorFormats
from explorer.core.hardware.device import Device
from explorer.core.workload.layers import Context
from explorer.core.workload.model import Model

from .surface import Grid, StepSurface, _contexts, _lengths, grid
from .surface_work import PointTables, fresh_bounds, patch_bounds, point_tables, segment_sums

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
LAST = KeyedCache(SURFACE_ENTRIES)  # per (device, grid, precision, ...): its last surface's sums per layer segment


def require_token_model(model: Model) -> None:
    """Raise ValueError unless ``model`` takes tokens (serving is token by token)."""
    if not model.layers:
        raise ValueError("model: it has no layers to serve")
    if "tokens" not in model.input_dict:
        raise ValueError(f"model: {model.name or 'the model'} is not a token model (its input has no tokens, "
                         "e.g. a CNN); serving estimates need a language model")


@dataclass(frozen=True, eq=False)
class SurfaceWork:
    """The work of every grid point of a surface: decode points (batch x context, row-major) then prefill points
    (prompts x length), each its own table (``tables``: :class:`~.surface_work.PointTables`, patched per edit)."""

    batch: np.ndarray
    context: np.ndarray
    prefill_batch: np.ndarray
    length: np.ndarray
    points: tuple[Context, ...]
    tables: PointTables


def surface_work(model: Model, g: Grid, attention: str = "fused") -> SurfaceWork:
    """The work tables of a device surface's grid (cached per model, grid and attention kernel)."""
    require_token_model(model)
    return WORK.get(("work", model, g, attention), lambda: _build_work(model, g, attention))


def _build_work(model: Model, g: Grid, attention: str) -> SurfaceWork:
    batch, ctxs = grid(g.max_batch, g.points), _contexts(g)
    pbatch, lengths = grid(g.max_prefill_batch, max(g.points // 2, 3)), _lengths(g)
    points = [Context(batch=int(b), seq_len=int(c), phase="decode", attention=attention)
              for b in batch for c in ctxs]
    points += [Context(batch=int(n), seq_len=int(L), phase="prefill", attention=attention)
               for n in pbatch for L in lengths]
    points = tuple(points)
    return SurfaceWork(batch, ctxs, pbatch, lengths, points, point_tables(model, points, attention))


@dataclass(frozen=True, eq=False)
class _Last:
    """A device's last surface sums (the base of the next edit's): its model, segment bounds, seconds (S, P),
    calibrated / uncalibrated running rows per segment (S,), calibration status."""

    model: Model
    bounds: np.ndarray
    seconds: np.ndarray
    calibrated: np.ndarray
    uncalibrated: np.ndarray
    status: str


def _label(last: _Last, time_model: str) -> str:
    if time_model == "ideal" or not last.calibrated.any():
        return SPEC
    return PARTLY if last.uncalibrated.any() else CALIBRATED


def device_surfaces(model: Model, devices: Sequence[Device], g: Grid, precision: str = "fp16",
                    formats: TensorFormats | None = None, attention: str = "fused",
                    time_model: str = "ideal") -> tuple[StepSurface, ...]:
    """The surface of each device (in order): the ones not cached come from the analysis pass over every grid
    point's rows, per segment of layers; after an edit only the segments it changed are passed again
    (:mod:`.surface_work`). ``time_model``: each row's time under the ideal or the calibrated model
    (:meth:`~explorer.core.analysis.evaluate.ModelAnalysis.model_time`; rows a device has no curve for keep the
    ideal time), and the surface labelled with where its times come from."""
    if time_model not in MODELS:
        raise ValueError(f"time_model: expected one of {', '.join(MODELS)}, got {time_model!r}")
    keys = [("surface", model, d, g, precision, formats, attention, time_model) for d in devices]
    found = [SURFACES.peek(k) for k in keys]
    todo = [i for i, s in enumerate(found) if s is None]
    if not todo:
        return tuple(found)
    w = surface_work(model, g, attention)
    pt = w.tables
    n_layers = len(model.layers)
    last_keys = {i: ("last", devices[i], g, precision, formats, attention, time_model) for i in todo}
    groups: dict = {}  # how each device's sums are made: kept, patched from a base, or afresh
    for i in todo:
        last = LAST.peek(last_keys[i])
        if last is not None and last.model is model:
            groups.setdefault(("kept", id(last.bounds)), (last.bounds, []))[1].append(i)
        elif last is not None and pt.parent is not None and last.model is pt.parent:
            groups.setdefault(("patch", id(last.bounds)), (last.bounds, []))[1].append(i)
        else:
            groups.setdefault(("fresh",), (None, []))[1].append(i)
    made: dict[int, _Last] = {}
    for (how, *_), (bounds, members) in groups.items():
        devs = [devices[i] for i in members]
        if how == "kept":
            made.update((i, LAST.peek(last_keys[i])) for i in members)
            continue
        if how == "fresh":
            new = fresh_bounds(n_layers)
            sums = segment_sums(pt, new, devs, precision, formats, attention, time_model)
            for col, i in enumerate(members):
                made[i] = _Last(model, new, sums.seconds[:, :, col], sums.calibrated[:, col],
                                sums.uncalibrated[:, col], sums.status[col])
            continue
        new, s0, s1, n_mid = patch_bounds(bounds, pt.span, n_layers)
        sums = segment_sums(pt, new[s0:s0 + n_mid + 1], devs, precision, formats, attention, time_model)
        for col, i in enumerate(members):
            old = LAST.peek(last_keys[i])
            cat = np.concatenate
            made[i] = _Last(model, new, cat([old.seconds[:s0], sums.seconds[:, :, col], old.seconds[s1:]]),
                            cat([old.calibrated[:s0], sums.calibrated[:, col], old.calibrated[s1:]]),
                            cat([old.uncalibrated[:s0], sums.uncalibrated[:, col], old.uncalibrated[s1:]]),
                            sums.status[col] if n_mid else old.status)
    n_dec = len(w.batch) * len(w.context)
    for i in todo:
        last = made[i]
        LAST.put(last_keys[i], last)
        s = last.seconds.sum(axis=0)  # a point's time: the sum of its rows' count x time, per segment then over them
        found[i] = StepSurface(w.batch, w.context, s[:n_dec].reshape(len(w.batch), len(w.context)),
                               w.prefill_batch, w.length, s[n_dec:].reshape(len(w.prefill_batch), len(w.length)),
                               1, devices[i].id, time_model, _label(last, time_model),
                               last.status if time_model == "calibrated" else "")
        SURFACES.put(keys[i], found[i])
    return tuple(found)


def device_surface(model: Model, device: Device, g: Grid, precision: str = "fp16",
                   formats: TensorFormats | None = None, attention: str = "fused",
                   time_model: str = "ideal") -> StepSurface:
    """The surface on one device: every grid point's table stacked, one :func:`evaluate` pass (cached by key;
    :func:`device_surfaces` does many devices in that one pass)."""
    return device_surfaces(model, [device], g, precision, formats, attention, time_model)[0]
