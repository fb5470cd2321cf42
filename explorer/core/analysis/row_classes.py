"""Distinct rows of a work table (issue 22 (d)): a model built layer by layer repeats its blocks, so a 10,000-layer
table holds a handful of distinct rows; the pass computes each distinct row once per device and copies it to the
rows that repeat it.

A row's cells (its times, traffic, energy, mapping efficiency on each device) depend only on what the pass reads of
that row: the columns in :data:`PASS_COLUMNS`, the GEMM shape and the GEMMs per instance (and, for a fused attention
kernel, its attention shape: that mode is not grouped). Rows equal in all of these, bit for bit, get the same floats,
so the pass on the distinct rows followed by a gather by row equals the pass on every row exactly
(``tests/core/test_evaluate_fast.py``). The instance counts are not part of a row's cells (only of the totals, which
sum the gathered arrays in row order, as before).

Finding the distinct rows costs about as much as a few passes over the rows alone (a hash of the columns, one sort
and a check), so it is done once per table (kept weakly by its plan), and only where the rows x devices work is
large enough to pay for it (:data:`MIN_CELLS`, :data:`MIN_DEVICES`) and at least half the rows repeat.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from operator import itemgetter

import numpy as np

from explorer.core.workload.model import LayerTable

from .plan import TablePlan

#: the table columns a pass reads per row (tensor_bytes and the row plan); 'count' only for its length
PASS_COLUMNS = ("macs", "other_flops", "weight_elems", "input_elems", "output_elems", "kv_read_elems", "state_bytes")
MIN_CELLS = 1 << 15  # rows x devices below which a pass runs on every row
MIN_DEVICES = 4  # fewer devices: the rows' own cost (the grouping) is most of the pass
_LOCK = threading.Lock()
_MIX = np.uint64(0x9E3779B97F4A7C15)


@dataclass(frozen=True, eq=False)
class RowClasses:
    """The distinct rows of a table (U) as a table of their own, and the distinct row of each row (L,)."""

    table: LayerTable
    inv: np.ndarray


def _key_columns(table: LayerTable) -> list[np.ndarray]:
    c = table.columns
    cols = [np.asarray(c[name], dtype=float) for name in PASS_COLUMNS if name in c]
    gemm = np.asarray(table.gemm, dtype=float)
    cols += [gemm[:, 0], gemm[:, 1], gemm[:, 2], np.asarray(table.gemm_count, dtype=float)]
    return [np.ascontiguousarray(a) for a in cols]


def _classes(table: LayerTable) -> RowClasses | None:
    n_rows = len(table)
    if n_rows < 2:
        return None
    cols = [a.view(np.uint64) for a in _key_columns(table)]  # compared by their bits
    h = cols[0].copy()
    for a in cols[1:]:
        h *= _MIX
        h ^= a
    _, first, inv = np.unique(h, return_index=True, return_inverse=True)
    if 2 * len(first) > n_rows:
        return None
    for a in cols:  # a hash shared by different rows (never seen): no grouping
        if not np.array_equal(a[first][inv], a):
            return None
    return given_classes(table, first, inv)


def given_classes(table: LayerTable, first: np.ndarray, inv: np.ndarray,
                  names: tuple | None = None, kinds: tuple | None = None) -> RowClasses:
    """The classes ``first`` (U,) (each class's first row, ascending) and ``inv`` (L,) (each row's class) of
    ``table``, as :func:`row_classes` would find them: for a caller that knows which rows are equal (bit for bit in
    the columns of :func:`_key_columns`), e.g. the generate task's decode steps (``generate._step_classes``).
    ``names``, ``kinds``: the first rows' names and kinds where the caller has them (``table.names[i]`` for each
    ``i`` of ``first``), else picked here."""
    c = table.columns
    if names is None or kinds is None:
        pick = itemgetter(*first.tolist()) if len(first) > 1 else (lambda seq: tuple(seq[i] for i in first.tolist()))
        names, kinds = pick(table.names), pick(table.kinds)
    sub = LayerTable(names=names if isinstance(names, tuple) else (names,),
                     kinds=kinds if isinstance(kinds, tuple) else (kinds,), layer_index=table.layer_index[first],
                     gemm=table.gemm.take(first, axis=0), gemm_count=table.gemm_count[first],  # take: a third of [first]'s time
                     columns={name: v[first] for name, v in c.items()})
    inv = inv.astype(np.intp, copy=False).reshape(-1)
    inv.setflags(write=False)
    return RowClasses(table=sub, inv=inv)


_CLASSES: weakref.WeakKeyDictionary[TablePlan, tuple[RowClasses | None]] = weakref.WeakKeyDictionary()


def row_classes(table: LayerTable, tp: TablePlan, n_dev: int, attention: str) -> RowClasses | None:
    """The table's distinct rows where a pass over ``n_dev`` devices should use them, else None; found on first use
    and kept while the table's plan ``tp`` lives."""
    if attention == "fused" or n_dev < MIN_DEVICES or tp.n_rows * n_dev < MIN_CELLS:
        return None
    got = _CLASSES.get(tp)
    if got is None:
        got = (_classes(table),)
        with _LOCK:
            got = _CLASSES.setdefault(tp, got)
    return got[0]
