"""The catalog's table rows and filters: frozen values without the database (issue 22: the main window builds its
catalog tables from this module before SQLAlchemy is imported; ``query`` and ``system_repository`` fill them)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType

from explorer.core.hardware.device import KINDS, TIERS
from explorer.core.hardware.system import SYSTEM_KINDS
from explorer.core.precision import PRECISIONS, check_precision

ID_LENGTH = 120  # longest device or system id the schema stores
NAN = float("nan")
PRECISION_INDEX = {p: i for i, p in enumerate(PRECISIONS)}
ORIGINS = ("shipped", "user")


def origin_label(origin: str, overridden: bool) -> str:
    """How a device's origin is shown, the same in the command line, the catalog table and its detail pane:
    ``user``, ``shipped`` or ``shipped (edited)`` (a shipped device whose user edits win over the shipped values)."""
    return origin + (" (edited)" if origin == "shipped" and overridden else "")


@dataclass(frozen=True)
class DeviceRow:
    """One line of the device table. Figures in SI units (FLOP/s, B/s, bytes, W, USD, USD/s); NaN = unknown.

    Peaks are kept as tuples aligned with ``PRECISIONS`` (None where the device gives no figure), which keeps
    building thousands of rows cheap; ``peak_at`` and the ``peak`` / ``peak_sparse`` mappings read them.
    """

    id: str
    name: str
    vendor: str
    kind: str
    tier: str | None
    family: str | None
    year: int | None
    dense_peaks: tuple[float | None, ...]  # per PRECISIONS: dense peak, FLOP/s (OP/s for integers)
    sparse_peaks: tuple[float | None, ...]  # per PRECISIONS: 2:4 structured-sparsity peak
    bandwidth: float  # main memory, B/s
    capacity: float  # off-chip memory, bytes
    tdp: float  # W
    price: float  # list price, USD
    cloud_price: float  # on-demand price per device, USD/s
    origin: str  # shipped | user
    overridden: bool  # a shipped device with user edits that win over the shipped values
    version: int

    @property
    def origin_label(self) -> str:
        return origin_label(self.origin, self.overridden)

    def peak_at(self, precision: str, sparse: bool = False) -> float:
        value = (self.sparse_peaks if sparse else self.dense_peaks)[PRECISION_INDEX[precision]]
        return NAN if value is None else value

    @cached_property
    def peak(self) -> Mapping[str, float]:
        return MappingProxyType({p: v for p, v in zip(PRECISIONS, self.dense_peaks) if v is not None})

    @cached_property
    def peak_sparse(self) -> Mapping[str, float]:
        return MappingProxyType({p: v for p, v in zip(PRECISIONS, self.sparse_peaks) if v is not None})

    @property
    def precisions(self) -> tuple[str, ...]:
        return tuple(p for p, v in zip(PRECISIONS, self.dense_peaks) if v is not None)


@dataclass(frozen=True)
class DeviceFilter:
    """Search and filters for :meth:`CatalogRepository.rows`; numbers in SI units, ``None`` = no bound.

    ``min_peak`` applies to the dense peak at ``precision`` when one is given, else to any precision.
    A bound on a figure excludes devices whose figure is unknown.
    """

    text: str = ""  # case-insensitive substring of id, name, vendor or family
    vendors: tuple[str, ...] = ()  # exact vendor names (case-insensitive), any of
    kinds: tuple[str, ...] = ()
    tiers: tuple[str, ...] = ()
    precision: str | None = None  # the device has a dense peak at this precision
    min_peak: float | None = None  # FLOP/s
    min_bandwidth: float | None = None  # B/s
    min_capacity: float | None = None  # bytes
    min_price: float | None = None  # USD
    max_price: float | None = None  # USD
    max_cloud_price: float | None = None  # USD/s
    origin: str | None = None  # shipped | user
    ids: tuple[str, ...] = field(default=())  # restrict to these ids

    def __post_init__(self):
        for name, options in (("kinds", KINDS), ("tiers", TIERS)):
            for value in getattr(self, name):
                if value not in options:
                    raise ValueError(f"{name}: '{value}' is not one of {', '.join(options)}")
        if self.precision is not None:
            object.__setattr__(self, "precision", check_precision(self.precision, "precision"))
        if self.origin is not None and self.origin not in ORIGINS:
            raise ValueError(f"origin: '{self.origin}' is not one of {', '.join(ORIGINS)}")
        for name in (
            "min_peak",
            "min_bandwidth",
            "min_capacity",
            "min_price",
            "max_price",
            "max_cloud_price",
        ):
            value = getattr(self, name)
            if value is not None and (
                not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0
            ):
                raise ValueError(f"{name}: expected a finite number >= 0 in SI units, got {value!r}")
        if self.min_price is not None and self.max_price is not None and self.min_price > self.max_price:
            raise ValueError(f"price range: minimum {self.min_price} is above maximum {self.max_price}")


@dataclass(frozen=True)
class SystemFilter:
    """Search and filters of the system table: ``text`` in id, name, vendor or device id; empty means any."""

    text: str = ""
    vendors: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    origin: str | None = None
    device: str | None = None  # systems made of this device id

    def __post_init__(self):
        bad = [k for k in self.kinds if k not in SYSTEM_KINDS]
        if bad:
            raise ValueError(f"kind: unknown system kind '{bad[0]}'; expected one of {', '.join(SYSTEM_KINDS)}")
        if self.origin is not None and self.origin not in ORIGINS:
            raise ValueError(f"origin: expected shipped or user, got '{self.origin}'")


@dataclass(frozen=True)
class SystemRow:
    """One line of the system table; bandwidths in B/s per device and direction, NaN when unknown or absent."""

    id: str
    name: str
    vendor: str
    kind: str
    device_id: str
    devices: int
    node_devices: int
    scale_up_bandwidth: float
    scale_out_bandwidth: float
    host_bandwidth: float
    origin: str
    overridden: bool
    version: int
