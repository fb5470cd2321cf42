"""The distinct rows of a sweep's stacked work table: a row's time and energy on a device depend on that row alone
(its kind, GEMM shape and count, numeric columns and, for a fused attention kernel, its K/V stream: every term of the
analysis pass is element-wise over rows), so rows equal in all of these are passed once and their results gathered
back to every place they hold in the stack. In a grid of contexts most rows repeat: a decode step's projections, norms
and feed-forward are the same at every KV length of a batch, and in prefill every row but the attention's depends on
the batch and length only through the tokens ``batch x length``, equal for many (batch, length) pairs (Llama-2-7B's
10^6-point grid: 33,693 distinct rows of 130,560).

Rows are matched by a 64-bit hash of their bits (every column's float64 bits and the kind's code, folded in one by one
with splitmix64's finalizer, modulo 2^64), then every row is checked bit for bit against the one kept for it: a hash
collision, which would merge different rows, is found and the table is then passed whole. So the results are the very
floats of the pass over every row.
"""

from __future__ import annotations

import numpy as np

from explorer.core.workload.model import LayerTable

_M1, _M2, _GOLDEN = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB), np.uint64(0x9E3779B97F4A7C15)


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer, in place (unsigned arithmetic wraps modulo 2^64)."""
    h ^= h >> np.uint64(30)
    h *= _M1
    h ^= h >> np.uint64(27)
    h *= _M2
    h ^= h >> np.uint64(31)
    return h


def _columns(table: LayerTable) -> list[np.ndarray]:
    """What the pass reads of each row, as arrays of (L,) 64-bit values."""
    c = table.columns
    codes = {k: i for i, k in enumerate(set(table.kinds))}
    kinds = np.fromiter(map(codes.__getitem__, table.kinds), dtype=np.int64, count=len(table))
    gemm = np.ascontiguousarray(table.gemm, dtype=float)
    out = [kinds.view(np.uint64)]
    out += [np.ascontiguousarray(c[n], dtype=float).view(np.uint64) for n in sorted(c)]
    out += [gemm[:, i].copy().view(np.uint64) for i in range(gemm.shape[1])]
    out.append(np.ascontiguousarray(table.gemm_count, dtype=float).view(np.uint64))
    return out


def distinct_rows(table: LayerTable) -> tuple[np.ndarray, np.ndarray] | None:
    """``(keep, where)``: the indices of the rows kept (one per distinct row, in order of first appearance) and,
    per row of ``table``, the position of its row among them (``table``'s row i is row ``keep[where[i]]``); None
    where no row repeats, or a hash collision was found (pass the table whole)."""
    n = len(table)
    if n < 2:
        return None
    cols = _columns(table)
    key = np.zeros(n, dtype=np.uint64)
    for col in cols:
        key += _GOLDEN
        key ^= col
        _mix(key)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    if len(first) == n:
        return None
    order = np.argsort(first, kind="stable")  # the kept rows in the table's order
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    keep, where = first[order], rank[inverse.reshape(-1)]
    rep = keep[where]
    if not all(np.array_equal(col, col[rep]) for col in cols):
        return None  # a collision: two different rows with one hash
    if table.attention and any(table.attention[i] != table.attention[j] for i, j in enumerate(rep.tolist())):
        return None  # a fused kernel's K/V streams differ where the numbers agree
    return keep, where


def take_rows(table: LayerTable, rows: np.ndarray) -> LayerTable:
    """The rows ``rows`` of ``table`` (only what the analysis pass reads)."""
    idx = rows.tolist()
    return LayerTable(names=tuple(table.names[i] for i in idx), kinds=tuple(table.kinds[i] for i in idx),
                      layer_index=table.layer_index[rows], gemm=table.gemm[rows], gemm_count=table.gemm_count[rows],
                      columns={c: v[rows] for c, v in table.columns.items()},
                      attention=tuple(table.attention[i] for i in idx) if table.attention else ())
