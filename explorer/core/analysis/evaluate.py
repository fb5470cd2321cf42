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
from .calibrated import calibrated_times
from .device_arrays import DeviceArrays
from .kernel import SUMMED, Workspace, cross
from .kernel import time_energy as _time_energy
from .plan import REGIME_EDGES, cached_device_arrays, device_plan, table_plan  # noqa: F401 (REGIME_EDGES: public here)

MODELS = ("ideal", "calibrated")  # the time models: the roofline with efficiency factors, and the calibrated one
REGIMES = ("very low", "low", "medium", "high")  # the chapter's Table 14: I < 2, 2-20, 20-200, > 200 FLOP/byte
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
    tensor's storage format (weights, activations, KV cache; :mod:`.tensor_bytes`).

    What depends on the table alone or on the devices alone comes from their plans (:mod:`.plan`, made once per
    table and per device arrays); the rows x devices terms are computed here (:mod:`.kernel`), in fresh arrays that
    the returned analysis owns."""
    if isinstance(model_or_table, Model):
        model, table = model_or_table, build_table(model_or_table, ctx)
    else:
        table = model_or_table
    dev = devices if isinstance(devices, DeviceArrays) else cached_device_arrays(devices, precision, formats)
    tp, dp = table_plan(table), device_plan(dev)
    rp = tp.rows(table, dev, dp)
    with np.errstate(invalid="ignore", divide="ignore"):
        return _analysis(model, table, dev, ctx, tp, dp, rp, cross(table, dev, tp, dp, rp, ctx.attention))


def _filled(n: int, value: float) -> np.ndarray:
    out = np.empty(n)
    out.fill(value)
    return out


def _row_sum(weights: np.ndarray, x: np.ndarray) -> np.ndarray:
    """sum over rows of weights[l] * x[l, d] (D,): ``weights @ x`` without BLAS, whose threaded matrix-vector product
    took 23 ms for 10,000 x 50 on a loaded 2-core machine against 0.3 ms here (and sums in the same order every time)."""
    return np.einsum("l,ld->d", weights, x)


def _analysis(model, table, dev, ctx, tp, dp, rp, x: dict) -> ModelAnalysis:
    """The analysis from its cross terms ``x``: the calibrated model and the totals (under the caller's errstate)."""
    rs = rp.summary(table)
    time, eff, energy = x["time"], x["mapping_efficiency"], x["energy"]
    count = tp.count
    n_dev, n_sum = dp.n_dev, len(SUMMED)
    cal_time, block = x["calibrated_time"], x["summed"]
    if dp.calibrated_any:
        cal, calibrated = calibrated_times(rp.F, rp.nbytes, table.gemm_count > 0, eff, time, dev, curves=dp.curves)
        cal_time[...] = cal
        # every row sum in one call: ideal time, time, energy, compute energy, each level's energy, calibrated time
        sums = np.einsum("l,kld->kd", count, block)
        cal_total = sums[-1]
    else:  # no device has a curve: every row keeps the ideal model's time, and so do the sums (the same floats)
        np.copyto(cal_time, time)
        calibrated = np.zeros(time.shape, dtype=bool)
        sums = np.einsum("l,kld->kd", count, block[:-1])
        cal_total = sums[1].copy()
    ideal_total, t_total, e_total, compute_total = sums[:n_sum]
    decode = ctx.phase == "decode"
    f_total = rs.flops_total
    footprint = rs.weight_bytes + rs.kv_cache_bytes + rs.activation_peak_bytes
    achieved = (f_total + rs.device_conversions_total) / t_total
    totals = Totals(
        ideal_time=ideal_total,
        time=t_total,
        calibrated_time=cal_total,
        throughput=ctx.batch / t_total,
        throughput_unit="tokens/s" if decode else "sequences/s" if ctx.phase == "train" else "inferences/s",
        flops=f_total + rs.device_conversions_total if len(rs.device_conversions_total) == n_dev
        else np.full(n_dev, f_total) + rs.device_conversions_total,
        bytes=_filled(n_dev, rs.bytes_total),
        energy=e_total,
        weight_bytes=rs.weight_bytes,
        kv_cache_bytes=rs.kv_cache_bytes,
        activation_peak_bytes=rs.activation_peak_bytes,
        memory_bytes=footprint,
        fits=footprint <= dev.capacity,
        achieved_flops=achieved,
        utilization=achieved / dev.peak,
        mapping_efficiency=(_row_sum(tp.macs_w, eff) / tp.macs_w_sum) if tp.macs_w_sum else np.ones(n_dev),
        energy_by_level=sums[n_sum:n_sum + dp.n_levels].T,
        compute_energy=compute_total,
    )
    return ModelAnalysis(
        model=model, table=table, devices=dev, ctx=ctx, count=count, flops=rp.flops, bytes=rp.nbytes,
        weight_bytes=rp.tb.weight, activation_bytes=rp.tb.activation, intensity=rs.intensity, regime=rs.regime,
        attainable=x["attainable"], compute_time=x["compute_time"], memory_time=x["memory_time"],
        ideal_time=x["ideal_time"], time=time, memory_bound=x["memory_bound"], mapping_efficiency=eff,
        level_traffic=x["level_traffic"], level_energy=x["level_energy"], compute_energy=x["compute_energy"],
        energy=energy, totals=totals, calibrated_time=cal_time, calibrated=calibrated,
        calibration_status=dp.status,
    )


def time_energy(table: LayerTable, dev: DeviceArrays, attention: str = "naive",
                workspace: Workspace | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(time, energy)`` (L, D) of :func:`evaluate` (the ideal model's seconds and the joules per instance of each
    row), the same floats, without the analysis's other fields: for callers that only sum them per context (the
    sweep, the generate task). With a ``workspace`` the two arrays are its buffers, overwritten by its next pass:
    reduce them before the next call and keep no view of them."""
    tp, dp = table_plan(table), device_plan(dev)
    return _time_energy(table, dev, tp, dp, tp.rows(table, dev, dp), attention, workspace)
