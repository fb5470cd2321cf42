"""The work behind a model's step-time surfaces on devices, kept per edit: each grid point's work table patched from
the model before the edit, and each surface's times summed per segment of layers, so that an edit re-evaluates only
the segments whose layers it changed (issue 22, the app's edit path at 2,000-10,000 layers).

* :func:`point_tables`: the grid's ~155 work tables (decode batch x context, then prefill prompts x length). After an
  edit (a model differing from the last one built for the same grid in a few layers, the same input) each table is
  :func:`~explorer.core.workload.work_table.patch_table`'d from the last model's table in the same context (the same
  rows as a fresh build: ``tests/core/test_work_table.py``); the layers whose rows may differ are ``span``: new layers
  ``p .. j_new`` replace old layers ``p .. j_old``, every other layer has the rows of its old counterpart (its spec and
  the shape it receives are equal, so its expansion is).
* :func:`segment_sums`: the analysis pass (:func:`explorer.core.analysis.evaluate.evaluate`, element-wise per row and
  device) over the rows of a range of layer segments in every grid point, reduced per (segment, point, device):
  seconds (count x time) and whether the rows that run are calibrated. A surface's point is the sum over segments.
  After an edit only the segments overlapping ``span`` are evaluated again (``surfaces.py`` keeps the last sums per
  device); the rest are the old floats. A point's time is then the same rows' times summed in another order than a
  single ``reduceat`` over the point: equal to about 1e-15 relative (every term is >= 0, so no cancellation;
  ``tests/core/serving/test_surface_patch.py`` holds patched surfaces equal to fresh ones to 1e-12).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from itertools import chain

import numpy as np

from explorer.core.analysis.evaluate import evaluate
from explorer.core.workload.layers import Context
from explorer.core.workload.model import LayerTable, Model
from explorer.core.workload.work_table import changed_span, fresh_table, patch_table

SEGMENTS = 256  # layer segments of a fresh surface (an edit re-evaluates ~1/256 of the rows x points)
GROUP_ROWS = 1 << 16  # rows x points per analysis pass (bounds the pass's (rows, devices, levels) arrays)
MAX_CHANGED = 0.5  # above this fraction of layers changed, the tables are built afresh


@dataclass(frozen=True, eq=False)
class PointTables:
    """Every grid point's table (``points`` order) and, per point, each layer's first row (P, layers + 1; the last
    column the row count). ``parent``/``span``: the model these were patched from and the layers that changed
    (new ``span[0] .. span[2]`` replace old ``span[0] .. span[1]``), or None (built afresh)."""

    model: Model
    points: tuple[Context, ...]
    tables: tuple[LayerTable, ...]
    first: np.ndarray
    parent: Model | None = None
    span: tuple[int, int, int] | None = None


_LAST: dict = {}  # (points, attention) -> the last PointTables built for them (the base of the next edit)
_LOCK = threading.Lock()


def _raise_errors(model: Model, table: LayerTable, lo: int = 0, hi: int | None = None) -> None:
    for i, s in enumerate(table.status[lo:hi], start=lo):
        if s.error:
            raise ValueError(f"layer {i} ({model.layers[i].name or model.layers[i].kind}): {s.error}")


def _first_rows(tables) -> np.ndarray:
    first = np.empty((len(tables), len(tables[0].status) + 1), dtype=np.intp)
    for k, t in enumerate(tables):
        first[k, :-1] = t.layer_rows[0]
        first[k, -1] = len(t)
    return first


def _resume(old: LayerTable, new: LayerTable, model: Model, p: int, q: int, delta: int) -> int:
    """The first new layer from which every layer has its old counterpart's rows (old index = new - delta): at or
    after the changed span and the shifted unnamed layers (an unnamed layer's name is its index), where the shape
    received equals the old one."""
    layers = model.layers
    b = len(layers)
    j = max(p, b - q)
    if delta:
        unnamed = [k for k in range(b - q, b) if not layers[k].name]
        j = max(j, unnamed[-1] + 1 if unnamed else 0)
    while j < b and new.status[j].in_shape != old.status[j - delta].in_shape:
        j += 1
    return j


def _fresh(model: Model, points: tuple[Context, ...]) -> PointTables:
    tables = tuple(fresh_table(model.layers, model.input_shape(c), c) for c in points)
    for t in tables:
        _raise_errors(model, t)
    if not any(len(t) for t in tables):
        raise ValueError("model: it has no layers to serve")
    return PointTables(model, points, tables, _first_rows(tables))


def _patched(last: PointTables, model: Model) -> PointTables | None:
    old = last.model
    if old.input != model.input:
        return None
    p, q = changed_span(old.layers, model.layers)
    b, delta = len(model.layers), len(model.layers) - len(old.layers)
    if b == 0 or (b - q - p) > MAX_CHANGED * b:
        return None
    tables, j = [], p
    for ctx, t_old in zip(last.points, last.tables):
        t = patch_table(old.layers, t_old, model.layers, model.input_shape(ctx), ctx, MAX_CHANGED, (p, q))
        if t is None:
            return None
        tables.append(t)
        j = max(j, _resume(t_old, t, model, p, q, delta))
    for t in tables:  # the old tables had no error (they would have raised): only the rebuilt layers can
        _raise_errors(model, t, p, j)
    if not any(len(t) for t in tables):
        raise ValueError("model: it has no layers to serve")
    return PointTables(model, last.points, tuple(tables), _first_rows(tables), old, (p, j - delta, j))


def point_tables(model: Model, points: tuple[Context, ...], attention: str) -> PointTables:
    """The tables of ``points``, patched from the last model built for them where it is an edit away (module
    docstring), else built afresh. Raises ValueError naming the first layer in error."""
    key = (points, attention)
    with _LOCK:
        last = _LAST.get(key)
    made = _patched(last, model) if last is not None and last.model is not model else None
    if made is None:
        made = last if last is not None and last.model is model else _fresh(model, points)
    with _LOCK:
        _LAST[key] = made
    return made


def clear() -> None:
    with _LOCK:
        _LAST.clear()


def fresh_bounds(n_layers: int) -> np.ndarray:
    """Segment bounds over ``n_layers`` layers: ~:data:`SEGMENTS` segments of equal length."""
    step = max(1, -(-n_layers // SEGMENTS))
    return np.unique(np.r_[np.arange(0, n_layers, step), n_layers]).astype(np.intp)


def patch_bounds(bounds: np.ndarray, span: tuple[int, int, int], n_layers: int) -> tuple[np.ndarray, int, int, int]:
    """After an edit ``span``: (the new bounds, the first old segment replaced, the old segments after the replaced
    ones start at, the new segments in between). Replaced: the segments holding the changed old layers (or, for an
    insertion, the one at its place), their layers cut again into segments of the fresh length."""
    p, jo, jn = span
    delta = jn - jo
    last = len(bounds) - 2
    s_lo = min(max(int(np.searchsorted(bounds, p, side="right")) - 1, 0), last)
    s_hi = min(max(int(np.searchsorted(bounds, jo - 1, side="right")) - 1, s_lo), last) if jo > p else s_lo
    lo, hi = int(bounds[s_lo]), int(bounds[s_hi + 1]) + delta
    step = max(1, -(-n_layers // SEGMENTS))
    mid = np.unique(np.r_[np.arange(lo, hi, step), hi]).astype(np.intp)
    new = np.concatenate([bounds[:s_lo], mid, bounds[s_hi + 2:] + delta]).astype(np.intp)
    return new, s_lo, s_hi + 1, len(mid) - 1


def _rows(tables, lo: np.ndarray, hi: np.ndarray, fused: bool) -> LayerTable:
    """One table of rows ``lo[k] .. hi[k]`` of each table k in turn (what the analysis pass reads)."""
    sl = [slice(int(a), int(b)) for a, b in zip(lo, hi)]
    cat = np.concatenate
    return LayerTable(
        names=tuple(chain.from_iterable(t.names[s] for t, s in zip(tables, sl))),
        kinds=tuple(chain.from_iterable(t.kinds[s] for t, s in zip(tables, sl))),
        layer_index=cat([t.layer_index[s] for t, s in zip(tables, sl)]),
        gemm=cat([t.gemm[s] for t, s in zip(tables, sl)]),
        gemm_count=cat([t.gemm_count[s] for t, s in zip(tables, sl)]),
        columns={c: cat([t.columns[c][s] for t, s in zip(tables, sl)]) for c in tables[0].columns},
        attention=tuple(chain.from_iterable(t.attention[s] for t, s in zip(tables, sl))) if fused else (),
    )


@dataclass(frozen=True)
class Sums:
    """Per (segment, point, device): seconds (S, P, D), and whether any running row is calibrated / not (S, D)
    each; ``status`` each device's calibration status (as the pass reports it)."""

    seconds: np.ndarray
    calibrated: np.ndarray
    uncalibrated: np.ndarray
    status: tuple[str, ...]


def segment_sums(work: PointTables, bounds: np.ndarray, devices, precision: str, formats, attention: str,
                 time_model: str) -> Sums:
    """The pass over the rows of the segments ``bounds`` (layer indices, S + 1) of every point, on ``devices``,
    in groups of about :data:`GROUP_ROWS` rows."""
    n_seg, n_pt, n_dev = len(bounds) - 1, len(work.points), len(devices)
    seconds = np.zeros((n_seg, n_pt, n_dev))
    cal = np.zeros((n_seg, n_dev), dtype=bool)
    uncal = np.zeros((n_seg, n_dev), dtype=bool)
    status: tuple[str, ...] = ("",) * n_dev
    rows = work.first[:, bounds]  # (P, S + 1) each segment's first row per point
    per_seg = (rows[:, 1:] - rows[:, :-1]).sum(axis=0)
    s = 0
    while s < n_seg:
        e = s + 1
        total = per_seg[s]
        while e < n_seg and total + per_seg[e] <= GROUP_ROWS:
            total += per_seg[e]
            e += 1
        lo, hi = rows[:, s], rows[:, e]
        if total:
            table = _rows(work.tables, lo, hi, attention == "fused")
            r = evaluate(table, devices, precision, work.points[0], work.model, formats)
            t = r.count[:, None] * (r.time if time_model == "ideal" else r.calibrated_time)
            # block (point k, segment i) starts at its offset in the stacked rows; empty blocks are zero
            offset = np.concatenate([[0], np.cumsum(hi - lo)[:-1]])
            starts = (rows[:, s:e] - lo[:, None] + offset[:, None]).ravel()
            sizes = (rows[:, s + 1:e + 1] - rows[:, s:e]).ravel()
            summed = np.add.reduceat(t, np.minimum(starts, len(t) - 1), axis=0)
            summed[sizes == 0] = 0.0
            seconds[s:e] = summed.reshape(n_pt, e - s, n_dev).transpose(1, 0, 2)
            if time_model != "ideal":
                used = r.count > 0
                c = np.asarray(r.calibrated, dtype=bool)
                seg = np.repeat(np.tile(np.arange(e - s), n_pt), sizes)
                for flag, value in ((cal, c), (uncal, ~c)):
                    hit = np.zeros((e - s, n_dev), dtype=bool)
                    np.logical_or.at(hit, seg[used], value[used])
                    flag[s:e] |= hit
            status = tuple(r.calibration_status)
        s = e
    return Sums(seconds, cal, uncal, status)
