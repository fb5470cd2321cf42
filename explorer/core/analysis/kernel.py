"""The cross terms of the analysis pass, rows x devices (L, D) and rows x devices x memory levels (L, D, V), from a
table plan and a device plan (:mod:`.plan`). The formulas are :mod:`.evaluate`'s (its docstring); this module only
computes them with fewer numpy calls: every memory level in one (L, D, V) array instead of one (L, D) slice per
level, both thread-block tiles of the tensor cores side by side, the per-side constants taken from the plans. The
GEMM rows' efficiency and re-reads are made once per distinct GEMM shape and the other rows' time as the roofline of
the slowest level (:mod:`.gemm_rows`); on a large pass over a table whose rows repeat, every term once per distinct
row, gathered by row (:mod:`.row_classes`). Each cell's operations and their order are the same as before, so the
numbers are the same floats (``tests/core/test_evaluate_fast.py`` compares with the pass as it was,
``tests/core/test_pass_rows.py`` the grouped pass with the pass over every row).

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
from .gemm_rows import GemmShapes, efficiency_table, fallback_memory_time, gemm_shapes, rereads, roof
from .plan import DevicePlan, RowPlan, TablePlan, table_plan
from .row_classes import RowClasses, row_classes


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
#: the (L, D) arrays of :func:`cross`'s block, in order, then each memory level's energy (V of them), then the
#: calibrated time
SUMMED = ("ideal_time", "time", "energy", "compute_energy")


def scratch() -> Workspace:
    """This thread's workspace for the temporaries of :func:`cross` (never returned: the results own fresh arrays)."""
    ws = getattr(_LOCAL, "workspace", None)
    if ws is None:
        ws = _LOCAL.workspace = Workspace()
    return ws


def _core(tp: TablePlan, dp: DevicePlan, rp: RowPlan, attention: str, flash: np.ndarray | None, tmp: Workspace,
          traffic: np.ndarray, time: np.ndarray, eff: np.ndarray | None, memory_time: np.ndarray | None,
          ext: np.ndarray, gs: GemmShapes, compute_time: np.ndarray | None = None) -> None:
    """Fill ``traffic`` (V, L, D), the bytes crossing each memory level, and ``time`` (L, D), the rows' time; ``ext``
    is :func:`.gemm_rows.efficiency_table`, ``eff`` the rows' mapping efficiency (L, D) or None (made in ``tmp`` if
    needed). Levels outermost, so that each level is one contiguous (L, D) block (the analysis shows (L, D, V)).

    The traffic is the roofline's bytes at every level a device has, plus the square-tile re-reads of the GEMM rows
    (or a fused kernel's K/V re-reads); the time is max(compute time at the mapping efficiency, the slowest level's
    traffic time). The GEMM rows' terms are made for the GEMM rows only, from their shapes' (:mod:`.gemm_rows`); the
    other rows' traffic is their bytes and, where :class:`.gemm_rows.Roof` holds, their time the roofline of the
    slowest level, ``max(F / (peak eta_c), bytes / min_j bw_j eta_m)``: the same floats as the level by level max.
    Where those two quotients are the roofline's compute and memory times bit for bit (:class:`.gemm_rows.Roof`:
    eta_c and eta_m 1, the off-chip level the slowest), ``compute_time`` and ``memory_time`` (L, D) are taken for them
    when given."""
    n_rows, n_dev, n_levels, g, n_gemm = tp.n_rows, dp.n_dev, dp.n_levels, tp.g, len(tp.g)
    B3 = rp.nbytes[None, :, None]
    rf = roof(dp)
    fast = rf.ok and gs.bytes_plain and flash is None
    tg = None
    if n_gemm and n_levels:  # the GEMM rows' bytes plus their re-reads (V, G, D)
        x = rereads(gs, tp, dp, rp.bpe_finite, attention, tmp)
        tg = traffic if (fast and tp.all_gemm) else tmp.take("traffic_g", (n_levels, n_gemm, n_dev))
        if gs.inv is None:
            np.add(x, gs.nbytes_g, out=tg)  # (x may be (V, U, 1): every device's tiles alike)
        elif x.shape[2] == n_dev:
            np.take(x, gs.inv, axis=1, out=tg, mode="clip")
            tg += gs.nbytes_g
        else:
            np.add(np.take(x, gs.inv, axis=1), gs.nbytes_g, out=tg)
    if not fast:  # every level of every row, as the pass was
        np.copyto(traffic, B3)
        if tg is not None:
            traffic[:, g] = tg
        if flash is not None:
            traffic += flash.transpose(2, 0, 1)
        traffic *= dp.present
        if eff is None:
            eff = np.take(ext, gs.rows, axis=0, out=tmp.take("eff", (n_rows, n_dev)), mode="clip")
        _time(rp.F, eff, dp, traffic, memory_time, rp.nbytes[:, None], tmp, time, _sure(dp, rp, attention))
        return
    if tg is not None and not rf.all_present:
        tg *= dp.present
    if not tp.all_gemm:
        if rf.all_present:
            np.copyto(traffic, B3)
        else:
            np.multiply(B3, dp.present, out=traffic)
        if compute_time is not None and rf.same_peak:  # F / (peak eta_c) is the compute time: the same floats
            comp = compute_time
        else:
            comp = np.divide(rp.F, dp.peak_eta_c, out=time)
        if memory_time is not None and rf.same_bw and not len(rf.fallback):  # bytes / bw is the memory time
            mem = memory_time
        else:
            mem = np.divide(rp.nbytes[:, None], rf.bw, out=tmp.take("memory_level_time", time.shape))
            if len(rf.fallback):
                fallback_memory_time(mem, rp.nbytes[:, None], dp, rf.fallback, memory_time)
        np.maximum(comp, mem, out=time)
    if not n_gemm:
        return
    lt = np.divide(tg, dp.level_bw_eta, out=tmp.take("level_time", tg.shape))
    mem = np.fmax.reduce(lt, axis=0, out=tmp.take("memory_g", (n_gemm, n_dev)))
    if len(rf.fallback):
        fallback_memory_time(mem, gs.nbytes_g[0], dp, rf.fallback, None if memory_time is None else memory_time[g])
    tgt = time if tp.all_gemm else tmp.take("time_g", (n_gemm, n_dev))
    if gs.inv is None:
        np.multiply(dp.peak_eta_c, ext[1:], out=tgt)
    else:
        np.take(np.multiply(dp.peak_eta_c, ext[1:]), gs.inv, axis=0, out=tgt, mode="clip")
    F_g = gs.F_g if gs.F_g is not None else np.take(rp.F, g, axis=0, out=tmp.take("F_g", tgt.shape), mode="clip")
    np.divide(F_g, tgt, out=tgt)
    np.maximum(tgt, mem, out=tgt)
    if not tp.all_gemm:
        traffic[:, g] = tg
        time[g] = tgt


def _sure(dp: DevicePlan, rp: RowPlan, attention: str) -> bool:
    """Whether every cell's traffic is finite and some level of each device has a known bandwidth, so that no cell
    lacks a level time (a fused kernel's re-reads are not checked in advance: then the cells are)."""
    return dp.every_device_timed and rp.nbytes_finite and attention != "fused"


def _flash(table, dev: DeviceArrays, dp: DevicePlan, attention: str):
    if attention != "fused":
        return None
    return kv_rereads(table, dev, dp.n_levels)[1]


def cross(table, dev: DeviceArrays, tp: TablePlan, dp: DevicePlan, rp: RowPlan, attention: str) -> dict:
    """Every (L, D) and (L, D, V) field of the analysis, fresh arrays; the calibrated time's (the block's last) left to
    the caller. Where the table's rows repeat (:mod:`.row_classes`), computed on its distinct rows and gathered. Call
    under ``np.errstate(invalid="ignore", divide="ignore")``."""
    cls = row_classes(table, tp, dp.n_dev, attention)
    if cls is None:
        return _cross_rows(table, dev, tp, dp, rp, attention)
    sub = cls.table
    stp = table_plan(sub)
    small = _cross_rows(sub, dev, stp, dp, stp.rows(sub, dev, dp), attention)
    inv, n_rows, n_dev = cls.inv, tp.n_rows, dp.n_dev
    sb = small["summed"]
    block = np.empty((sb.shape[0], n_rows, n_dev))
    np.take(sb[:-1], inv, axis=1, out=block[:-1], mode="clip")
    traffic = np.take(small["traffic"], inv, axis=1)
    x = {name: np.take(small[name], inv, axis=0) for name in GATHERED}
    x.update(_fields(block, traffic))
    return x


#: the fields :func:`cross` gathers one by one (the others are in its block, or the traffic)
GATHERED = ("compute_time", "memory_time", "attainable", "memory_bound", "mapping_efficiency")


def _fields(block: np.ndarray, traffic: np.ndarray) -> dict:
    n_levels = len(traffic)
    return {"ideal_time": block[0], "time": block[1], "energy": block[2], "compute_energy": block[3],
            "level_energy": block[len(SUMMED):len(SUMMED) + n_levels].transpose(1, 2, 0), "calibrated_time": block[-1],
            "level_traffic": traffic.transpose(1, 2, 0), "traffic": traffic, "summed": block}


def _cross_rows(table, dev: DeviceArrays, tp: TablePlan, dp: DevicePlan, rp: RowPlan, attention: str) -> dict:
    """:func:`cross` on every row."""
    F, B, I = rp.F, rp.nbytes[:, None], rp.summary(table).intensity[:, None]
    tmp = scratch()
    n_rows, n_dev, n_levels = tp.n_rows, dp.n_dev, dp.n_levels
    # the arrays the totals sum over rows, in one block so that one call sums them all (:data:`SUMMED`, each level's
    # energy, the calibrated time); one allocation of this size also keeps glibc's heap from being trimmed after
    # every pass (with the calibrated time apart: ~5,800 page faults a pass at 10,000 x 50)
    block = np.empty((len(SUMMED) + n_levels + 1, n_rows, n_dev))
    compute_time = np.divide(F, dp.peak)
    memory_time = np.divide(B, dp.bw)
    attainable = np.multiply(I, dp.bw)
    if not roof(dp).eta_m_one:  # x 1 changes no float
        attainable *= dp.eta_m
    np.minimum(dp.peak_eta_c, attainable, out=attainable)
    memory_bound = np.less(I, dp.ridge)
    np.maximum(compute_time, memory_time, out=block[0])  # the ideal time
    gs = gemm_shapes(tp, rp)
    ext = efficiency_table(gs, tp, dp, tmp)
    eff = ext[1:] if tp.all_gemm and gs.inv is None else np.take(ext, gs.rows, axis=0)
    traffic = np.empty((n_levels, n_rows, n_dev))
    time = block[1]
    _core(tp, dp, rp, attention, _flash(table, dev, dp, attention), tmp, traffic, time, eff, memory_time, ext, gs,
          compute_time)
    level_energy = np.multiply(traffic, dp.level_energy, out=block[len(SUMMED):-1])
    compute_energy = np.multiply(rp.mac_equivalent, dp.mac_energy, out=block[3])
    energy = block[2]
    if n_levels:  # (compute + level 0) + level 1 + ...
        np.add(compute_energy, level_energy[0], out=energy)
        for j in range(1, n_levels):
            energy += level_energy[j]
    else:
        np.copyto(energy, compute_energy)
    return {"compute_time": compute_time, "memory_time": memory_time, "attainable": attainable,
            "memory_bound": memory_bound, "mapping_efficiency": eff, **_fields(block, traffic)}


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
                ws: Workspace | None = None, *, distinct: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Only ``time`` and ``energy`` (L, D), equal to :func:`cross`'s; in ``ws``'s buffers when given (see the module
    docstring for who may keep them). ``distinct``: the caller says the rows are already distinct (e.g. the sweep's
    blocks), so they are not searched for repeats (:mod:`.row_classes`): the same floats either way."""
    cls = None if distinct else row_classes(table, tp, dp.n_dev, attention)
    if cls is None:
        return _time_energy_rows(table, dev, tp, dp, rp, attention, ws)
    return time_energy_classes(cls, dev, dp, attention, ws)


def time_energy_classes(cls: RowClasses, dev: DeviceArrays, dp: DevicePlan, attention: str,
                        ws: Workspace | None = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`time_energy` of a table whose distinct rows ``cls`` are known (:func:`.row_classes.given_classes`):
    the pass on the distinct rows (their own plans; the whole table's are not made), gathered by row. Not for
    ``attention="fused"`` (its K/V re-reads are per row)."""
    if attention == "fused":
        raise ValueError("attention: a fused kernel's rows are not grouped (row classes)")
    sub = cls.table
    stp = table_plan(sub)
    t, e = _time_energy_rows(sub, dev, stp, dp, stp.rows(sub, dev, dp), attention, None)
    shape = (len(cls.inv), dp.n_dev)
    return (np.take(t, cls.inv, axis=0, out=_empty(ws, "time", shape), mode="clip"),
            np.take(e, cls.inv, axis=0, out=_empty(ws, "energy", shape), mode="clip"))


def _time_energy_rows(table, dev: DeviceArrays, tp: TablePlan, dp: DevicePlan, rp: RowPlan, attention: str,
                      ws: Workspace | None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`time_energy` on every row."""
    tmp = ws if ws is not None else scratch()  # the traffic and the other temporaries: never returned
    n_rows, n_dev, n_levels = tp.n_rows, dp.n_dev, dp.n_levels
    with np.errstate(invalid="ignore", divide="ignore"):
        gs = gemm_shapes(tp, rp)
        traffic = tmp.take("traffic", (n_levels, n_rows, n_dev))
        time = _empty(ws, "time", (n_rows, n_dev))
        _core(tp, dp, rp, attention, _flash(table, dev, dp, attention), tmp, traffic, time, None, None,
              efficiency_table(gs, tp, dp, tmp), gs)
        energy = _empty(ws, "energy", (n_rows, n_dev))
        if n_levels:  # [compute, level 0, level 1, ...] summed in that order by one reduce over the outer axis
            e = tmp.take("level_energy", (n_levels + 1, n_rows, n_dev))
            np.multiply(rp.mac_equivalent, dp.mac_energy, out=e[0])
            np.multiply(traffic, dp.level_energy, out=e[1:])
            np.add.reduce(e, axis=0, out=energy)
        else:
            np.multiply(rp.mac_equivalent, dp.mac_energy, out=energy)
    return time, energy
