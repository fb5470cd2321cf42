# ruff: noqa: B008, C408, UP035
"""The single-device pass as it was before the plan/kernel rewrite (main at 5a6f242), kept verbatim as the oracle
for tests/core/test_evaluate_fast.py: it returns its fields as dicts instead of the dataclasses."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from explorer.core.analysis.calibrated import calibrated_times, calibration_status
from explorer.core.analysis.device_arrays import DeviceArrays, device_arrays
from explorer.core.analysis.flash import kv_rereads
from explorer.core.analysis.tensor_bytes import formats_of, resident_bytes, tensor_bytes
from explorer.core.analysis.tiling import systolic_arrays, tensor_core_arrays
from explorer.core.formats import TensorFormats
from explorer.core.hardware.device import Device
from explorer.core.workload.layers import Context
from explorer.core.workload.model import Model, build_table

REGIME_EDGES = np.array([2.0, 20.0, 200.0])


def reference_evaluate(model_or_table, devices: Sequence[Device] | DeviceArrays, precision: str = "fp16",
             ctx: Context = Context(), model: Model | None = None,
             formats: TensorFormats | None = None) -> dict:
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
        totals = dict(
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
    return dict(
        model=model, table=table, devices=dev, ctx=ctx, count=count, flops=flops, bytes=nbytes,
        weight_bytes=weight_b, activation_bytes=act_b, intensity=intensity, regime=regime, attainable=attainable,
        compute_time=compute_time, memory_time=memory_time, ideal_time=ideal_time, time=time,
        memory_bound=memory_bound, mapping_efficiency=eff, level_traffic=traffic, level_energy=level_energy,
        compute_energy=compute_energy, energy=energy, totals=totals, calibrated_time=cal_time,
        calibrated=calibrated, calibration_status=calibration_status(dev),
    )
