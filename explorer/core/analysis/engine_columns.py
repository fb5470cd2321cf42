"""The devices of a pass by what the GEMM rows' terms read of them (issue 22 (d)): devices of one matrix engine (its
kind, array or block tile, SM count, units, dataflow) give the same mapping efficiency, and devices of one memory
layout the same square-tile re-reads, so :mod:`.gemm_rows` computes those once per distinct engine and tile column and
copies them to the devices by index. Compared by their bits, so every device gets the same floats as on its own
(``tests/core/test_gemm_columns.py``). Made once per device plan, kept weakly by it.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

import numpy as np

from .plan import DevicePlan

_LOCK = threading.Lock()


def _frozen(*arrays: np.ndarray) -> None:
    for a in arrays:
        a.setflags(write=False)


def distinct_rows(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(first, inv)`` of the rows of ``key`` (G, C) compared by their bits: a row of each distinct one (U,) and the
    distinct row of each row (G,)."""
    bits = np.ascontiguousarray(key).view(np.int64)
    order = np.lexsort(bits.T[::-1])
    ordered = bits[order]
    new = np.empty(len(bits), dtype=bool)
    new[:1] = True
    np.any(ordered[1:] != ordered[:-1], axis=1, out=new[1:])
    inv = np.empty(len(bits), dtype=np.intp)
    inv[order] = np.cumsum(new) - 1
    return order[new], inv


@dataclass(frozen=True, eq=False)
class Columns:
    """A device plan's devices by what the GEMM rows' terms read of them: ``(params, inv)`` per engine group, the
    group's parameters for its distinct engines (compared by their bits) and the distinct engine of each of its devices
    (None: every device its own, ``params`` the group's); ``tiles4`` (2, V, 1, T) the distinct columns of
    :attr:`DevicePlan.tiles4` and ``tiles_inv`` (D,) each device's (None: all distinct)."""

    systolic: tuple
    tensor_core: tuple
    tiles4: np.ndarray
    tiles_inv: np.ndarray | None
    engine_cols: np.ndarray | None  # (D,) each device's column in [1, the distinct systolic engines', the distinct
    # tensor cores']; None: no device has an engine; WHOLE: every device in one group, each its own engine
    n_engines: int


WHOLE = np.zeros(0, dtype=np.intp)


def _distinct_cols(key: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``(first, inv)`` of the columns of ``key`` (C, D), or None where fewer than half of them repeat."""
    if key.shape[1] < 2:
        return None
    first, inv = distinct_rows(np.ascontiguousarray(key.T, dtype=float))
    if 2 * len(first) > key.shape[1]:
        return None
    order = np.argsort(first, kind="stable")  # the distinct columns in the devices' order
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return first[order], rank[inv]


def _group_columns(group, tensor: bool) -> tuple:
    if group is None:
        return (None, None)
    params = group.params
    if tensor:  # a device is its block tile and its half: columns j and j + D_tc
        bm, bn, sm, align = params
        h = len(bm) // 2
        got = _distinct_cols(np.vstack([bm[:h], bn[:h], sm[:h], bm[h:], bn[h:], sm[h:]]))
        if got is None:
            return (params, None)
        first, inv = got
        both = np.concatenate([first, first + h])
        sub = (bm[both], bn[both], sm[both], align)
    else:
        got = _distinct_cols(np.vstack([np.asarray(p, dtype=float) for p in params]))
        if got is None:
            return (params, None)
        first, inv = got
        sub = tuple(p[first] for p in params)
    _frozen(inv, *(p for p in sub if isinstance(p, np.ndarray)))
    return (sub, inv)


_COLUMNS: weakref.WeakKeyDictionary[DevicePlan, Columns] = weakref.WeakKeyDictionary()


def columns(dp: DevicePlan) -> Columns:
    """The device plan's :class:`Columns`, made on first use and kept while the plan lives."""
    got = _COLUMNS.get(dp)
    if got is None:
        t = dp.tiles4
        tiles = _distinct_cols(t.reshape(-1, dp.n_dev)) if t.size else None
        tiles4, tiles_inv = (t, None) if tiles is None else (np.ascontiguousarray(t[..., tiles[0]]), tiles[1])
        _frozen(tiles4, *(() if tiles_inv is None else (tiles_inv,)))
        sa, tc = _group_columns(dp.systolic, False), _group_columns(dp.tensor_core, True)
        engine_cols, n_engines = np.zeros(dp.n_dev, dtype=np.intp), 1
        for group, (params, inv), per in ((dp.systolic, sa, 1), (dp.tensor_core, tc, 2)):
            if group is not None:
                engine_cols[group.cols] = n_engines + (np.arange(len(group.cols)) if inv is None else inv)
                n_engines += len(params[0]) // per
        if n_engines == 1:
            engine_cols = None
        elif any(g is not None and g.whole and p[1] is None for g, p in ((dp.systolic, sa), (dp.tensor_core, tc))):
            engine_cols = WHOLE
        else:
            _frozen(engine_cols)
        got = Columns(systolic=sa, tensor_core=tc, tiles4=tiles4, tiles_inv=tiles_inv, engine_cols=engine_cols,
                      n_engines=n_engines)
        with _LOCK:
            got = _COLUMNS.setdefault(dp, got)
    return got
