"""Devices as columns of numpy arrays at one precision, so analyses broadcast over layers x devices.

Missing figures are NaN and propagate: an unknown bandwidth gives an unknown memory time, never a guess.
Defaults that *are* applied (Horowitz energies, the default thread-block tile) are named in ``defaults_used``.

With per-tensor ``formats`` (weights, activations, KV cache stored differently), the precision is the one the
formats compute at, and a device without a peak there computes at the nearest wider precision it has
(:data:`explorer.core.formats.FALLBACK`: MXFP4 on an H100 at FP8), said in ``precision_notes``. A precision
alone keeps the old rule (no peak, no compute time: NaN) but for the 16-bit floats: fp16 on a device that lists
only bf16 (TPUs) computes at bf16, and the reverse (:data:`explorer.core.precision.SAME_WIDTH`), said the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from explorer.core.hardware.device import Device

from ..formats import TensorFormats, fallback_precision
from ..precision import BYTES_PER_ELEMENT, SAME_WIDTH, check_precision

HOROWITZ = "Horowitz, 'Computing's energy problem', ISSCC 2014 (45 nm)"
#: Energy per MAC (multiply + add), J. TF32 uses FP32; FP8/FP6/INT4/FP4 use INT8 as a proxy (Horowitz has none).
DEFAULT_MAC_ENERGY = {"fp32": 4.6e-12, "tf32": 4.6e-12, "fp16": 1.5e-12, "bf16": 1.5e-12, "int8": 0.23e-12,
                      "fp8": 0.23e-12, "fp6": 0.23e-12, "int4": 0.23e-12, "fp4": 0.23e-12}
DRAM_ENERGY_PER_BYTE = 160e-12  # 640 pJ per 32-bit access (the chapter's constant) = 160 pJ/B
_SRAM_POINTS = (np.log([8e3, 32e3, 1e6]), np.array([1.25e-12, 2.5e-12, 12.5e-12]))  # 10/20/100 pJ per 64 bit


def default_sram_energy(capacity_bytes: float) -> float:
    """Horowitz SRAM read energy per byte, log-interpolated on the array size (clamped at 8 KB and 1 MB);
    the 32 KB figure when the size is unknown."""
    xs, ys = _SRAM_POINTS
    if not (math.isfinite(capacity_bytes) and capacity_bytes > 0):
        return float(ys[1])
    x = math.log(capacity_bytes)
    if x <= xs[0]:
        return float(ys[0])
    for i in range(1, len(xs)):
        if x <= xs[i]:
            f = (x - xs[i - 1]) / (xs[i] - xs[i - 1])
            return float(ys[i - 1] + f * (ys[i] - ys[i - 1]))
    return float(ys[-1])


#: what ``defaults_used`` says of a device whose file gives no matrix engine (issue 24: the H200's 1.00 against the
#: H100's 0.27 on the same silicon was a missing figure looking like an advantage)
NO_ENGINE = "matrix engine unknown (mapping efficiency unknown: GEMMs taken as filling it, an upper bound)"


@dataclass(frozen=True, eq=False)
class DeviceArrays:
    devices: tuple[Device, ...]
    precision: str
    bytes_per_element: float
    peak: np.ndarray  # (D,) FLOP/s, dense
    bandwidth: np.ndarray  # (D,) B/s main memory
    eta_c: np.ndarray
    eta_m: np.ndarray
    capacity: np.ndarray  # (D,) main memory bytes
    mac_energy: np.ndarray  # (D,) J/MAC
    # memory levels, padded to the deepest device: (D, V); NaN where a device has no such level
    level_names: tuple[tuple[str, ...], ...]
    level_bw: np.ndarray
    level_energy: np.ndarray
    level_tile: np.ndarray  # capacity of one instance of the *next inner* level, bytes (for re-read estimates)
    # matrix engine
    engine: np.ndarray  # (D,) 0 none, 1 systolic, 2 tensor core
    rows: np.ndarray
    cols: np.ndarray
    dataflow: np.ndarray  # (D,) 'ws' / 'os' / 'is'
    units: np.ndarray
    block_m: np.ndarray
    block_n: np.ndarray
    sm_count: np.ndarray
    price: np.ndarray
    cloud_price: np.ndarray  # USD/s
    tdp: np.ndarray
    defaults_used: tuple[tuple[str, ...], ...] = field(default=())
    formats: TensorFormats | None = None  # per-tensor formats (None: every tensor at ``precision``)
    computes: tuple[str, ...] = ()  # per device, the precision its peak is taken at (empty: ``precision``)
    precision_notes: tuple[str, ...] = ()  # per device, why it computes elsewhere ('' when it does not)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(d.id for d in self.devices)

    def compute_of(self, j: int) -> str:
        """The precision device ``j`` computes at (``precision`` unless it had to fall back)."""
        return self.computes[j] if self.computes else self.precision

    @property
    def engine_known(self) -> np.ndarray:
        """(D,) whether the device gives its matrix engine: without one its GEMMs' mapping efficiency is unknown
        (the time takes them as filling the engine, which is no measured 1.00, see :data:`NO_ENGINE`)."""
        return self.engine != 0

    @property
    def ridge(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.peak / self.bandwidth

    def __len__(self) -> int:
        return len(self.devices)


def _v(c) -> float:
    return c.value if c is not None else np.nan


def _fallbacks(devices: tuple[Device, ...], formats: TensorFormats) -> tuple[tuple[str, ...], ...]:
    """Per device: the precision it computes ``formats`` at; a note where it is not ``formats.compute``."""
    want, used, notes = formats.compute, [], []
    for d in devices:
        have = [p for p in d.precisions if d.peak[p].value > 0]
        got = fallback_precision(want, have)
        used.append(got or want)
        if got is None:
            notes.append(f"{d.name} has no {want} peak nor a wider one in the catalog: no compute time")
        elif got != want:
            conv = " and ".join(t.replace("_", " ") for t in formats.converted(got))
            notes.append(f"{d.name} has no {want} peak: computes at {got}, the nearest wider precision it "
                         f"has ({conv} converted to {got}, 1 FLOP per element)")
        else:
            notes.append("")
    return tuple(used), tuple(notes)


def _same_width(devices: tuple[Device, ...], precision: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A plain 16-bit float precision: each device without a peak there but with one at the other 16-bit float
    computes at that one (:data:`SAME_WIDTH`), with a note; () when every device has the precision."""
    other = SAME_WIDTH.get(precision)
    swap = [other is not None and precision not in d.peak and other in d.peak for d in devices]
    if not any(swap):
        return (), ()
    return (tuple(other if s else precision for s in swap),
            tuple(f"{d.name} has no {precision} peak: computes at {other}, the other 16-bit float (same 2 bytes "
                  "per element)" if s else "" for d, s in zip(devices, swap)))


def device_arrays(devices: Sequence[Device], precision: str,
                  formats: TensorFormats | None = None) -> DeviceArrays:
    """``devices`` at ``precision``; with ``formats`` (not all at the precision), at the precision the formats
    compute at, each device falling back to the nearest wider precision it has a peak for."""
    precision = check_precision(precision)
    devices = tuple(devices)
    if formats is not None and formats.uniform and formats.precision == precision:
        formats = None  # every tensor at the precision: exactly the analysis of the precision alone
    computes, notes = _same_width(devices, precision)
    if formats is not None:
        precision = formats.compute
        computes, notes = _fallbacks(devices, formats)
    n = len(devices)
    depth = max((len([lv for lv in d.memory if lv.role != "registers"]) for d in devices), default=0)
    level_bw = np.full((n, depth), np.nan)
    level_energy = np.full((n, depth), np.nan)
    level_tile = np.full((n, depth), np.nan)
    names, defaults = [], []
    mac = np.full(n, np.nan)
    engine = np.zeros(n)
    rows, cols, units = np.full(n, np.nan), np.full(n, np.nan), np.ones(n)
    dataflow = np.array(["ws"] * n, dtype="<U2")
    block_m, block_n, sms = np.full(n, 128.0), np.full(n, 128.0), np.ones(n)
    for i, d in enumerate(devices):
        used = []
        levels = [lv for lv in d.memory if lv.role != "registers"]
        names.append(tuple(lv.name for lv in levels))
        tiles = [_v(lv.capacity) for lv in levels]  # capacity of one instance, as device files state it
        for j, lv in enumerate(levels):
            level_bw[i, j] = _v(lv.bandwidth)
            if lv.energy is not None:
                level_energy[i, j] = lv.energy.value
            elif lv.role == "offchip":
                level_energy[i, j] = DRAM_ENERGY_PER_BYTE
                used.append(f"{lv.name} energy")
            else:
                level_energy[i, j] = default_sram_energy(tiles[j])
                used.append(f"{lv.name} energy")
            level_tile[i, j] = tiles[j + 1] if j + 1 < len(levels) else np.nan
        at = computes[i] if computes else precision
        e = d.energy_per_mac.get(at)
        if e is not None:
            mac[i] = e.value
        elif at in DEFAULT_MAC_ENERGY:
            mac[i] = DEFAULT_MAC_ENERGY[at]
            used.append("MAC energy")
        eng = d.matrix_engine
        if eng is not None and eng.type == "systolic" and eng.rows and eng.cols:
            engine[i], rows[i], cols[i] = 1, eng.rows.value, eng.cols.value
            dataflow[i] = eng.dataflow or "ws"
            units[i] = _v(eng.units) if eng.units else 1
        elif eng is not None and eng.type == "tensor_core":
            engine[i] = 2
            if eng.block_tile:
                block_m[i], block_n[i] = eng.block_tile
            else:
                used.append("thread-block tile 128x128")
            sms[i] = _v(eng.sm_count) if eng.sm_count else (_v(eng.units) if eng.units else 1)
        else:
            used.append(NO_ENGINE)
        defaults.append(tuple(used))
    arrays = dict(
        peak=np.array([d.peak_flops(computes[i] if computes else precision) for i, d in enumerate(devices)]),
        bandwidth=np.array([d.bandwidth for d in devices]),
        eta_c=np.array([d.efficiency_compute for d in devices]),
        eta_m=np.array([d.efficiency_memory for d in devices]),
        capacity=np.array([d.memory_capacity for d in devices]),
        price=np.array([_v(d.price) for d in devices]),
        cloud_price=np.array([_v(d.cloud_price) for d in devices]),
        tdp=np.array([_v(d.tdp) for d in devices]),
    )
    return DeviceArrays(
        devices=devices, precision=precision, bytes_per_element=BYTES_PER_ELEMENT[precision],
        mac_energy=mac, level_names=tuple(names), level_bw=level_bw,
        level_energy=level_energy, level_tile=level_tile, engine=engine, rows=rows, cols=cols, dataflow=dataflow,
        units=units, block_m=block_m, block_n=block_n, sm_count=sms, defaults_used=tuple(defaults), **arrays,
        formats=formats, computes=computes, precision_notes=notes,
    )
