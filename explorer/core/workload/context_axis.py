"""Many contexts in one table: the work of every context (batch, sequence length, phase) stacked, built from a few
single tables instead of one per context (issue 22, "many contexts in one pass").

The contexts of one (phase, attention, LM head) are points (batch, length) of a plane; every number of the work table
is a polynomial in them between the model's breakpoints, so the points are built as a few tables and the rest
interpolated and checked (:mod:`.context_plane`: Llama-2-7B's 64 batches x 60 lengths x 2 phases from 27 tables, where
interpolating along the length alone built 792). A model whose prefill is not such a polynomial (a mixture of experts:
the expected experts touched is exponential in the tokens; convolutions) builds one table per context there; one whose
numbers are not affine in the batch (experts, LoRA adapters) interpolates along the length per batch.

The stacked table carries what the analysis pass reads: names, kinds, layer indices, GEMM shapes and counts, the
numeric columns, and (only when attention is ``fused``, the one reader) each attention row's K/V stream. Consecutive
interpolated contexts of the same rows are one block of it, their numbers written straight into its columns.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from operator import attrgetter

import numpy as np

from explorer.core.workload.context_plane import (  # noqa: F401 (ContextError, PREFILL_POLYNOMIAL, PROBES: public here)
    _ATT,
    PREFILL_POLYNOMIAL,
    PROBES,
    ContextError,
    _fail,
    _Plane,
    _Run,
    _same_rows,
    breakpoints,
    plane,
)
from explorer.core.workload.layers import AttentionShape, Context
from explorer.core.workload.model import NUMERIC, LayerTable, Model, build_table

_GROUP = attrgetter("phase", "attention", "lm_head")  # a context's group
_POINT = attrgetter("batch", "seq_len")  # its point there


@dataclass(frozen=True, eq=False)
class StackedContexts:
    """One table holding every context's rows in turn; ``starts[k]`` is context k's first row, ``sizes[k]`` its
    row count; ``builds`` the single tables built to make it. ``fixed`` (only from :func:`stack_steps` where every
    step is one interpolated block, else None): (F, L) per entry of a step's rows in ``context_plane._matrix``'s
    layout, True where it was copied, so the same bit for bit in every step (``generate._step_classes``)."""

    contexts: tuple[Context, ...]  # or a ContextRun equal to it (the generate task)
    table: LayerTable
    starts: np.ndarray
    sizes: np.ndarray
    builds: int
    fixed: np.ndarray | None = None


def _from_numbers(ref: LayerTable, blocks: np.ndarray, fused: bool) -> LayerTable:
    """A table of ``k`` contexts with ``ref``'s rows and the numbers ``blocks`` (k, F, L)."""
    k, _, n = blocks.shape
    nc = len(NUMERIC)
    flat = blocks.transpose(1, 0, 2).reshape(blocks.shape[1], k * n)  # a view where ``blocks`` is one of (F, k, L)
    flat = flat.view()
    flat.setflags(write=False)  # tables are shared (cached): read-only like build_table's
    columns = {c: flat[i] for i, c in enumerate(NUMERIC)}
    attention: tuple = ()
    if fused:
        att = flat[nc + 4:]
        kinds = list(ref.attention) * k
        attention = tuple(
            None if a is None else AttentionShape(*(int(v) for v in att[:, r]), a.causal, a.window)
            for r, a in enumerate(kinds))
    return LayerTable(names=ref.names * k, kinds=ref.kinds * k, layer_index=np.tile(ref.layer_index, k),
                      gemm=np.ascontiguousarray(flat[nc:nc + 3].T), gemm_count=flat[nc + 3], columns=columns,
                      attention=attention)


def _joined(parts: list[tuple]) -> tuple:
    """The tuples ``parts`` joined: two by ``+`` (one copy in C; the generate task's prefill and steps), more
    through one list (linear: ``sum()`` copies the growing tuple at every part; ``tuple(chain(...))`` reads an
    iterator of unknown length, ~5x slower than either on 2,176 names)."""
    if len(parts) == 2:
        return parts[0] + parts[1]
    out: list = []
    for p in parts:
        out.extend(p)
    return tuple(out)


def stack_tables(tables: Sequence[LayerTable]) -> LayerTable:
    """One table whose rows are every table's rows in turn (only what the analysis pass reads)."""
    cols = tables[0].columns
    return LayerTable(
        names=_joined([t.names for t in tables]),
        kinds=_joined([t.kinds for t in tables]),
        layer_index=np.concatenate([t.layer_index for t in tables]),
        gemm=np.concatenate([t.gemm for t in tables]),
        gemm_count=np.concatenate([t.gemm_count for t in tables]),
        columns={c: np.concatenate([t.columns[c] for t in tables]) for c in cols},
        attention=_joined([t.attention for t in tables]),
    )


class _Solved:
    """The points of one (phase, attention, LM head): per point the table of its rows, and its (F, L) numbers where
    interpolated (in blocks of points as solved; :meth:`finish` puts every block of the same rows in one array)."""

    def __init__(self, n: int, fused: bool):
        self.refs: list = [None] * n
        self.blocks: list[tuple[np.ndarray, LayerTable, np.ndarray]] = []
        self.fused = fused

    def put(self, at: np.ndarray, solved: list) -> None:
        """``solved`` as :meth:`_Run.solve` returns it (pieces: one length built, or a block of lengths
        interpolated), for the points ``at`` in order."""
        i = 0
        for ref, numbers in solved:
            if numbers is None:
                self.refs[int(at[i])] = ref
                i += 1
            else:
                self.blocks.append((at[i:i + len(numbers)], ref, numbers))
                i += len(numbers)

    def put_block(self, at: np.ndarray, ref: LayerTable, values: np.ndarray) -> None:
        self.blocks.append((at, ref, values))

    def finish(self) -> tuple[list, np.ndarray, np.ndarray | None]:
        """(refs, has, values): per point its rows' table (one table for every interpolated point of the same rows);
        whether it is interpolated; the numbers (P, F, L) of those that are."""
        has = np.zeros(len(self.refs), dtype=bool)
        values, canon = None, None
        for at, ref, v in self.blocks:
            if canon is None:
                canon = ref
                if len(self.blocks) == 1 and len(at) == len(self.refs) and np.array_equal(at, np.arange(len(at))):
                    values = v  # one block of every point in order (the generate task's decode steps): as it is
                else:  # (P, F, L) as a view of (F, P, L): a block of consecutive points is columns without a copy
                    values = np.empty((v.shape[1], len(self.refs), v.shape[2])).transpose(1, 0, 2)
            if ref is canon or _same_rows(ref, canon):
                if values is not v:
                    values[at] = v
                has[at] = True
                for k in at.tolist():
                    self.refs[k] = canon
            else:  # other rows than the group's first (rare): a table per point
                for k, x in zip(at.tolist(), v):
                    self.refs[k] = _from_numbers(ref, x[None], self.fused)
        return self.refs, has, values


class _Built(dict):
    """The single tables built for one stack, each once (its length is the stack's ``builds``); called as ``build``."""

    def __init__(self, build: Callable):
        super().__init__()
        self.build = build

    def __call__(self, model: Model, context: Context) -> LayerTable:
        t = self.get(context)
        if t is None:
            t = self[context] = self.build(model, context)
        return t


def stack_contexts(model: Model, contexts: Sequence[Context], build: Callable = build_table) -> StackedContexts:
    """Every context's work rows, in ``contexts`` order, as one table. Raises :class:`ContextError` naming the
    first context the model does not take. ``build``: how a single table is built (``build_table``, cached, or
    its uncached ``build_table.__wrapped__`` for grids larger than the cache)."""
    contexts = list(contexts)
    built = counted = _Built(build)

    # per context: its group (-1: a context built on its own) and its point there; a group: the contexts of one
    # (phase, attention, LM head), its points (batch, length)
    n = len(contexts)
    gids: list[int] = []
    pids: list[int] = []
    group_of: dict[tuple, int] = {}
    firsts: list[Context] = []
    points: list[dict] = []
    for k, (key, point) in enumerate(zip(map(_GROUP, contexts), map(_POINT, contexts))):
        if point[1] is None or key[0] not in ("prefill", "decode"):
            gids.append(-1)
            pids.append(k)
            continue
        g = group_of.get(key)
        if g is None:
            g = group_of[key] = len(firsts)
            firsts.append(contexts[k])
            points.append({})
        index = points[g]
        gids.append(g)
        pids.append(index.setdefault(point, len(index)))
    gid, pid = np.array(gids, dtype=np.int64), np.array(pids, dtype=np.int64)
    solved: list = []
    single: dict[int, LayerTable] = {}
    try:
        for k in np.flatnonzero(gid < 0).tolist():
            single[k] = counted(model, contexts[k])
            _fail(model, contexts[k], single[k])
        for first, index in zip(firsts, points):
            pts = np.array(list(index), dtype=np.int64).reshape(-1, 2)
            solved.append(_solve_group(model, replace(first, batch=1, seq_len=None), pts, counted))
    except ContextError as exc:  # name the first context in order that fails (the solve found one of them)
        first = contexts.index(exc.context) if exc.context in contexts else n
        for c in contexts[:first]:
            _fail(model, c, counted(model, c))
        raise
    # runs of consecutive contexts interpolated in one group with one table's rows become one block each
    rid = np.full(n, -1, dtype=np.int64)  # per context: its rows' table among its group's, -1 where built
    size = np.empty(n, dtype=int)
    for g, (refs, has, _) in enumerate(solved):
        tables = {id(r): r for r in refs}  # the group's distinct tables (most points share one)
        number = {i: j for j, i in enumerate(tables)}
        ids = np.array([number[i] for i in map(id, refs)], dtype=np.int64)
        rids = np.where(has, ids, -1)
        at = np.flatnonzero(gid == g)
        rid[at] = rids[pid[at]]
        size[at] = np.array([len(r) for r in tables.values()], dtype=int)[ids][pid[at]]
    for k, t in single.items():
        size[k] = len(t)
    cut = np.ones(n, dtype=bool)
    cut[1:] = (gid[1:] != gid[:-1]) | (rid[1:] != rid[:-1]) | (rid[1:] < 0)
    bounds = np.r_[np.flatnonzero(cut), n].tolist()
    parts: list[LayerTable] = []
    for k, e in pairwise(bounds):
        g = int(gid[k])
        if g < 0:
            parts.append(single[k])
            continue
        refs, _, values = solved[g]
        ref = refs[int(pid[k])]
        if rid[k] >= 0:
            sel = pid[k:e]
            p0 = int(sel[0])  # consecutive points: a slice (a view), not a gathered copy
            block = values[p0:p0 + len(sel)] if np.array_equal(sel, np.arange(p0, p0 + len(sel))) else values[sel]
            ref = _from_numbers(ref, block, contexts[k].attention == "fused")
        parts.append(ref)
    table = parts[0] if len(parts) == 1 else stack_tables(parts)
    if table.attention and len(table.attention) != len(table):  # built and interpolated blocks mixed, not fused
        table = replace(table, attention=())
    return StackedContexts(contexts=tuple(contexts), table=table, sizes=size,
                           starts=np.concatenate([[0], np.cumsum(size)[:-1]]).astype(int), builds=len(built))


class ContextRun(Sequence):
    """``(first, step at s0, step at s0 + 1, ..., step at s0 + n - 1)`` (no ``first`` where None; s0 is ``step``'s
    length), made only when read: the generate task's steps and its :class:`StackedContexts`' contexts, which the
    task never reads (making 128 frozen contexts was ~2 % of a cold task). A single item is made on its own; a
    slice, iteration or comparison makes every item once. Equal to the tuple (or list) of its items."""

    __slots__ = ("_first", "_made", "_n", "_step")

    def __init__(self, first: Context | None, step: Context, n: int):
        self._first, self._step, self._n, self._made = first, step, n, None

    def __len__(self) -> int:
        return self._n + (self._first is not None)

    def _item(self, k: int) -> Context:
        if self._first is not None:
            if k == 0:
                return self._first
            k -= 1
        return self._step if k == 0 else replace(self._step, seq_len=self._step.seq_len + k)

    def _all(self) -> tuple:
        if self._made is None:
            self._made = tuple(self._item(k) for k in range(len(self)))
        return self._made

    def __getitem__(self, k):
        if isinstance(k, slice) or self._made is not None:
            return self._all()[k]
        n = len(self)
        if not -n <= k < n:
            raise IndexError(k)
        return self._item(k % n)

    def __iter__(self):
        return iter(self._all())

    def __eq__(self, other) -> bool:
        if isinstance(other, ContextRun):
            other = other._all()
        return isinstance(other, (tuple, list)) and self._all() == tuple(other)

    __hash__ = None  # type: ignore[assignment]  (equal to a tuple, so not hashable as one)

    def __repr__(self) -> str:
        return f"ContextRun({self._first!r}, {self._step!r}, {self._n})"


_STEP = attrgetter("phase", "attention", "lm_head", "batch")  # what a run's contexts share
_SEQ = attrgetter("seq_len")


def stack_steps(model: Model, first: Context, steps: Sequence[Context],
                build: Callable = build_table, *, made_consecutive: bool = False) -> StackedContexts:
    """:func:`stack_contexts` of ``[first, *steps]`` where ``first`` is a prefill and ``steps`` decode contexts of
    one (attention, LM head, batch) at consecutive lengths (the generate task), the same table: the steps are one run
    of lengths at one batch, cut where the model's work changes formula (its windows: :func:`breakpoints`, the cuts of
    the plane's regions at one batch in decode), so the same tables are built and the same numbers interpolated,
    without grouping every context by its fields. Any other contexts, a model that is not a piecewise polynomial in
    the length, and a context the model does not take (to name the first in order) go through
    :func:`stack_contexts`. ``made_consecutive``: the caller made ``steps`` as copies of ``steps[0]`` at lengths
    ``s0, s0 + 1, ...`` (``generate._stacked``: a :class:`ContextRun`, kept as one in the result's contexts), so their
    shared fields and lengths are not compared again."""
    def general() -> list[Context]:
        return [first, *steps]

    if not steps or first.phase != "prefill" or first.seq_len is None or steps[0].phase != "decode":
        return stack_contexts(model, general(), build)
    s0 = steps[0].seq_len
    if s0 is None or (not made_consecutive and (len(set(map(_STEP, steps))) != 1
                                                or list(map(_SEQ, steps)) != list(range(s0, s0 + len(steps))))):
        return stack_contexts(model, general(), build)
    base = replace(steps[0], seq_len=None)
    cuts = breakpoints(model, base)
    if cuts is None:
        return stack_contexts(model, general(), build)
    built = counted = _Built(build)

    seqs = list(range(s0, s0 + len(steps)))
    try:
        pre = counted(model, first)
        _fail(model, first, pre)
        run = _Run(model, base, seqs, counted)
        edges = np.searchsorted(np.array(seqs, dtype=float), cuts, side="right")
        edges = [0, *sorted({int(e) for e in edges if 0 < e < len(seqs)}), len(seqs)]
        pieces = [x for lo, hi in pairwise(edges) for x in run.solve(lo, hi)]
    except ContextError:
        return stack_contexts(model, general(), build)
    fused = base.attention == "fused"
    parts, sizes = [pre], [len(pre)]
    for ref, numbers in pieces:
        sizes += [len(ref)] * (1 if numbers is None else len(numbers))
    if len(pieces) == 1 and pieces[0][1] is not None and not fused:
        table = _prefill_and_block(pre, *pieces[0])  # stack_tables([pre, _from_numbers(...)]) in one step
    else:
        for ref, numbers in pieces:
            parts.append(ref if numbers is None else _from_numbers(ref, numbers, fused))
        table = stack_tables(parts)
        if table.attention and len(table.attention) != len(table):  # built and interpolated blocks mixed, not fused
            table = replace(table, attention=())
    size = np.array(sizes, dtype=int)
    fixed = None
    if len(pieces) == 1 and pieces[0][1] is not None and len(pieces[0][1]) == len(steps):
        fixed = run.fixed.get(id(pieces[0][1]))  # every step one block: its copied entries, no search needed
    contexts = (ContextRun(first, steps[0], len(steps)) if isinstance(steps, ContextRun) and made_consecutive
                else (first, *steps))
    return StackedContexts(contexts=contexts, table=table, sizes=size,
                           starts=np.concatenate([[0], np.cumsum(size)[:-1]]).astype(int), builds=len(built),
                           fixed=fixed)


_AT = {c: i for i, c in enumerate(NUMERIC)}  # a numeric column's row in ``_from_numbers``' blocks


def _prefill_and_block(pre: LayerTable, ref: LayerTable, blocks: np.ndarray) -> LayerTable:
    """``stack_tables([pre, _from_numbers(ref, blocks, False)])`` with its attention dropped as there (a prefill
    and one interpolated block, not fused: the generate task), without the block's own table: each column one
    concatenation of the prefill's with its row of ``blocks`` (k, F, L), the GEMM shape copied once."""
    k, _, n = blocks.shape
    nc = len(NUMERIC)
    flat = blocks.transpose(1, 0, 2).reshape(blocks.shape[1], k * n)
    cols = pre.columns
    return LayerTable(names=pre.names + ref.names * k, kinds=pre.kinds + ref.kinds * k,
                      layer_index=np.concatenate([pre.layer_index, np.tile(ref.layer_index, k)]),
                      gemm=np.concatenate([pre.gemm, flat[nc:nc + 3].T]),
                      gemm_count=np.concatenate([pre.gemm_count, flat[nc + 3]]),
                      columns={c: np.concatenate([cols[c], flat[_AT[c]]]) for c in cols})  # stack_tables' order


def _solve_group(model: Model, base: Context, points: np.ndarray, build: Callable):
    """The points (batch, length) of one (phase, attention, LM head): :meth:`_Solved.finish`'s (refs, has, values)
    in the points' order."""
    pl = plane(model, base.phase)
    order = np.lexsort((points[:, 1], points[:, 0]))  # by batch, then length
    b, s = points[order, 0], points[order, 1]
    out = _Solved(len(points), base.attention == "fused")
    if pl is None:  # not a polynomial in the length: one table per context
        for k, bb, ss in zip(order.tolist(), b.tolist(), s.tolist()):
            ctx = replace(base, batch=bb, seq_len=ss)
            out.refs[k] = build(model, ctx)
            _fail(model, ctx, out.refs[k])
    elif pl.batch_affine:  # regions on one side of every breakpoint, each a polynomial in (b, s)
        sides = pl.signature(b, s)
        keys, region = _regions(sides)
        for r in range(len(keys)):
            idx = np.flatnonzero(region == r)
            _Plane(model, base, pl, build).solve(b[idx], s[idx], keys[r], order[idx], out)
    else:  # one run of lengths per batch, cut at its breakpoints
        for bb in np.unique(b).tolist():
            idx = np.flatnonzero(b == bb)
            seqs = s[idx]
            run = _Run(model, replace(base, batch=bb), seqs.tolist(), build)
            edges = np.searchsorted(seqs.astype(float), breakpoints(model, replace(base, batch=bb)), side="right")
            edges = [0, *sorted({int(e) for e in edges if 0 < e < len(seqs)}), len(seqs)]
            out.put(order[idx], [x for lo, hi in pairwise(edges) for x in run.solve(lo, hi)])
    return out.finish()


def _regions(sides: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(sides, axis=0, return_inverse=True)`` of (P, K) booleans, in its order (rows compared as
    their bits, the first column most significant), without its sort of (P,) structured rows: each row read as
    one integer where K <= 62."""
    k = sides.shape[1]
    if k > 62:
        keys, region = np.unique(sides, axis=0, return_inverse=True)
        return keys, region.reshape(-1)
    code = sides.astype(np.int64) @ (np.int64(1) << np.arange(k - 1, -1, -1, dtype=np.int64))
    _, first, region = np.unique(code, return_index=True, return_inverse=True)
    return sides[first], region.reshape(-1)
