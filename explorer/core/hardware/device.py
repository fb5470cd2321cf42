"""The device description: frozen dataclasses with every figure in SI units plus its cited source.

Device files (YAML/JSON, ``docs/device-file.md``) are read and written by :mod:`explorer.core.hardware.device_file`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, is_dataclass, replace
from types import MappingProxyType
from typing import Mapping

from explorer.core.calibration.model import DeviceCalibration
from explorer.core.precision import PRECISIONS

KINDS = ("gpu", "tpu", "npu", "cpu", "mcu", "other")
TIERS = ("datacenter", "workstation", "edge", "mobile", "mcu")
ROLES = ("offchip", "onchip", "registers")
DATAFLOWS = ("ws", "os", "is")
ENGINE_TYPES = ("systolic", "tensor_core")
DIRECTIONS = ("per_direction", "bidirectional")

NAN = float("nan")


@dataclass(frozen=True)
class Source:
    key: str
    title: str
    url: str
    date: str


@dataclass(frozen=True)
class Cited:
    """One figure: ``value`` in SI units (or a count), the text as written, and the key of its source."""

    value: float
    text: str
    source: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class MemoryLevel:
    name: str
    role: str = "offchip"
    capacity: Cited | None = None
    bandwidth: Cited | None = None
    energy: Cited | None = None  # J per byte
    latency: Cited | None = None
    instances: int = 1


@dataclass(frozen=True)
class MatrixEngine:
    type: str  # systolic | tensor_core
    rows: Cited | None = None
    cols: Cited | None = None
    dataflow: str | None = None
    tile: tuple[int, int, int] | None = None  # tensor core instruction tile (m, n, k)
    units: Cited | None = None
    sm_count: Cited | None = None
    block_tile: tuple[int, int] | None = None  # thread-block tile for tile quantization


@dataclass(frozen=True)
class Link:
    name: str
    bandwidth: Cited | None = None
    direction: str = "per_direction"
    energy: Cited | None = None  # J per byte one device sends over the link (read from pJ/bit; system files only)

    @property
    def energy_per_byte(self) -> float:
        """J per byte sent over the link (what the cited figure covers is in its note); NaN when unknown."""
        return self.energy.value if self.energy is not None else NAN

    @property
    def per_direction_bandwidth(self) -> float:
        """Bandwidth of one direction in B/s; a bidirectional total is halved (stated, not hidden)."""
        if self.bandwidth is None:
            return NAN
        return self.bandwidth.value / 2 if self.direction == "bidirectional" else self.bandwidth.value


@dataclass(frozen=True)
class Conflict:
    field: str
    note: str


def _frozen(mapping: Mapping | None) -> Mapping:
    return MappingProxyType(dict(mapping or {}))


def _same(a, b) -> bool:
    """Equality through the dataclasses, tuples and mappings of a device, with NaN equal to NaN.

    Mappings compare as mappings (their order is not part of the value).
    """
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if is_dataclass(a) and not isinstance(a, type):
        return type(a) is type(b) and all(_same(getattr(a, f.name), getattr(b, f.name)) for f in fields(a))
    if isinstance(a, Mapping):
        return isinstance(b, Mapping) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(map(_same, a, b))
    return a == b


@dataclass(frozen=True, eq=False)
class Device:
    id: str
    name: str
    vendor: str
    kind: str
    tier: str | None = None
    family: str | None = None
    year: int | None = None
    sources: Mapping[str, Source] = field(default_factory=dict)
    peak: Mapping[str, Cited] = field(default_factory=dict)  # dense, FLOP/s (or OP/s)
    peak_sparse: Mapping[str, Cited] = field(default_factory=dict)
    memory: tuple[MemoryLevel, ...] = ()
    energy_per_mac: Mapping[str, Cited] = field(default_factory=dict)  # J per MAC
    matrix_engine: MatrixEngine | None = None
    clock: Cited | None = None
    tdp: Cited | None = None
    price: Cited | None = None
    price_date: str | None = None
    cloud_price: Cited | None = None  # USD per second
    host_link: Link | None = None
    interconnects: tuple[Link, ...] = ()
    efficiency_compute: float = 1.0
    efficiency_memory: float = 1.0
    notes: str = ""
    conflicts: tuple[Conflict, ...] = ()
    calibration: DeviceCalibration | None = None  # measured efficiency curves (``calibration:``); None: ideal only
    origin: str = "user"  # shipped | user (set by the catalog, not by the file)

    def __post_init__(self):
        for name in ("sources", "peak", "peak_sparse", "energy_per_mac"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))

    # -- identity: devices are equal when their ids and contents are equal (hashed by id alone)
    def __eq__(self, other):
        if not isinstance(other, Device):
            return NotImplemented
        return all(_same(getattr(self, f.name), getattr(other, f.name)) for f in fields(Device))

    def __hash__(self):
        return hash(self.id)

    # -- derived figures used by the analyses (SI floats; NaN when unknown)
    def peak_flops(self, precision: str, sparse: bool = False) -> float:
        table = self.peak_sparse if sparse else self.peak
        c = table.get(precision)
        return c.value if c is not None else NAN

    @property
    def precisions(self) -> tuple[str, ...]:
        return tuple(p for p in PRECISIONS if p in self.peak)

    @property
    def offchip(self) -> MemoryLevel | None:
        for level in self.memory:
            if level.role == "offchip":
                return level
        return None

    @property
    def bandwidth(self) -> float:
        """Main memory bandwidth (B/s): the first off-chip level with a bandwidth, else the first level."""
        for level in self.memory:
            if level.role == "offchip" and level.bandwidth is not None:
                return level.bandwidth.value
        for level in self.memory:
            if level.bandwidth is not None:
                return level.bandwidth.value
        return NAN

    @property
    def memory_capacity(self) -> float:
        level = self.offchip
        if level is not None and level.capacity is not None:
            return level.capacity.value
        return NAN

    @property
    def onchip_levels(self) -> tuple[MemoryLevel, ...]:
        return tuple(level for level in self.memory if level.role == "onchip")

    def ridge(self, precision: str) -> float:
        """Ridge point I_ridge = R_peak / BW in FLOP/byte (NaN if either figure is unknown)."""
        bw = self.bandwidth
        peak = self.peak_flops(precision)
        return peak / bw if bw and math.isfinite(bw) and bw > 0 else NAN

    def with_efficiency(self, compute: float | None = None, memory: float | None = None) -> "Device":
        return replace(
            self,
            efficiency_compute=self.efficiency_compute if compute is None else compute,
            efficiency_memory=self.efficiency_memory if memory is None else memory,
        )

    def source_of(self, cited: Cited | None) -> Source | None:
        if cited is None or cited.source is None:
            return None
        return self.sources.get(cited.source)
