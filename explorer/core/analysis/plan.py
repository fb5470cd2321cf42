"""Prepared plans of the analysis pass: what :func:`.evaluate.evaluate` needs of a work table alone, or of a device
set alone, computed once and reused by every pass over that table or those devices.

A pass crosses rows (L) with devices (D). Most of its ~200 small numpy calls used to recompute things that depend on
one side only: the GEMM rows and their shapes, each row's bytes under the tensors' formats, the totals' row sums
(table side); each device's tile sizes per memory level, energies per byte with the unknown ones zeroed, the matrix
engines grouped by kind, the calibration curves and status (device side). So a pass is now three steps:

* :func:`table_plan` (per :class:`LayerTable`) and its :meth:`TablePlan.rows` (per tensor formats), cached by the table
  object (weakly: a table nobody holds is dropped with its plan);
* :func:`device_plan` (per :class:`DeviceArrays`), cached by the arrays object, weakly;
* the cross terms (L, D) and (L, D, V), computed in :mod:`.evaluate` on every call from the two plans.

Ownership: every array a plan holds is read-only (``setflags(write=False)``), so a result that shares one (the
analysis's ``flops``, ``bytes``, ``intensity``, ...) cannot be changed in place by its holder and corrupt a later pass;
a plan never holds a (L, D) result. Frozen inputs only: a table and device arrays are never changed after they are
built (the project's rule), which is what makes keying by the object sound.

:func:`cached_device_arrays` keeps :func:`.device_arrays.device_arrays` of a device list (the same ``Device`` objects,
precision and formats) for the callers that pass devices rather than arrays (``evaluate(model, [device])``): building
them is a Python loop over the devices and their memory levels.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from explorer.core.hardware.device import Device
from explorer.core.workload.model import LayerTable

from ..formats import TensorFormats
from .calibrated import CurveArrays, calibration_status, device_curves
from .device_arrays import DeviceArrays, device_arrays
from .flash import FUSED_KINDS
from .tensor_bytes import TensorBytes, formats_of, resident_bytes, tensor_bytes

REGIME_EDGES = np.array([2.0, 20.0, 200.0])  # the chapter's Table 14 (evaluate.REGIME_EDGES is this array)
_LOCK = threading.Lock()


def _frozen(*arrays: np.ndarray) -> None:
    for a in arrays:
        if isinstance(a, np.ndarray):
            a.setflags(write=False)


@dataclass(frozen=True, eq=False)
class RowSummary:
    """What only a whole analysis needs of the rows (not the sweep's or the generate task's time and energy)."""

    intensity: np.ndarray
    regime: np.ndarray
    flops_total: float
    bytes_total: float
    device_conversions_total: np.ndarray  # (1,) or (D,)
    weight_bytes: float
    kv_cache_bytes: float
    activation_peak_bytes: float


@dataclass(frozen=True, eq=False)
class RowPlan:
    """Per row (L,), under one set of tensor formats and fallback precisions: the bytes and FLOPs; their sums and the
    footprint in :meth:`summary`, made on first use."""

    tb: TensorBytes
    fm: TensorFormats
    flops: np.ndarray  # FLOPs per instance, conversions included
    nbytes: np.ndarray  # weights + activations + KV cache read
    F: np.ndarray  # (L, 1) or (L, D): FLOPs with the device-side conversions
    mac_equivalent: np.ndarray  # (L, 1) or (L, D): MACs + half the other FLOPs (the compute energy's work)
    bpe4: np.ndarray  # (2, 1, G, 1) bytes per element of the GEMM rows' left operand (activations), right operand
    nbytes_g: np.ndarray  # (1, G, 1) the GEMM rows' bytes (the traffic their re-reads are added to)
    nbytes_finite: bool  # every row's bytes finite
    bpe_finite: bool  # the GEMM operands' bytes per element finite
    summary_slot: list = field(default_factory=lambda: [None])

    def summary(self, table: LayerTable) -> RowSummary:
        got = self.summary_slot[0]
        if got is None:
            got = self.summary_slot[0] = _row_summary(table, self)
        return got


def _row_summary(table: LayerTable, rp: RowPlan) -> RowSummary:
    c = table.columns
    count = c["count"]
    with np.errstate(invalid="ignore", divide="ignore"):
        intensity = np.where(rp.nbytes > 0, rp.flops / rp.nbytes, np.nan)
    regime = np.searchsorted(REGIME_EDGES, np.nan_to_num(intensity, nan=0.0), side="right")
    weights, kv, act = resident_bytes(c, rp.fm)
    out = RowSummary(intensity=intensity, regime=regime, flops_total=float(np.sum(count * rp.flops)),
                     bytes_total=float(np.sum(count * rp.nbytes)),
                     device_conversions_total=np.einsum("l,ld->d", count, rp.tb.device_conversions),
                     weight_bytes=weights, kv_cache_bytes=kv, activation_peak_bytes=act)
    _frozen(intensity, regime, out.device_conversions_total)
    return out


@dataclass(frozen=True, eq=False)
class TablePlan:
    """What a pass needs of the work table alone; row plans and alignment factors are added per key on first use."""

    n_rows: int
    count: np.ndarray
    g: np.ndarray  # indices of the GEMM rows (G,)
    all_gemm: bool  # every row is a GEMM row (then t[g] is the whole array)
    m: np.ndarray  # (G, 1)
    n: np.ndarray
    k: np.ndarray
    gc: np.ndarray  # (G, 1) GEMMs per row instance
    dims4: np.ndarray  # (2, 1, G, 1): n, m (the dimension whose tiles re-read the other operand)
    sizes4: np.ndarray  # (2, 1, G, 1): m * k, k * n (the operand re-read: the left one, the right one)
    mn: np.ndarray  # (G, 1) m * n
    kinds: tuple[str, ...]
    tile_gc_by_mode: dict  # attention mode -> (1, G, 1) GEMMs whose square-tile re-reads count (made on first use)
    macs_w: np.ndarray  # (L,) MACs x count
    macs_w_sum: float
    shapes_finite: bool  # the GEMM rows' dimensions and operand sizes are finite
    rows_by_key: dict = field(default_factory=dict)
    last_rows: list = field(default_factory=lambda: [None])  # [(key, row plan)] of the last lookup
    align_by_key: dict = field(default_factory=dict)

    def rows(self, table: LayerTable, dev: DeviceArrays, dp: DevicePlan) -> RowPlan:
        """The row plan under ``dev``'s formats (and its devices' fallback precisions, which add conversions)."""
        key = dp.row_key
        last = self.last_rows[0]  # one read of one tuple: consistent even with another thread writing
        if last is not None and last[0] is key:  # the same device plan's key object as the last pass (held here: never reused)
            return last[1]
        got = self.rows_by_key.get(key)
        if got is None:
            got = _row_plan(table, dev, key[0], self)
            with _LOCK:
                got = self.rows_by_key.setdefault(key, got)
        self.last_rows[0] = (key, got)
        return got

    def tile_gc(self, attention: str) -> np.ndarray:
        """(1, G, 1) the GEMMs of each GEMM row whose square-tile re-reads count: all of them, but for the rows a fused
        attention kernel runs as one (``attention`` 'fused'), whose re-reads are the kernel's (:mod:`.flash`)."""
        got = self.tile_gc_by_mode.get("fused" if attention == "fused" else "naive")
        if got is None:
            fused = np.array([kind in FUSED_KINDS for kind in self.kinds], dtype=bool)
            got = (self.gc * ~fused[self.g][:, None])[None]
            _frozen(got)
            with _LOCK:
                got = self.tile_gc_by_mode.setdefault(attention, got)
        return got

    def align_efficiency(self, align: float) -> np.ndarray:
        """(G, 1) the tensor-core alignment factor of each GEMM row, K and N padded to ``align`` elements."""
        got = self.align_by_key.get(align)
        if got is None:
            with np.errstate(invalid="ignore", divide="ignore"):
                padded_k = np.ceil(self.k / align) * align
                padded_n = np.ceil(self.n / align) * align
                got = (self.k / padded_k) * (self.n / padded_n)
            _frozen(got)
            with _LOCK:
                self.align_by_key.setdefault(align, got)
        return got


def _operand_bpe(tb: TensorBytes, g: np.ndarray) -> np.ndarray:
    """(2, 1, G, 1) bytes per element of the GEMM rows' left operand (the activations), their right operand."""
    out = np.empty((2, len(g)))
    out[0] = tb.a_bpe
    out[1] = tb.b_bpe[g]
    return out[:, None, :, None]


def _row_plan(table: LayerTable, dev: DeviceArrays, fm: TensorFormats, tp: TablePlan) -> RowPlan:
    c = table.columns
    tb = tensor_bytes(c, dev, fm)  # fm: formats_of(dev), kept per precision (the row key's)
    flops = table.flops + tb.conversions
    nbytes = tb.weight + tb.activation + tb.kv
    other = c["other_flops"][:, None] + tb.conversions[:, None] + tb.device_conversions
    plan = RowPlan(
        tb=tb, fm=fm, flops=flops, nbytes=nbytes,
        F=flops[:, None] + tb.device_conversions, mac_equivalent=c["macs"][:, None] + 0.5 * other,
        bpe4=_operand_bpe(tb, tp.g),
        nbytes_g=nbytes[tp.g][None, :, None],
        nbytes_finite=bool(np.isfinite(nbytes).all()),
        bpe_finite=bool(np.isfinite(tb.b_bpe).all() and np.isfinite(tb.a_bpe)))
    _frozen(tb.weight, tb.activation, tb.kv, tb.conversions, tb.device_conversions, tb.b_bpe, flops, nbytes,
            plan.F, plan.mac_equivalent, plan.bpe4, plan.nbytes_g)
    return plan


def _table_plan(table: LayerTable) -> TablePlan:
    c = table.columns
    gcount = table.gemm_count
    g = np.flatnonzero(gcount > 0)
    shapes = table.gemm[g].T  # (3, G): M, N, K of the GEMM rows, in the table's dtype
    m, n, k = shapes.astype(float)[:, :, None]  # (G, 1) each
    gc = gcount[g][:, None]
    macs_w = c["macs"] * c["count"]
    dims4 = shapes[[1, 0]][:, None, :, None]  # n, m
    sizes4 = (shapes[[0, 2]] * shapes[[2, 1]])[:, None, :, None]  # m * k, k * n
    plan = TablePlan(
        n_rows=len(table), count=c["count"], g=g, all_gemm=len(g) == len(table), m=m, n=n, k=k, gc=gc,
        dims4=dims4, sizes4=sizes4, mn=m * n, kinds=table.kinds, tile_gc_by_mode={"naive": gc[None]},
        macs_w=macs_w, macs_w_sum=float(macs_w.sum()),
        shapes_finite=bool(np.isfinite(dims4).all() and np.isfinite(sizes4).all()))
    _frozen(g, m, n, k, gc, plan.dims4, plan.sizes4, plan.mn, macs_w, *plan.tile_gc_by_mode.values())
    return plan


_TABLES: weakref.WeakKeyDictionary[LayerTable, TablePlan] = weakref.WeakKeyDictionary()
_DEVICES: weakref.WeakKeyDictionary[DeviceArrays, DevicePlan] = weakref.WeakKeyDictionary()


def table_plan(table: LayerTable) -> TablePlan:
    """The table's plan, made on its first pass and kept while the table lives."""
    got = _TABLES.get(table)
    if got is None:
        got = _table_plan(table)
        with _LOCK:
            got = _TABLES.setdefault(table, got)
    return got


@dataclass(frozen=True, eq=False)
class EngineGroup:
    """The devices of one kind of matrix engine (their columns ``cols``) and what their mapping needs."""

    cols: np.ndarray
    whole: bool  # every device of the set is in this group
    params: tuple


@dataclass(frozen=True, eq=False)
class DevicePlan:
    """What a pass needs of the devices alone, as rows (1, D) or per level (V, 1, D) that broadcast against the rows."""

    n_dev: int
    n_levels: int
    peak: np.ndarray  # (1, D)
    bw: np.ndarray
    eta_c: np.ndarray
    eta_m: np.ndarray
    peak_eta_c: np.ndarray  # peak * eta_c
    ridge: np.ndarray  # peak / bw
    mac_energy: np.ndarray  # (1, D)
    tiles4: np.ndarray  # (2, V, 1, D) the tile's N, M (square, or the engine's) whose re-reads cross level j
    present: np.ndarray  # (V, 1, D) 1.0 where the device has level j
    level_energy: np.ndarray  # (V, 1, D) J/B, unknown as 0
    level_bw_eta: np.ndarray  # (V, 1, D) level bandwidth x eta_m
    systolic: EngineGroup | None
    tensor_core: EngineGroup | None
    curves: tuple[CurveArrays, CurveArrays]
    calibrated_any: bool
    status: tuple[str, ...]
    row_key: tuple  # (the tensors' formats, the devices' compute precisions): what a row plan depends on
    tiles_ok: bool  # every tile >= 1 or infinite: a GEMM's re-reads are finite
    every_device_timed: bool  # each device has a level with a known, positive bandwidth


_BLOCK_SCALES = np.array([[1.0], [0.5]])  # a tensor-core device's thread-block tile, and its half


def _unknown_as_zero(x: np.ndarray) -> np.ndarray:
    """``np.nan_to_num(x, nan=0.0)`` (a copy, NaN as 0), in two calls where nothing is infinite (its own pass makes
    ten)."""
    if np.isinf(x).any():
        return np.nan_to_num(x, nan=0.0)
    return np.where(np.isnan(x), 0.0, x)


#: TensorFormats.of(precision) by precision: constant (made from the format tables), the tensors' formats of an
#: analysis given by its precision alone (a cold plan parsed the precision into three formats each time)
_UNIFORM: dict[str, TensorFormats] = {}


def _formats_of(dev: DeviceArrays) -> TensorFormats:
    """:func:`.tensor_bytes.formats_of`, the formats of a precision alone made once per precision."""
    if dev.formats is not None:
        return dev.formats
    got = _UNIFORM.get(dev.precision)
    if got is None:
        got = _UNIFORM[dev.precision] = formats_of(dev)
    return got


def _no_curves(n_dev: int) -> tuple[CurveArrays, CurveArrays]:
    """:func:`.calibrated.device_curves` where no device has a calibration: every curve NaN (six arrays of their
    own, as it makes them)."""
    nan = np.full(n_dev, np.nan)
    return (CurveArrays(nan, nan.copy(), nan.copy()), CurveArrays(nan.copy(), nan.copy(), nan.copy()))


def _device_plan(dev: DeviceArrays) -> DevicePlan:
    """The device arrays' plan (:func:`device_plan` calls it with NaN and division warnings silenced)."""
    n_dev, n_levels = len(dev), dev.level_bw.shape[1]
    bpe = dev.bytes_per_element
    present = np.arange(n_levels) < np.array([len(names) for names in dev.level_names], dtype=int)[:, None]
    is_sa, is_tc = dev.engine == 1, dev.engine == 2  # systolic array, tensor core
    engine_m = np.where(is_sa, dev.rows, np.where(is_tc, dev.block_m, np.inf))
    engine_n = np.where(is_sa, dev.cols, np.where(is_tc, dev.block_n, np.inf))
    # every level at once: the square tile of the next inner level's capacity; where unknown, the off-chip level
    # (feeding the first on-chip one, capacity unknown) reuses ideally, the others feed the matrix engine's tile
    square = np.maximum(np.floor(np.sqrt(dev.level_tile / (3.0 * bpe))), 1.0)
    known = np.isfinite(square)
    fill = np.empty((2, n_dev, n_levels))
    fill[0], fill[1] = engine_m[:, None], engine_n[:, None]
    fill[:, :, :1] = np.inf
    tiles = np.where(known, square, fill)  # (2, D, V): the tile's M, N
    level_bw_eta = dev.level_bw * dev.eta_m[:, None]
    groups = []
    for code, members in ((1, is_sa), (2, is_tc)):
        cols = np.flatnonzero(members)
        if not len(cols):
            groups.append(None)
            continue
        if code == 1:
            df = dev.dataflow[cols]
            params = (df == "os", df == "is", dev.rows[cols], dev.cols[cols], dev.rows[cols] * dev.cols[cols],
                      dev.units[cols])
        else:  # both block tiles (the device's and its half) side by side: (2 x D_tc,)
            # M and N at once: (2 [M, N], 2 [the tile, its half], D_tc), each side ravelled as (2 x D_tc,)
            bmn = np.maximum(np.floor(np.stack((dev.block_m[cols], dev.block_n[cols]))[:, None, :] * _BLOCK_SCALES),
                             1).reshape(2, -1)
            sm = dev.sm_count[cols]
            params = (bmn[0], bmn[1], np.concatenate((sm, sm)), max(1.0, 16.0 / bpe))
        _frozen(cols, *params)
        groups.append(EngineGroup(cols=cols, whole=len(cols) == n_dev, params=params))
    uncalibrated = all(d.calibration is None for d in dev.devices)
    curves = _no_curves(n_dev) if uncalibrated else device_curves(dev)
    plan = DevicePlan(
        n_dev=n_dev, n_levels=n_levels, peak=dev.peak[None, :], bw=dev.bandwidth[None, :],
        eta_c=dev.eta_c[None, :], eta_m=dev.eta_m[None, :], peak_eta_c=(dev.peak * dev.eta_c)[None, :],
        ridge=(dev.peak[None, :] / dev.bandwidth[None, :]) if n_dev else np.zeros((1, 0)),
        mac_energy=dev.mac_energy[None, :], tiles4=np.ascontiguousarray(tiles[::-1].transpose(0, 2, 1))[:, :, None, :],
        present=present.T.astype(float)[:, None, :], level_energy=_unknown_as_zero(dev.level_energy).T[:, None, :],
        level_bw_eta=level_bw_eta.T[:, None, :], systolic=groups[0], tensor_core=groups[1], curves=curves,
        calibrated_any=False if uncalibrated else bool((curves[0].present | curves[1].present).any()), status=calibration_status(dev),
        row_key=(_formats_of(dev), dev.computes, len(dev) if dev.computes else 0),
        tiles_ok=bool(((tiles >= 1) | (tiles == np.inf)).all()),
        every_device_timed=bool((present & np.isfinite(level_bw_eta) & (level_bw_eta > 0)).any(axis=1).all()))
    _frozen(plan.peak, plan.bw, plan.eta_c, plan.eta_m, plan.peak_eta_c, plan.ridge, plan.mac_energy, plan.tiles4,
            plan.present, plan.level_energy, plan.level_bw_eta)
    return plan


def device_plan(dev: DeviceArrays) -> DevicePlan:
    """The device arrays' plan, made on their first pass and kept while they live."""
    got = _DEVICES.get(dev)
    if got is None:
        with np.errstate(invalid="ignore", divide="ignore"):
            got = _device_plan(dev)
        with _LOCK:
            got = _DEVICES.setdefault(dev, got)
    return got


_ARRAYS: OrderedDict[tuple, tuple[tuple[Device, ...], DeviceArrays]] = OrderedDict()
ARRAYS_KEPT = 32


def cached_device_arrays(devices: Sequence[Device], precision: str,
                         formats: TensorFormats | None = None) -> DeviceArrays:
    """:func:`device_arrays` of these very ``Device`` objects (frozen), kept for the last :data:`ARRAYS_KEPT` sets.
    The key holds the objects themselves (compared by identity), so an id is never reused while its entry lives."""
    devices = tuple(devices)
    key = (tuple(map(id, devices)), precision, formats)
    with _LOCK:
        got = _ARRAYS.get(key)
        if got is not None and all(a is b for a, b in zip(got[0], devices)):
            _ARRAYS.move_to_end(key)
            return got[1]
    arrays = device_arrays(devices, precision, formats)
    with _LOCK:
        _ARRAYS[key] = (devices, arrays)
        while len(_ARRAYS) > ARRAYS_KEPT:
            _ARRAYS.popitem(last=False)
    return arrays


def clear() -> None:
    """Forget every plan and kept device arrays (benchmarks of a first pass; tests)."""
    with _LOCK:
        _TABLES.clear()
        _DEVICES.clear()
        _ARRAYS.clear()
