"""The one analysis pass: every layer on every device, vectorized (rows x devices), no loop over layers.

Roofline (the chapter's model, with the device's efficiency factors):
    I = FLOPs / bytes;  attainable = min(peak * eta_c, I * BW * eta_m)
    ideal_time = max(FLOPs / peak, bytes / BW)                     (pure roofline)
    time = max(FLOPs / (peak * eta_c * mapping_eff), max_level(traffic_level / (BW_level * eta_m)))
``bytes`` counts each tensor once (inputs, weights read, outputs, KV cache read): the chapter's ideal reuse.
``traffic_level`` is the hierarchical estimate: the bytes crossing each memory level, ``bytes`` plus the re-reads
a GEMM needs when its operands do not fit the next level in (square tiles sized to that level's capacity, or
the array/thread-block tile innermost); so off-chip traffic depends on whether the working set fits on chip,
and ``time >= ideal_time`` always. Energy = sum over levels of traffic x energy per byte, plus MACs x energy
per MAC (other FLOPs at half a MAC).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from explorer.core.hardware.device import Device
from explorer.core.workload.layers import Context
from explorer.core.workload.model import LayerTable, Model, build_table

from ..formats import TensorFormats
from .calibrated import calibrated_times, calibration_status
from .device_arrays import DeviceArrays, device_arrays
from .flash import kv_rereads
from .tensor_bytes import formats_of, resident_bytes, tensor_bytes
from .tiling import systolic_arrays, tensor_core_arrays

MODELS = ("ideal", "calibrated")  # the time models: the roofline with efficiency factors, and the calibrated one
REGIMES = ("very low", "low", "medium", "high")  # the chapter's Table 14: I < 2, 2-20, 20-200, > 200 FLOP/byte
REGIME_EDGES = np.array([2.0, 20.0, 200.0])
REGIME_ADVICE = {
    "high": "maximize compute utilization: tensor cores, thread-block tuning, occupancy (approach 90-95% of peak)",
    "medium": "balance: larger batches, register tiling, fuse neighbours (can move from memory- to compute-bound)",
    "low": "reduce traffic: aggressive fusion, lower precision (FP16 to INT8), algorithmic change (fusion 2-4x)",
    "very low": "eliminate round trips: mandatory fusion, in-place operation (fusion up to 10x)",
}


@dataclass(frozen=True, eq=False)
class ModelAnalysis:
    """Frozen results, SI units: FLOP, B, s, J, FLOP/s, B/s. Row arrays (L,), row x device arrays (L, D)."""

    model: Model
    table: LayerTable
    devices: DeviceArrays
    ctx: Context
    count: np.ndarray
    flops: np.ndarray
    bytes: np.ndarray
    weight_bytes: np.ndarray
    activation_bytes: np.ndarray
    intensity: np.ndarray
    regime: np.ndarray  # index into REGIMES
    attainable: np.ndarray
    compute_time: np.ndarray
    memory_time: np.ndarray
    ideal_time: np.ndarray
    time: np.ndarray
    memory_bound: np.ndarray
    mapping_efficiency: np.ndarray
    level_traffic: np.ndarray  # (L, D, V)
    level_energy: np.ndarray  # (L, D, V)
    compute_energy: np.ndarray
    energy: np.ndarray
    totals: "Totals"
    calibrated_time: np.ndarray  # (L, D) the calibrated model (.calibrated); equals ``time`` where not calibrated
    calibrated: np.ndarray  # (L, D) True where the row's kind of work has a curve on the device
    calibration_status: tuple[str, ...]  # per device (D,): what is calibrated, from which measurements

    def model_time(self, model: str = "ideal") -> np.ndarray:
        """Seconds per instance (L, D) of the ``ideal`` model (``time``) or the ``calibrated`` one."""
        if model not in MODELS:
            raise ValueError(f"model: expected one of {', '.join(MODELS)}, got {model!r}")
        return self.time if model == "ideal" else self.calibrated_time

    @property
    def precision(self) -> str:
        return self.devices.precision

    @property
    def mapping_known(self) -> np.ndarray:
        """(L, D) False for a GEMM row on a device without matrix-engine data: its mapping efficiency is unknown
        (the 1.0 in ``mapping_efficiency`` is what the time assumes, not a figure to show)."""
        return ~((self.table.gemm_count > 0)[:, None] & ~self.devices.engine_known[None, :])

    @property
    def total_mapping_known(self) -> np.ndarray:
        """(D,) whether ``totals.mapping_efficiency`` is a figure (the device gives its engine, or nothing maps)."""
        return self.devices.engine_known | ~np.any(self.table.gemm_count > 0)

    @property
    def fringe_tax(self) -> np.ndarray:
        return 1.0 - self.mapping_efficiency

    @property
    def time_share(self) -> np.ndarray:
        """Share of each row in the device's total time (L, D)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.count[:, None] * self.time / self.totals.time[None, :]

    @property
    def bound_known(self) -> np.ndarray:
        """False where the intensity or the device's ridge is unknown (L, D)."""
        return np.isfinite(self.intensity)[:, None] & np.isfinite(self.devices.ridge)[None, :]

    def bound_names(self) -> np.ndarray:
        """'memory', 'compute', or '\u2014' where unknown (L, D)."""
        return np.where(self.bound_known, np.where(self.memory_bound, "memory", "compute"), "\u2014")


@dataclass(frozen=True, eq=False)
class Totals:
    """Per device (D,): one inference (prefill), one decode step of ``batch`` tokens or one training step of
    ``batch`` sequences (train)."""

    ideal_time: np.ndarray
    time: np.ndarray
    calibrated_time: np.ndarray
    throughput: np.ndarray  # inferences/s (prefill), tokens/s (decode) or sequences/s trained (train)
    throughput_unit: str
    flops: np.ndarray
    bytes: np.ndarray
    energy: np.ndarray
    weight_bytes: float
    kv_cache_bytes: float
    activation_peak_bytes: float
    memory_bytes: float
    fits: np.ndarray
    achieved_flops: np.ndarray
    utilization: np.ndarray
    mapping_efficiency: np.ndarray  # MAC-weighted over the model
    energy_by_level: np.ndarray  # (D, V)
    compute_energy: np.ndarray


def evaluate(model_or_table, devices: Sequence[Device] | DeviceArrays, precision: str = "fp16",
             ctx: Context = Context(), model: Model | None = None,
             formats: TensorFormats | None = None) -> ModelAnalysis:
    """Analyze a model (or a prebuilt :class:`LayerTable`) on devices at a precision; ``formats``: each
    tensor's storage format (weights, activations, KV cache; :mod:`.tensor_bytes`)."""
    if isinstance(model_or_table, Model):
        model, table = model_or_table, build_table(model_or_table, ctx)
    else:
        table = model_or_table
    dev = devices if isinstance(devices, DeviceArrays) else device_arrays(devices, precision, formats)
    bpe = dev.bytes_per_element
    c = table.columns
    count = c["count"]
    tb = tensor_bytes(c, dev)  # each tensor in its own format; dequantization FLOPs
    flops = table.flops + tb.conversions
    weight_b, act_b, kv_b = tb.weight, tb.activation, tb.kv
    nbytes = weight_b + act_b + kv_b
    with np.errstate(invalid="ignore", divide="ignore"):
        intensity = np.where(nbytes > 0, flops / nbytes, np.nan)
    regime = np.searchsorted(REGIME_EDGES, np.nan_to_num(intensity, nan=0.0), side="right")

    F, B, I = flops[:, None] + tb.device_conversions, nbytes[:, None], intensity[:, None]
    peak, bw = dev.peak[None, :], dev.bandwidth[None, :]
    eta_c, eta_m = dev.eta_c[None, :], dev.eta_m[None, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        compute_time = F / peak
        memory_time = B / bw
        attainable = np.minimum(peak * eta_c, I * bw * eta_m)
        memory_bound = I < (peak / bw)
    ideal_time = np.maximum(compute_time, memory_time)

    # -- mapping efficiency of GEMM rows on each device's matrix engine (computed on the GEMM rows only)
    n_rows, n_dev = len(table), len(dev)
    g = np.flatnonzero(table.gemm_count > 0)
    m, n, k = (table.gemm[g, i][:, None] for i in range(3))
    gc = table.gemm_count[g][:, None]
    eff = np.ones((n_rows, n_dev))
    for code in (1, 2):
        cols_ = np.flatnonzero(dev.engine == code)
        if not len(cols_) or not len(g):
            continue
        if code == 1:
            e, _, _ = systolic_arrays(m, n, k, gc, dev.rows[cols_], dev.cols[cols_], dev.dataflow[cols_],
                                      dev.units[cols_], with_cycles=False)
        else:
            e = tensor_core_arrays(m, n, k, gc, dev.block_m[cols_], dev.block_n[cols_], dev.sm_count[cols_],
                                   max(1.0, 16.0 / bpe))
        eff[np.ix_(g, cols_)] = e

    # -- traffic, time and energy per memory level (one (rows, devices) slice per level)
    n_levels = dev.level_bw.shape[1]
    present = np.array([[j < len(names) for j in range(n_levels)] for names in dev.level_names], dtype=bool)
    present = present.reshape(n_dev, n_levels)
    engine_m = np.where(dev.engine == 1, dev.rows, np.where(dev.engine == 2, dev.block_m, np.inf))
    engine_n = np.where(dev.engine == 1, dev.cols, np.where(dev.engine == 2, dev.block_n, np.inf))
    traffic_levels, energy_levels = [], []
    other = c["other_flops"][:, None] + tb.conversions[:, None] + tb.device_conversions
    energy = (c["macs"][:, None] + 0.5 * other) * dev.mac_energy[None, :]
    compute_energy = energy.copy()
    mem_time_eff = None
    # a fused attention kernel (ctx.attention): K/V re-read per query block instead of square-tile GEMM re-reads
    fused, flash = kv_rereads(table, dev, n_levels) if ctx.attention == "fused" else (np.zeros(n_rows, bool), None)
    tile_gc = gc * ~fused[g][:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        for j in range(n_levels):
            square = np.maximum(np.floor(np.sqrt(dev.level_tile[:, j] / (3.0 * bpe))), 1.0)
            known = np.isfinite(square)
            if j == 0:  # off-chip, feeding the first on-chip level; its capacity unknown: ideal reuse
                tile_m = tile_n = np.where(known, square, np.inf)
            else:  # the innermost on-chip level feeds the matrix engine's tile
                tile_m, tile_n = np.where(known, square, engine_m), np.where(known, square, engine_n)
            t = np.repeat(B, n_dev, axis=1)
            if len(g):
                extra = (m * k * np.maximum(np.ceil(n / tile_n[None, :]) - 1, 0) * tb.a_bpe
                         + k * n * np.maximum(np.ceil(m / tile_m[None, :]) - 1, 0) * tb.b_bpe[g][:, None])
                t[g] += np.nan_to_num(extra, nan=0.0) * tile_gc
            if flash is not None:
                t += flash[:, :, j]  # bytes: K and V at their own format (flash.kv_rereads)
            t *= present[:, j][None, :]
            e = t * np.nan_to_num(dev.level_energy[:, j], nan=0.0)[None, :]
            energy += e
            traffic_levels.append(t)
            energy_levels.append(e)
            lt = t / (dev.level_bw[:, j] * dev.eta_m)[None, :]
            mem_time_eff = lt if mem_time_eff is None else np.fmax(mem_time_eff, lt)
        if mem_time_eff is None:
            mem_time_eff = memory_time / eta_m
        else:
            mem_time_eff = np.where(np.isnan(mem_time_eff), memory_time / eta_m, mem_time_eff)
        time = np.maximum(F / (peak * eta_c * eff), mem_time_eff)
    traffic = np.stack(traffic_levels, axis=2) if traffic_levels else np.zeros((n_rows, n_dev, 0))
    level_energy = np.stack(energy_levels, axis=2) if energy_levels else np.zeros((n_rows, n_dev, 0))

    cal_time, calibrated = calibrated_times(F, nbytes, table.gemm_count > 0, eff, time, dev)
    decode = ctx.phase == "decode"
    t_total = count @ time
    f_total = float(np.sum(count * flops))
    weight_bytes, kv_cache, act_peak = resident_bytes(c, formats_of(dev))
    footprint = weight_bytes + kv_cache + act_peak
    macs_w = c["macs"] * count
    with np.errstate(invalid="ignore", divide="ignore"):
        achieved = (f_total + count @ tb.device_conversions) / t_total
        totals = Totals(
            ideal_time=count @ ideal_time,
            time=t_total,
            calibrated_time=count @ cal_time,
            throughput=ctx.batch / t_total,
            throughput_unit="tokens/s" if decode else "sequences/s" if ctx.phase == "train" else "inferences/s",
            flops=np.full(len(dev), f_total) + count @ tb.device_conversions,
            bytes=np.full(len(dev), float(np.sum(count * nbytes))),
            energy=count @ energy,
            weight_bytes=weight_bytes,
            kv_cache_bytes=kv_cache,
            activation_peak_bytes=act_peak,
            memory_bytes=footprint,
            fits=footprint <= dev.capacity,
            achieved_flops=achieved,
            utilization=achieved / dev.peak,
            mapping_efficiency=(macs_w @ eff / macs_w.sum()) if macs_w.sum() else np.ones(n_dev),
            energy_by_level=np.stack([count @ e for e in energy_levels], axis=1) if energy_levels
            else np.zeros((n_dev, 0)),
            compute_energy=count @ compute_energy,
        )
    return ModelAnalysis(
        model=model, table=table, devices=dev, ctx=ctx, count=count, flops=flops, bytes=nbytes,
        weight_bytes=weight_b, activation_bytes=act_b, intensity=intensity, regime=regime, attainable=attainable,
        compute_time=compute_time, memory_time=memory_time, ideal_time=ideal_time, time=time,
        memory_bound=memory_bound, mapping_efficiency=eff, level_traffic=traffic, level_energy=level_energy,
        compute_energy=compute_energy, energy=energy, totals=totals, calibrated_time=cal_time,
        calibrated=calibrated, calibration_status=calibration_status(dev),
    )
