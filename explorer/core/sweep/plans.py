"""The analysis plans of a sweep's blocks of rows, sliced from the plans of the whole table (:mod:`explorer.core.
analysis.plan`): a sweep passes its rows in blocks of at most ``MAX_CELLS`` (row, device) cells, and making a table
plan per block and a row plan per block and precision (the rows' bytes under the precision's formats, their FLOPs, the
GEMM rows' shapes) repeated, per block, what one plan of the whole table holds: every field of these plans is per row
(L,) or per GEMM row (G,), so a block's plan is the whole plan's rows ``a:b`` (and the GEMM rows among them).

Where the plans have fields this module does not know (another version of plan.py), :func:`sliced` makes the block's
plans afresh instead (the same numbers, without the saving).
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np

from explorer.core.analysis.device_arrays import DeviceArrays
from explorer.core.analysis.plan import DevicePlan, RowPlan, TablePlan, table_plan
from explorer.core.analysis.tensor_bytes import TensorBytes
from explorer.core.workload.model import LayerTable

_TABLE_FIELDS = frozenset({"n_rows", "count", "g", "all_gemm", "m", "n", "k", "gc", "dims4", "sizes4", "mn", "kinds",
                           "tile_gc_by_mode", "macs_w", "macs_w_sum", "shapes_finite", "rows_by_key", "last_rows",
                           "align_by_key"})
_ROW_FIELDS = frozenset({"tb", "fm", "flops", "nbytes", "F", "mac_equivalent", "bpe4", "nbytes_g", "nbytes_finite",
                         "bpe_finite", "summary_slot"})
_BYTES_FIELDS = frozenset({"weight", "activation", "kv", "conversions", "device_conversions", "a_bpe", "b_bpe"})
KNOWN = ({f.name for f in fields(TablePlan)} == _TABLE_FIELDS and {f.name for f in fields(RowPlan)} == _ROW_FIELDS
         and {f.name for f in fields(TensorBytes)} == _BYTES_FIELDS)


def _frozen(*arrays: np.ndarray) -> None:
    for a in arrays:
        a.setflags(write=False)


def _table_rows(tp: TablePlan, a: int, b: int, attention: str) -> tuple[TablePlan, int, int]:
    """Rows a..b of the whole table's plan, and the slice ga:gb of its GEMM rows they hold."""
    ga, gb = (int(i) for i in np.searchsorted(tp.g, [a, b]))
    g = tp.g[ga:gb] - a
    gemm = slice(ga, gb)
    macs_w = tp.macs_w[a:b]
    out = TablePlan(
        n_rows=b - a, count=tp.count[a:b], g=g, all_gemm=len(g) == b - a, m=tp.m[gemm], n=tp.n[gemm], k=tp.k[gemm],
        gc=tp.gc[gemm], dims4=tp.dims4[:, :, gemm], sizes4=tp.sizes4[:, :, gemm], mn=tp.mn[gemm],
        kinds=tp.kinds[a:b], tile_gc_by_mode={"naive": tp.gc[gemm][None]},
        macs_w=macs_w, macs_w_sum=float(macs_w.sum()),
        shapes_finite=bool(np.isfinite(tp.dims4[:, :, gemm]).all() and np.isfinite(tp.sizes4[:, :, gemm]).all()))
    if attention == "fused":  # the GEMMs whose re-reads count under a fused kernel: made once for the whole table
        out.tile_gc_by_mode["fused"] = tp.tile_gc("fused")[:, gemm]
    _frozen(g)
    return out, ga, gb


def _row_rows(rp: RowPlan, a: int, b: int, ga: int, gb: int) -> RowPlan:
    tb = rp.tb
    b_bpe = tb.b_bpe[a:b]
    nbytes = rp.nbytes[a:b]
    return RowPlan(
        tb=TensorBytes(weight=tb.weight[a:b], activation=tb.activation[a:b], kv=tb.kv[a:b],
                       conversions=tb.conversions[a:b], device_conversions=tb.device_conversions[a:b],
                       a_bpe=tb.a_bpe, b_bpe=b_bpe),
        fm=rp.fm, flops=rp.flops[a:b], nbytes=nbytes, F=rp.F[a:b], mac_equivalent=rp.mac_equivalent[a:b],
        bpe4=rp.bpe4[:, :, ga:gb], nbytes_g=rp.nbytes_g[:, ga:gb], nbytes_finite=bool(np.isfinite(nbytes).all()),
        bpe_finite=bool(np.isfinite(b_bpe).all() and np.isfinite(tb.a_bpe)))


def sliced(table: LayerTable, block: LayerTable, a: int, b: int, dev: DeviceArrays, dp: DevicePlan,
           attention: str) -> tuple[TablePlan, RowPlan]:
    """The table plan and the row plan (under ``dev``'s formats) of ``block``, rows a..b of ``table``: sliced from
    ``table``'s plans (made once, kept with the table), or made afresh where this module does not know the plans."""
    if not KNOWN:
        tp = table_plan(block)
        return tp, tp.rows(block, dev, dp)
    whole = table_plan(table)
    if a == 0 and b == len(table):
        return whole, whole.rows(table, dev, dp)
    tp, ga, gb = _table_rows(whole, a, b, attention)
    rp = _row_rows(whole.rows(table, dev, dp), a, b, ga, gb)
    tp.rows_by_key[dp.row_key] = rp
    return tp, rp
