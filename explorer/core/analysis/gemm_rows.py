"""The GEMM rows of the analysis pass by distinct shape, and the device side of the roofline rows (issue 22 (d)).

Only the GEMM rows of a work table have a mapping efficiency other than 1 and re-reads beyond their roofline bytes;
what both depend on per row is the GEMM's shape ``(M, N, K)``, the GEMMs per instance, the right operand's bytes per
element and whether a fused attention kernel runs the row. A model is blocks repeated, so a 10,000-layer table has
thousands of GEMM rows but a handful of such shapes: :class:`GemmShapes` finds the distinct ones once per row plan
(kept weakly by it), the pass computes the efficiency and the re-reads once per shape and device, and gathers them to
the rows by index. A shape's numbers are computed by the same operations on the same floats as a row's were, so every
row gets the same floats as before (``tests/core/test_evaluate_fast.py``). Shapes are compared by their bits. On the
device side, both are computed once per distinct matrix engine and tile column (:mod:`.engine_columns`).

:func:`roof` is the device side of the other rows: with nothing re-read, a row's bytes cross every level, and the
slowest level of a device is the one of least bandwidth x eta_m (:class:`Roof`).
"""

from __future__ import annotations

import operator
import threading
import weakref
from dataclasses import dataclass, field

import numpy as np

from .engine_columns import WHOLE as _WHOLE
from .engine_columns import columns
from .engine_columns import distinct_rows as _distinct
from .flash import FUSED_KINDS
from .plan import DevicePlan, RowPlan, TablePlan

_FUSED = frozenset(FUSED_KINDS)

_LOCK = threading.Lock()


def _frozen(*arrays: np.ndarray) -> None:
    for a in arrays:
        a.setflags(write=False)


@dataclass(frozen=True, eq=False)
class GemmShapes:
    """The distinct shapes (U) of a row plan's GEMM rows (G): per shape, the operands of the mapping efficiency and of
    the re-reads, as the table plan holds them per GEMM row."""

    n_shapes: int
    inv: np.ndarray | None  # (G,) the shape of each GEMM row; None: every GEMM row its own shape, in row order
    rows: np.ndarray  # (L,) 0 for a row without GEMMs, 1 + its shape for a GEMM row: an index into [1; per shape]
    m: np.ndarray  # (U, 1)
    n: np.ndarray
    k: np.ndarray
    gc: np.ndarray  # (U, 1) GEMMs per row instance
    mn: np.ndarray  # (U, 1) m * n
    dims4: np.ndarray  # (2, 1, U, 1) as TablePlan.dims4
    sizes4: np.ndarray  # (2, 1, U, 1) as TablePlan.sizes4
    bpe4: np.ndarray  # (2, 1, U, 1) as RowPlan.bpe4
    sizes_bpe4: np.ndarray | None  # (2, 1, U, 1) sizes4 x bpe4 where that product reorders exactly (:func:`_exact_fold`)
    F_g: np.ndarray | None  # (G, 1) the GEMM rows' FLOPs (RowPlan.F); None where F is (L, D): taken per pass
    nbytes_g: np.ndarray  # (1, G, 1) the GEMM rows' bytes (RowPlan.nbytes_g)
    bytes_plain: bool  # every row's bytes finite and >= 0 (what the roofline rows' shortcut needs)
    shapes_finite: bool
    first: np.ndarray | None  # (U,) a GEMM row (its place in the GEMM rows) of each shape; None with ``inv``
    by_key: dict = field(default_factory=dict)  # (no reference to the plans: they hold the key of its cache)

    def tile_gc(self, tp: TablePlan, attention: str) -> np.ndarray:
        """(1, U, 1) :meth:`TablePlan.tile_gc` per shape (``tp``: the table plan the shapes were found in)."""
        got = self.by_key.get(("tile_gc", attention))
        if got is None:
            full = tp.tile_gc(attention)
            got = full if self.first is None else np.ascontiguousarray(full[:, self.first])
            _frozen(got)
            with _LOCK:
                got = self.by_key.setdefault(("tile_gc", attention), got)
        return got

    def align_efficiency(self, tp: TablePlan, align: float) -> np.ndarray:
        """(U, 1) :meth:`TablePlan.align_efficiency` per shape."""
        full = tp.align_efficiency(align)
        if self.first is None:
            return full
        got = self.by_key.get(("align", align))
        if got is None:
            got = full[self.first]
            _frozen(got)
            with _LOCK:
                got = self.by_key.setdefault(("align", align), got)
        return got


_BIG, _SMALL = 2.0 ** 60, 2.0 ** -900


def _exact_fold(dims4: np.ndarray, sizes4: np.ndarray, bpe4: np.ndarray) -> np.ndarray | None:
    """``sizes4 * bpe4`` where ``(sizes x x) x bpe == x x (sizes x bpe)`` for every re-read count ``x`` of these shapes
    (``x = max(ceil(dim / tile) - 1, 0)``, an integer <= dim, or inf, or NaN, with tiles >= 1 or infinite): each bytes per
    element a power of two (multiplying by it is exact) and nothing near overflow or underflow; else None."""
    with np.errstate(invalid="ignore", over="ignore", under="ignore"):
        mant = np.frexp(bpe4)[0]
        sb = sizes4 * bpe4
        a, d = np.abs(sizes4), np.abs(dims4)
        ok = (np.all(mant == 0.5) and np.all(bpe4 > 0) and np.all(d < _BIG) and np.all(a < _BIG)
              and np.all((a == 0) | (a > _SMALL)) and np.all(np.isfinite(sb)))
    return sb if ok else None


def _shapes(tp: TablePlan, rp: RowPlan) -> GemmShapes:
    g = tp.g
    n_gemm = len(g)
    first = inv = None
    if n_gemm > 1:
        fused = np.zeros(n_gemm)  # a fused kernel's rows re-read differently (TablePlan.tile_gc)
        if not _FUSED.isdisjoint(tp.kinds):
            fused[:] = np.fromiter(map(_FUSED.__contains__, operator.itemgetter(*g.tolist())(tp.kinds)), dtype=bool,
                                   count=n_gemm)
        key = np.column_stack([tp.m[:, 0], tp.n[:, 0], tp.k[:, 0], np.asarray(tp.gc[:, 0], dtype=float),
                               rp.bpe4[1, 0, :, 0], fused])
        first, inv = _distinct(key)
        if 2 * len(first) > n_gemm:  # few repeats: the rows themselves (no gather)
            first = inv = None
    rows = np.zeros(tp.n_rows, dtype=np.intp)
    rows[g] = 1 + (np.arange(n_gemm) if inv is None else inv)

    def pick(a: np.ndarray, axis: int) -> np.ndarray:
        return a if first is None else np.ascontiguousarray(np.take(a, first, axis=axis))

    m, n, k, gc = (pick(a, 0) for a in (tp.m, tp.n, tp.k, tp.gc))
    F_g = rp.F[g] if rp.F.shape[1] == 1 else None  # a (G, D) copy kept per table would add up in a sweep
    nb = rp.nbytes
    dims4, sizes4, bpe4 = pick(tp.dims4, 2), pick(tp.sizes4, 2), pick(rp.bpe4, 2)
    sizes_bpe4 = _exact_fold(dims4, sizes4, bpe4) if n_gemm else None
    out = GemmShapes(
        n_shapes=n_gemm if first is None else len(first), inv=inv, rows=rows, m=m, n=n, k=k, gc=gc,
        mn=tp.mn if first is None else m * n, dims4=dims4, sizes4=sizes4, bpe4=bpe4, sizes_bpe4=sizes_bpe4, F_g=F_g, nbytes_g=rp.nbytes_g,
        bytes_plain=bool(rp.nbytes_finite and not np.any(nb < 0)), shapes_finite=tp.shapes_finite, first=first)
    _frozen(rows, m, n, k, gc, out.mn, out.dims4, out.sizes4, out.bpe4, *(() if F_g is None else (F_g,)),
            *(() if sizes_bpe4 is None else (sizes_bpe4,)),
            *(() if inv is None else (inv,)))
    return out


_SHAPES: weakref.WeakKeyDictionary[RowPlan, GemmShapes] = weakref.WeakKeyDictionary()


def gemm_shapes(tp: TablePlan, rp: RowPlan) -> GemmShapes:
    """The row plan's GEMM shapes (of the table plan ``tp`` it was made for), made on first use, kept while it lives."""
    got = _SHAPES.get(rp)
    if got is None:
        got = _shapes(tp, rp)
        with _LOCK:
            got = _SHAPES.setdefault(rp, got)
    return got


def efficiency_table(gs: GemmShapes, tp: TablePlan, dp: DevicePlan, tmp=None) -> np.ndarray:
    """(1 + U, D): 1 (a row without GEMMs), then each shape's tile (x wave x alignment) efficiency on each device's
    matrix engine (1 where the device has none); a fresh array, its temporaries in ``tmp`` (a
    :class:`.kernel.Workspace`) when given. Computed once per distinct engine (:func:`columns`: devices of the same
    engine and SM count give the same floats) and copied to its devices. Call under
    ``np.errstate(invalid="ignore", divide="ignore")``."""
    cs = columns(dp)
    if not gs.n_shapes or cs.engine_cols is None:
        return np.ones((1 + gs.n_shapes, dp.n_dev))
    ext = np.empty((1 + gs.n_shapes, dp.n_dev))
    ext[0] = 1.0
    if cs.engine_cols is not _WHOLE:  # [1, each distinct engine's], gathered to the devices by one take
        small = _buf(tmp, "engines", (gs.n_shapes, cs.n_engines))
        small[:, 0] = 1.0
        j = 1
        for fn, (params, _) in ((_systolic, cs.systolic), (_tensor_core, cs.tensor_core)):
            if params is not None:
                w = len(params[0]) // (2 if fn is _tensor_core else 1)
                fn(gs, tp, params, tmp, small[:, j:j + w])
                j += w
        np.take(small, cs.engine_cols, axis=1, out=ext[1:], mode="clip")
    else:  # one engine group of distinct devices: written in place
        fn, params = (_systolic, dp.systolic.params) if dp.systolic is not None else (_tensor_core,
                                                                                      dp.tensor_core.params)
        fn(gs, tp, params, tmp, ext[1:])
    return ext
    cs = columns(dp)
    for group, fn, (params, inv) in ((dp.systolic, _systolic, cs.systolic), (dp.tensor_core, _tensor_core,
                                                                            cs.tensor_core)):
        if group is None:
            continue
        if inv is not None:
            got = fn(gs, tp, params, tmp, None)
            if group.whole:
                np.take(got, inv, axis=1, out=ext[1:], mode="clip")
            else:
                ext[1:, group.cols] = np.take(got, inv, axis=1)
        elif group.whole:
            fn(gs, tp, params, tmp, ext[1:])
        else:
            ext[1:, group.cols] = fn(gs, tp, params, tmp, None)
    return ext


def _buf(tmp, name: str, shape: tuple[int, int]) -> np.ndarray:
    return np.empty(shape) if tmp is None else tmp.take(name, shape)


def _systolic(gs: GemmShapes, tp: TablePlan, params, tmp, out: np.ndarray | None) -> np.ndarray:
    """:func:`.tiling.systolic_arrays` (without cycles): folds of the array, rounds over its units (U, D_sa); each
    step's operation as before, in two buffers."""
    is_os, is_is, rows, cols, rows_cols, units = params
    m, n, k, count = gs.m, gs.n, gs.k, gs.gc
    shape = (gs.n_shapes, len(rows))
    sr = np.where(is_os, m, k)
    sc = np.where(is_is, m, n)
    a = np.divide(sr, rows, out=_buf(tmp, "sa_folds", shape))
    np.ceil(a, out=a)
    b = np.divide(sc, cols, out=_buf(tmp, "sa_cols", shape))
    np.ceil(b, out=b)
    a *= b  # folds
    a *= count
    a /= units
    np.ceil(a, out=a)  # rounds
    a *= units
    np.multiply(sr, sc, out=sr)
    sr /= rows_cols
    sr *= count
    return np.divide(sr, a, out=sr if out is None else out)


def _tensor_core(gs: GemmShapes, tp: TablePlan, params, tmp, out: np.ndarray | None) -> np.ndarray:
    """:func:`.tiling.tensor_core_arrays`, the block tile and its half side by side (U, 2 x D_tc), the better one per
    device (U, D_tc); each step's operation as before, in three buffers."""
    bm, bn, sm, align = params
    shape = (gs.n_shapes, len(bm))
    tiles = np.divide(gs.m, bm, out=_buf(tmp, "tc_tiles", shape))
    np.ceil(tiles, out=tiles)
    x = np.divide(gs.n, bn, out=_buf(tmp, "tc_eff", shape))
    np.ceil(x, out=x)
    tiles *= x
    np.multiply(tiles, bm, out=x)
    x *= bn
    np.divide(gs.mn, x, out=x)  # the tile efficiency
    tiles *= gs.gc  # the tiles of every GEMM
    waves = np.divide(tiles, sm, out=_buf(tmp, "tc_waves", shape))
    np.ceil(waves, out=waves)
    waves *= sm
    np.divide(tiles, waves, out=tiles)  # the wave efficiency
    x *= tiles
    half = len(bm) // 2
    eff = np.fmax(x[:, :half], x[:, half:], out=out)
    eff *= gs.align_efficiency(tp, align)
    return eff


def rereads(gs: GemmShapes, tp: TablePlan, dp: DevicePlan, bpe_finite: bool, attention: str,
            tmp) -> np.ndarray:
    """(V, U, D) each shape's square-tile re-reads crossing each level, in ``tmp``'s buffers (a
    :class:`.kernel.Workspace`): both operands' in one array, [0] the left operand's (N over the tile's N), [1] the
    right one's (M over the tile's M), each max(ceil(dim / tile) - 1, 0) x its size x its bytes per element; x the GEMMs
    they count for. Computed once per distinct tile column (:func:`columns`) and copied to its devices; (V, U, 1) where
    every device has the same tiles."""
    cs = columns(dp)
    tiles4 = cs.tiles4
    n_cols = tiles4.shape[-1]
    x = np.divide(gs.dims4, tiles4, out=tmp.take("rereads", (2, dp.n_levels, gs.n_shapes, n_cols)))
    np.ceil(x, out=x)
    x -= 1
    np.maximum(x, 0, out=x)
    if gs.sizes_bpe4 is not None and dp.tiles_ok:  # sizes x bpe made once per shape: the same floats
        x *= gs.sizes_bpe4
    else:
        np.multiply(gs.sizes4, x, out=x)
        x *= gs.bpe4
    extra = np.add(x[0], x[1], out=x[0])
    if not (dp.tiles_ok and bpe_finite and gs.shapes_finite):  # else every re-read is finite (tiles >= 1)
        np.nan_to_num(extra, copy=False, nan=0.0)
    extra *= gs.tile_gc(tp, attention)
    if cs.tiles_inv is None or n_cols == 1:  # (one column: (V, U, 1), which broadcasts over the devices)
        return extra
    return np.take(extra, cs.tiles_inv, axis=2, out=tmp.take("rereads_cols", (dp.n_levels, gs.n_shapes, dp.n_dev)),
                   mode="clip")


@dataclass(frozen=True, eq=False)
class Roof:
    """A device set's levels as the rows without re-reads see them. With ``ok``, every device's level times of bytes
    ``b`` (finite, >= 0) are ``b / bw_j`` over the levels it has of known bandwidth x eta_m ``bw_j`` (finite, > 0; the
    others give NaN, which the slowest-level max skips), and their max is ``b / min_j bw_j`` (``bw``, (1, D)): the same
    float, as division rounds monotonically. The devices in ``fallback`` have no such level: every level time is NaN
    and the pass takes the roofline's memory time at eta_m there, ``(b / bandwidth) / eta_m`` (unknown: NaN), for the
    GEMM rows too. ``all_present``: every device has every level (traffic x 1 is skipped). ``same_bw``: ``bw`` has the
    bits of the roofline's bandwidth (:attr:`DevicePlan.bw`; eta_m 1 and the off-chip level the slowest), so the rows'
    ``b / bw`` is their roofline memory time; ``same_peak``: peak x eta_c has the bits of the peak (eta_c 1), so
    ``F / (peak eta_c)`` is their compute time; ``eta_m_one``: every eta_m is 1 (x eta_m changes no float)."""

    ok: bool
    bw: np.ndarray
    fallback: np.ndarray  # (K,) columns
    all_present: bool
    same_bw: bool = False
    same_peak: bool = False
    eta_m_one: bool = False


_ROOFS: weakref.WeakKeyDictionary[DevicePlan, Roof] = weakref.WeakKeyDictionary()


def roof(dp: DevicePlan) -> Roof:
    """The device plan's :class:`Roof`, made on first use and kept while the plan lives."""
    got = _ROOFS.get(dp)
    if got is None:
        lbe, present = dp.level_bw_eta[:, 0, :], dp.present[:, 0, :] > 0  # (V, D)
        with np.errstate(invalid="ignore"):
            usable = present & np.isfinite(lbe) & (lbe > 0)
            ok = bool(dp.n_levels and not np.any(present & ~usable & ~np.isnan(lbe)))
            bw = np.min(np.where(usable, lbe, np.inf), axis=0, initial=np.inf)[None, :]
        fallback = np.flatnonzero(~usable.any(axis=0))
        _frozen(bw, fallback)
        got = Roof(ok=ok, bw=bw, fallback=fallback, all_present=bool(np.all(present)), same_bw=_same_bits(bw, dp.bw),
                   same_peak=_same_bits(dp.peak_eta_c, dp.peak), eta_m_one=bool(np.all(dp.eta_m == 1.0)))
        with _LOCK:
            got = _ROOFS.setdefault(dp, got)
    return got


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def fallback_memory_time(mem: np.ndarray, nbytes: np.ndarray, dp: DevicePlan, cols: np.ndarray,
                         memory_time: np.ndarray | None = None) -> None:
    """``mem[:, cols] = (nbytes / bandwidth) / eta_m`` (the roofline's memory time at eta_m, as the pass takes it where
    no level gives a time); ``nbytes`` (R, 1), ``memory_time`` the rows' ``nbytes / bandwidth`` (R, D) when made."""
    t = memory_time[:, cols] if memory_time is not None else nbytes / dp.bw[:, cols]
    mem[:, cols] = t / dp.eta_m[:, cols]
