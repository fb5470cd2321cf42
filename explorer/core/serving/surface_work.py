"""The work behind a model's step-time surfaces on devices, kept per edit: each grid point's rows kept per segment of
layers, patched segment by segment, and each surface's times summed per segment, so that an edit expands, copies and
re-evaluates only the segments whose layers it changed (issue 22, the app's edit path at 2,000-10,000 layers).

* :func:`point_tables`: the grid's ~155 points' work (decode batch x context, then prefill prompts x length), as
  :class:`Part` s: the rows of one segment of ~1/256 of the layers at every point, point after point (the rows a
  fresh table of that point has for those layers, in order). After an edit (a model differing from the last one
  built for the same grid in a few layers, the same input) the layers ``p .. j`` whose rows may differ are expanded
  again at every point: the changed span (:func:`~explorer.core.workload.seq_diff.changed_span`), then while the
  shape flowing out differs from the one the old layer received (at any point), and after an insertion or deletion
  every unnamed layer after it (its name is ``kind<index>``). The segments holding them are made again from the old
  segments' rows and the new ones; every other segment is kept as it is (its layers have the same specs and receive
  the same shapes, so their rows are equal; a segment's row layer indices count from its first layer, so a shift
  leaves it valid). ``span``: new layers ``p .. j_new`` replace old layers ``p .. j_old``. A layer in error is
  refused as a fresh build reports it (the first point with an error, its first layer in error): the old segments
  have none (they would have been refused), so only the layers expanded again can.
* :func:`segment_sums`: the analysis pass (:func:`explorer.core.analysis.evaluate.evaluate`, element-wise per row and
  device) over the rows of a range of layer segments in every grid point, reduced per (segment, point, device):
  seconds (count x time) and whether the rows that run are calibrated. A surface's point is the sum over segments.
  After an edit only the segments overlapping ``span`` are evaluated again (``surfaces.py`` keeps the last sums per
  device); the rest are the old floats. A point's time is then the same rows' times summed in another order than a
  single ``reduceat`` over the point: equal to about 1e-15 relative (every term is >= 0, so no cancellation;
  ``tests/core/serving/test_surface_patch.py`` holds patched surfaces equal to fresh ones to 1e-12, and each point's
  rows equal to a fresh table's exactly).

An edit of one layer of a 10,000-layer model thus copies ~40 layers' rows per point (one segment) instead of every
point's whole table (10,000-entry tuples and columns: ~0.4 s over the 155 points before).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from itertools import chain, pairwise

import numpy as np

from explorer.core.analysis.evaluate import evaluate
from explorer.core.workload.layer_memo import NUMERIC, WIDTH, Assembler
from explorer.core.workload.layers import Context, Shape
from explorer.core.workload.model import LayerTable, Model
from explorer.core.workload.seq_diff import changed_span

SEGMENTS = 256  # layer segments of a fresh surface (an edit re-evaluates ~1/256 of the rows x points)
GROUP_ROWS = 1 << 16  # rows x points per analysis pass (bounds the pass's (rows, devices, levels) arrays)
MAX_CHANGED = 0.5  # above this fraction of layers changed, the tables are built afresh
_N = len(NUMERIC)


@dataclass(frozen=True, eq=False)
class Part:
    """The rows of one segment of ``n`` layers at every grid point, point after point: ``numbers`` (WIDTH, rows) the
    rows' numbers (layer_memo's order: the NUMERIC columns, GEMM M, N, K, GEMM count), their names, kinds and
    attention streams, ``layer`` each row's layer counted from the segment's first; ``first`` (P, n + 1) each
    layer's first row per point (the last column: where the point's rows end); ``outs`` (P * n) the shape flowing
    out of each layer, per point."""

    numbers: np.ndarray
    names: tuple
    kinds: tuple
    attention: tuple
    layer: np.ndarray
    first: np.ndarray
    outs: tuple

    @property
    def rows(self) -> int:
        return self.numbers.shape[1]


@dataclass(frozen=True, eq=False)
class PointTables:
    """Every grid point's rows (``points`` order) in segments: ``parts[s]`` holds layers ``bounds[s] ..
    bounds[s + 1]``. ``parent``/``span``: the model these were patched from and the layers that changed (new
    ``span[0] .. span[2]`` replace old ``span[0] .. span[1]``), or None (built afresh)."""

    model: Model
    points: tuple[Context, ...]
    bounds: np.ndarray
    parts: tuple[Part, ...]
    parent: Model | None = None
    span: tuple[int, int, int] | None = None

    def table(self, k: int) -> LayerTable:
        """Point ``k``'s rows as one table (names, kinds, layer indices, numbers, attention streams; no statuses)."""
        return _table(self.parts, self.bounds, [(s, int(pt.first[k, 0]), int(pt.first[k, -1]))
                                                for s, pt in enumerate(self.parts)], True)


def _table(parts, bounds, pieces, fused: bool) -> LayerTable:
    """One table of the rows ``lo .. hi`` of ``parts[s]`` for each ``(s, lo, hi)`` in ``pieces``, in turn."""
    sl = [(parts[s], slice(lo, hi), int(bounds[s])) for s, lo, hi in pieces]
    m = np.concatenate([pt.numbers[:, x] for pt, x, _ in sl], axis=1) if sl else np.zeros((WIDTH, 0))
    return LayerTable(
        names=tuple(chain.from_iterable(pt.names[x] for pt, x, _ in sl)),
        kinds=tuple(chain.from_iterable(pt.kinds[x] for pt, x, _ in sl)),
        layer_index=np.concatenate([pt.layer[x] + b for pt, x, b in sl]) if sl else np.zeros(0, dtype=int),
        gemm=np.ascontiguousarray(m[_N:_N + 3].T), gemm_count=m[_N + 3],
        columns={c: m[i] for i, c in enumerate(NUMERIC)},
        attention=tuple(chain.from_iterable(pt.attention[x] for pt, x, _ in sl)) if fused else (),
    )


_LAST: dict = {}  # (points, attention) -> the last PointTables built for them (the base of the next edit)
_LOCK = threading.Lock()


class _Run:
    """One point's layers expanded in turn from ``shape``: their rows (an Assembler), out shapes, first error."""

    def __init__(self, ctx: Context, shape: Shape):
        self.asm, self.shape, self.outs, self.error = Assembler(ctx), shape, [], None

    def add(self, i: int, spec) -> None:
        _, out, error, _ = self.asm.add(i, spec, self.shape)
        if error and self.error is None:
            self.error = (i, error)
        self.outs.append(out)
        self.shape = out


def _raise_first(model: Model, runs) -> None:
    """A fresh build's refusal: the first point with a layer in error, its first such layer."""
    for run in runs:
        if run.error:
            i, message = run.error
            raise ValueError(f"layer {i} ({model.layers[i].name or model.layers[i].kind}): {message}")


def _starts(counts: np.ndarray) -> np.ndarray:
    """Exclusive cumulative sum, one longer (the last: the total)."""
    out = np.zeros(counts.size + 1, dtype=np.intp)
    np.cumsum(counts, out=out[1:])
    return out


def _runs_source(runs, n: int):
    """The runs' rows stacked point after point, as a source: (numbers, names, kinds, attention, outs, start (P, n),
    count (P, n), outs index (P, n)) for each point's ``n`` layers."""
    made = [r.asm.row_parts() for r in runs]
    count = np.array([r.asm.counts for r in runs], dtype=np.intp).reshape(len(runs), n)
    start = _starts(count.ravel())[:-1].reshape(count.shape)
    numbers = np.concatenate([m[0] for m in made], axis=1)
    tuples = [tuple(chain.from_iterable(m[i] for m in made)) for i in (1, 2, 3)]
    outs = tuple(chain.from_iterable(r.outs for r in runs))
    return numbers, *tuples, outs, start, count, np.arange(count.size, dtype=np.intp).reshape(count.shape)


def _make_part(src, start: np.ndarray, count: np.ndarray, oidx: np.ndarray) -> Part:
    """A part of the rows ``start[k, i] .. + count[k, i]`` of ``src`` (point k, layer i; point-major) and the out
    shapes ``src`` outs[oidx[k, i]]."""
    numbers, names, kinds, attention, outs = src
    n_pt, n = count.shape
    flat = count.ravel()
    first = _starts(flat)
    idx = np.repeat(start.ravel() - first[:-1], flat) + np.arange(first[-1], dtype=np.intp)
    ids = idx.tolist()
    pick = lambda t: tuple(map(t.__getitem__, ids))  # a C-speed tuple gather
    f = np.empty((n_pt, n + 1), dtype=np.intp)
    f[:, :n] = first[:-1].reshape(n_pt, n)
    f[:, n] = first[n::n]
    return Part(numbers[:, idx], pick(names), pick(kinds), pick(attention),
                np.repeat(np.tile(np.arange(n), n_pt), flat), f, tuple(map(outs.__getitem__, oidx.ravel().tolist())))


def _cut(src, start, count, oidx, bounds: np.ndarray, lo: int) -> list[Part]:
    """The parts of layers ``bounds[s] .. bounds[s + 1]`` (columns from ``bounds - lo``)."""
    cols = (bounds - lo).tolist()
    return [_make_part(src, start[:, a:b], count[:, a:b], oidx[:, a:b]) for a, b in pairwise(cols)]


def _fresh(model: Model, points: tuple[Context, ...]) -> PointTables:
    runs = []
    for ctx in points:
        run = _Run(ctx, model.input_shape(ctx))
        for i, spec in enumerate(model.layers):
            run.add(i, spec)
        runs.append(run)
    _raise_first(model, runs)
    numbers, names, kinds, attention, outs, start, count, oidx = _runs_source(runs, len(model.layers))
    del runs
    if not numbers.shape[1]:
        raise ValueError("model: it has no layers to serve")
    bounds = fresh_bounds(len(model.layers))
    parts = _cut((numbers, names, kinds, attention, outs), start, count, oidx, bounds, 0)
    return PointTables(model, points, bounds, tuple(parts))


def _patched(last: PointTables, model: Model) -> PointTables | None:
    old = last.model
    if old.input != model.input:
        return None
    layers, a, b = model.layers, len(old.layers), len(model.layers)
    p, stop, _ = changed_span(old.layers, layers)
    delta = b - a
    must = stop
    if delta:  # an unnamed layer's name is its index: the ones that moved are expanded again
        must = max(must, max((k + 1 for k in range(stop, b) if not layers[k].name), default=0))
    limit = MAX_CHANGED * b
    if b == 0 or must - p > limit:
        return None
    bounds, parts = last.bounds, last.parts

    def flow_old(k: int, i: int, shape0: Shape) -> Shape:  # the shape flowing into old layer i at point k
        if i == 0:
            return shape0
        s = int(np.searchsorted(bounds, i - 1, side="right")) - 1
        n = int(bounds[s + 1] - bounds[s])
        return parts[s].outs[k * n + i - 1 - int(bounds[s])]

    runs, j_all = [], must
    for k, ctx in enumerate(last.points):
        shape0 = model.input_shape(ctx)
        run, j = _Run(ctx, flow_old(k, p, shape0)), p
        while j < b and (j < must or run.shape != flow_old(k, j - delta, shape0)):
            if j - p > limit:
                return None
            run.add(j, layers[j])
            j += 1
        runs.append(run)
        j_all = max(j_all, j)
    for run in runs:  # every point over the same layers (the ones past a point's own stop have the old rows)
        for i in range(p + len(run.outs), j_all):
            run.add(i, layers[i])
    _raise_first(model, runs)
    new_bounds, s0, s1, n_mid = patch_bounds(bounds, (p, j_all - delta, j_all), b)
    lo = int(bounds[s0])  # old layers lo .. bounds[s1] are new lo .. bounds[s1] + delta
    olds = parts[s0:s1]
    off = _starts(np.array([pt.rows for pt in olds], dtype=np.intp))
    ooff = _starts(np.array([len(pt.outs) for pt in olds], dtype=np.intp))
    numbers, names, kinds, attention, outs, start, count, oidx = _runs_source(runs, j_all - p)
    n_old = off[-1]
    src = (np.concatenate([pt.numbers for pt in olds] + [numbers], axis=1),
           tuple(chain.from_iterable(pt.names for pt in olds)) + names,
           tuple(chain.from_iterable(pt.kinds for pt in olds)) + kinds,
           tuple(chain.from_iterable(pt.attention for pt in olds)) + attention,
           tuple(chain.from_iterable(pt.outs for pt in olds)) + outs)
    n_pt = len(last.points)
    o_start = np.hstack([off[i] + pt.first[:, :-1] for i, pt in enumerate(olds)])
    o_count = np.hstack([np.diff(pt.first, axis=1) for pt in olds])
    o_oidx = np.hstack([ooff[i] + np.arange(pt.first.shape[1] - 1) + (pt.first.shape[1] - 1) * np.arange(n_pt)[:, None]
                        for i, pt in enumerate(olds)])
    x, y = p - lo, j_all - delta - lo
    start = np.hstack([o_start[:, :x], n_old + start, o_start[:, y:]])
    count = np.hstack([o_count[:, :x], count, o_count[:, y:]])
    oidx = np.hstack([o_oidx[:, :x], ooff[-1] + oidx, o_oidx[:, y:]])
    mid = _cut(src, start, count, oidx, new_bounds[s0:s0 + n_mid + 1], lo)
    new_parts = (*parts[:s0], *mid, *parts[s1:])
    if not any(pt.rows for pt in new_parts):
        raise ValueError("model: it has no layers to serve")
    return PointTables(model, last.points, new_bounds, new_parts, old, (p, j_all - delta, j_all))


def point_tables(model: Model, points: tuple[Context, ...], attention: str) -> PointTables:
    """The rows of ``points``, patched from the last model built for them where it is an edit away (module
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
    """The pass over the rows of the segments ``bounds`` (layer indices, S + 1; any cut, not only the parts') of
    every point, on ``devices``, in groups of about :data:`GROUP_ROWS` rows: each group's parts evaluated once,
    then each (segment, point)'s rows summed in order."""
    n_seg, n_pt, n_dev = len(bounds) - 1, len(work.points), len(devices)
    seconds = np.zeros((n_seg, n_pt, n_dev))
    cal = np.zeros((n_seg, n_dev), dtype=bool)
    uncal = np.zeros((n_seg, n_dev), dtype=bool)
    status: tuple[str, ...] = ("",) * n_dev
    pb, parts = work.bounds, work.parts
    if not n_seg:
        return Sums(seconds, cal, uncal, status)
    sa = int(np.searchsorted(pb, bounds[0], side="right")) - 1
    sb = int(np.searchsorted(pb, bounds[-1] - 1, side="right"))  # parts sa .. sb - 1 hold the segments' layers
    covered = parts[sa:sb]
    base = int(pb[sa])
    off = _starts(np.array([pt.rows for pt in covered], dtype=np.intp))
    start = np.hstack([off[i] + pt.first[:, :-1] for i, pt in enumerate(covered)])  # (P, layers) from base
    count = np.hstack([np.diff(pt.first, axis=1) for pt in covered])
    cum = _starts(count.sum(axis=0))
    rel = np.asarray(bounds) - base
    per_seg = cum[rel[1:]] - cum[rel[:-1]]  # rows over every point
    part_of = np.searchsorted(pb, bounds, side="right") - 1  # the part holding each segment's first layer
    s = 0
    while s < n_seg:
        e = s + 1
        total = per_seg[s]
        while e < n_seg and total + per_seg[e] <= GROUP_ROWS:
            total += per_seg[e]
            e += 1
        if total:
            p0, p1 = int(part_of[s]), int(np.searchsorted(pb, bounds[e] - 1, side="right"))
            table = _table(parts, pb, [(q, 0, parts[q].rows) for q in range(p0, p1)], attention == "fused")
            shift = off[p0 - sa]  # rows of the parts before p0 in this group's table
            r = evaluate(table, devices, precision, work.points[0], work.model, formats)
            t = r.count[:, None] * (r.time if time_model == "ideal" else r.calibrated_time)
            # rows in (segment, point, layer) order: each (segment, point)'s rows are then one run
            cols = [(int(bounds[i]) - base, int(bounds[i + 1]) - base) for i in range(s, e)]
            st = np.concatenate([start[:, x:y].ravel() for x, y in cols]) - shift
            ct = np.concatenate([count[:, x:y].ravel() for x, y in cols])
            sizes = np.concatenate([count[:, x:y].sum(axis=1) for x, y in cols])
            firsts = _starts(ct)
            take = np.repeat(st - firsts[:-1], ct) + np.arange(firsts[-1], dtype=np.intp)
            tt = t[take]
            run = _starts(sizes)[:-1]
            summed = np.add.reduceat(tt, np.minimum(run, len(tt) - 1), axis=0)
            summed[sizes == 0] = 0.0
            seconds[s:e] = summed.reshape(e - s, n_pt, n_dev)
            if time_model != "ideal":
                used = r.count[take] > 0
                c = np.asarray(r.calibrated, dtype=bool)[take]
                seg = np.repeat(np.repeat(np.arange(e - s), n_pt), sizes)
                for flag, value in ((cal, c), (uncal, ~c)):
                    hit = np.zeros((e - s, n_dev), dtype=bool)
                    np.logical_or.at(hit, seg[used], value[used])
                    flag[s:e] |= hit
            status = tuple(r.calibration_status)
        s = e
    return Sums(seconds, cal, uncal, status)
