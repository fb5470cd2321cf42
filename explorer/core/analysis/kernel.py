"""The cross terms of the analysis pass, rows x devices (L, D) and rows x devices x memory levels (L, D, V), from a
table plan and a device plan (:mod:`.plan`). The formulas are :mod:`.evaluate`'s (its docstring); this module only
computes them with fewer numpy calls: every memory level in one (L, D, V) array instead of one (L, D) slice per
level, both thread-block tiles of the tensor cores side by side, the per-side constants taken from the plans. The
operations and their order are the same as before, so the numbers are the same floats
(``tests/core/test_evaluate_fast.py`` compares with the pass as it was).

:func:`cross` makes every field of an analysis, in fresh arrays the caller owns. :func:`time_energy` makes only the
time and energy per row and device (what a sweep or the generate task sums per context), in the buffers of a
:class:`Workspace` when given one: they are overwritten by the next call with the same workspace, so the caller
reduces them first and keeps nothing that points into them (the sweep's and the generate task's rule).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field

import numpy as np

from .device_arrays import DeviceArrays
from .flash import kv_rereads
from .plan import DevicePlan, RowPlan, TablePlan


@dataclass(eq=False)
class Workspace:
    """Buffers reused across passes (one flat array per name, grown when a pass needs more): no new pages per pass.
    Not thread-safe: one workspace per thread or per loop."""

    buffers: dict = field(default_factory=dict)

    def take(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        size = math.prod(shape)
        buf = self.buffers.get(name)
        if buf is None or buf.size < size:
            buf = self.buffers[name] = np.empty(max(size, 1))
        return buf[:size].reshape(shape)


def _empty(ws: Workspace | None, name: str, shape: tuple[int, ...]) -> np.ndarray:
    return np.empty(shape) if ws is None else ws.take(name, shape)


_LOCAL = threading.local()
#: the (L, D) arrays of :func:`cross`'s block, in order, then each memory level's energy (V of them)
SUMMED = ("ideal_time", "time", "calibrated_time", "energy", "compute_energy")


def scratch() -> Workspace:
    """This thread's workspace for the temporaries of :func:`cross` (never returned: the results own fresh arrays)."""
    ws = getattr(_LOCAL, "workspace", None)
    if ws is None:
        ws = _LOCAL.workspace = Workspace()
    return ws


def mapping_efficiency(tp: TablePlan, dp: DevicePlan) -> np.ndarray:
    """(L, D) tile (x wave x alignment) efficiency of each GEMM row on each device's matrix engine; 1 elsewhere.
    Call under ``np.errstate(invalid="ignore", divide="ignore")`` (unknown figures are NaN)."""
    eff = np.ones((tp.n_rows, dp.n_dev))
    if not len(tp.g):
        return eff
    for group, kind in ((dp.systolic, 1), (dp.tensor_core, 2)):
        if group is None:
            continue
        e = _systolic(tp, group.params) if kind == 1 else _tensor_core(tp, group.params)
        if group.whole and tp.all_gemm:
            return e
        if group.whole:
            eff[tp.g] = e
        else:
            eff[np.ix_(tp.g, group.cols)] = e
    return eff


def _systolic(tp: TablePlan, params) -> np.ndarray:
    """:func:`.tiling.systolic_arrays` (without cycles) on the GEMM rows: folds of the array, rounds over its units."""
    is_os, is_is, rows, cols, rows_cols, units = params
    m, n, k, count = tp.m, tp.n, tp.k, tp.gc
    sr = np.where(is_os, m, k)
    sc = np.where(is_is, m, n)
    folds = np.ceil(sr / rows) * np.ceil(sc / cols)
    rounds = np.ceil(folds * count / units)
    return (sr * sc / rows_cols) * count / (rounds * units)


def _tensor_core(tp: TablePlan, params) -> np.ndarray:
    """:func:`.tiling.tensor_core_arrays` on the GEMM rows, the block tile and its half in one (G, 2 x D) array."""
    bm, bn, sm, align = params
    m, n, count = tp.m, tp.n, tp.gc
    tiles = np.ceil(m / bm) * np.ceil(n / bn)
    tile_eff = tp.mn / (tiles * bm * bn)
    tiles_count = tiles * count
    waves = np.ceil(tiles_count / sm)
    eff = tile_eff * (tiles_count / (waves * sm))
    half = len(bm) // 2
    return np.fmax(eff[:, :half], eff[:, half:]) * tp.align_efficiency(align)


def _traffic(tp: TablePlan, dp: DevicePlan, rp: RowPlan, attention: str, flash: np.ndarray | None,
             ws: Workspace | None, tmp: Workspace) -> np.ndarray:
    """(V, L, D) bytes crossing each memory level: the roofline's bytes plus the square-tile re-reads of the GEMM rows
    (or a fused kernel's K/V re-reads), zero where a device has no such level. Levels outermost, so that each level is
    one contiguous (L, D) block (the analysis shows it as (L, D, V), a transposed view)."""
    n_rows, n_dev, n_levels = tp.n_rows, dp.n_dev, dp.n_levels
    t = _empty(ws, "traffic", (n_levels, n_rows, n_dev))
    t[...] = rp.nbytes[None, :, None]
    if len(tp.g) and n_levels:
        # the re-reads of both operands in one (2, V, G, D) array: [0] the left operand's, N over the tile's N,
        # [1] the right operand's, M over the tile's M; each max(ceil(dim / tile) - 1, 0) x its size x its bytes
        x = np.divide(tp.dims4, dp.tiles4, out=tmp.take("rereads", (2, n_levels, len(tp.g), n_dev)))
        np.ceil(x, out=x)
        x -= 1
        np.maximum(x, 0, out=x)
        np.multiply(tp.sizes4, x, out=x)
        x *= rp.bpe4
        extra = np.add(x[0], x[1], out=x[0])
        if not (dp.tiles_ok and rp.bpe_finite and tp.shapes_finite):  # else every re-read is finite (tiles >= 1)
            np.nan_to_num(extra, copy=False, nan=0.0)
        extra *= tp.tile_gc(attention)
        if tp.all_gemm:
            t += extra
        else:  # the GEMM rows' bytes plus their re-reads, written by index (a scatter, without gathering t[:, g])
            extra += rp.nbytes_g
            t[:, tp.g] = extra
    if flash is not None:
        t += flash.transpose(2, 0, 1)
    t *= dp.present
    return t


def _sure(dp: DevicePlan, rp: RowPlan, attention: str) -> bool:
    """Whether every cell's traffic is finite and some level of each device has a known bandwidth, so that no cell
    lacks a level time (a fused kernel's re-reads are not checked in advance: then the cells are)."""
    return dp.every_device_timed and rp.nbytes_finite and attention != "fused"


def _flash(table, dev: DeviceArrays, dp: DevicePlan, attention: str):
    if attention != "fused":
        return None
    return kv_rereads(table, dev, dp.n_levels)[1]


def cross(table, dev: DeviceArrays, tp: TablePlan, dp: DevicePlan, rp: RowPlan, attention: str) -> dict:
    """Every (L, D) and (L, D, V) field of the analysis, fresh arrays. Call under ``np.errstate(invalid="ignore",
    divide="ignore")``."""
    F, B, I = rp.F, rp.nbytes[:, None], rp.summary(table).intensity[:, None]
    tmp = scratch()
    n_rows, n_dev, n_levels = tp.n_rows, dp.n_dev, dp.n_levels
    # the arrays the totals sum over rows, in one block so that one call sums them all (:data:`SUMMED`)
    block = np.empty((len(SUMMED) + n_levels, n_rows, n_dev))
    compute_time = F / dp.peak
    memory_time = B / dp.bw
    attainable = np.multiply(I, dp.bw, out=np.empty((n_rows, n_dev)))
    attainable *= dp.eta_m
    np.minimum(dp.peak_eta_c, attainable, out=attainable)
    memory_bound = I < dp.ridge
    ideal_time = np.maximum(compute_time, memory_time, out=block[0])
    eff = mapping_efficiency(tp, dp)
    traffic = _traffic(tp, dp, rp, attention, _flash(table, dev, dp, attention), None, tmp)
    level_energy = np.multiply(traffic, dp.level_energy, out=block[len(SUMMED):])
    compute_energy = np.multiply(rp.mac_equivalent, dp.mac_energy, out=block[4])
    energy = block[3]
    np.copyto(energy, compute_energy)
    for j in range(n_levels):
        energy += level_energy[j]
    time = _time(F, eff, dp, traffic, memory_time, B, tmp, block[1], _sure(dp, rp, attention))
    return {"compute_time": compute_time, "memory_time": memory_time, "attainable": attainable,
            "memory_bound": memory_bound, "ideal_time": ideal_time, "mapping_efficiency": eff,
            "level_traffic": traffic.transpose(1, 2, 0), "level_energy": level_energy.transpose(1, 2, 0),
            "compute_energy": compute_energy, "energy": energy, "time": time, "calibrated_time": block[2],
            "summed": block}


def _time(F, eff, dp: DevicePlan, traffic: np.ndarray, memory_time, B, tmp: Workspace,
          out: np.ndarray, sure: bool = False) -> np.ndarray:
    """max(compute time at the mapping efficiency, the slowest level's traffic time) into ``out`` (L, D); where no level
    gives a time (its bandwidths unknown), the roofline's memory time at eta_m. ``traffic`` (V, L, D); ``memory_time``
    (L, D), or None to compute it from the bytes ``B`` (L, 1) where it is needed; temporaries in ``tmp``. ``sure``:
    every cell has a level time (every device a level of known bandwidth, every row's bytes finite): not checked."""
    if dp.n_levels:
        lt = np.divide(traffic, dp.level_bw_eta, out=tmp.take("level_time", traffic.shape))
        mem = np.fmax.reduce(lt, axis=0, out=tmp.take("memory_level_time", out.shape))
        if not sure:
            nan = np.isnan(mem)
            if nan.any():
                mem = np.where(nan, (B / dp.bw if memory_time is None else memory_time) / dp.eta_m, mem)
    else:
        mem = (B / dp.bw if memory_time is None else memory_time) / dp.eta_m
    np.multiply(dp.peak_eta_c, eff, out=out)
    np.divide(F, out, out=out)
    return np.maximum(out, mem, out=out)


def time_energy(table, dev: DeviceArrays, tp: TablePlan, dp: DevicePlan, rp: RowPlan, attention: str,
                ws: Workspace | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Only ``time`` and ``energy`` (L, D), equal to :func:`cross`'s; in ``ws``'s buffers when given (see the module
    docstring for who may keep them)."""
    tmp = ws if ws is not None else scratch()  # the traffic and the other temporaries: never returned
    with np.errstate(invalid="ignore", divide="ignore"):
        eff = mapping_efficiency(tp, dp)
        traffic = _traffic(tp, dp, rp, attention, _flash(table, dev, dp, attention), tmp, tmp)
        energy = _empty(ws, "energy", (tp.n_rows, dp.n_dev))
        if dp.n_levels:  # [compute, level 0, level 1, ...] summed in that order by one reduce over the outer axis
            e = tmp.take("level_energy", (dp.n_levels + 1, tp.n_rows, dp.n_dev))
            np.multiply(rp.mac_equivalent, dp.mac_energy, out=e[0])
            np.multiply(traffic, dp.level_energy, out=e[1:])
            np.add.reduce(e, axis=0, out=energy)
        else:
            np.multiply(rp.mac_equivalent, dp.mac_energy, out=energy)
        time = _time(rp.F, eff, dp, traffic, None, rp.nbytes[:, None], tmp, _empty(ws, "time", (tp.n_rows, dp.n_dev)),
                     _sure(dp, rp, attention))
    return time, energy
