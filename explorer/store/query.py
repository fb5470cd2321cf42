"""The device table query: frozen rows (SI units) with search and filters, from bound parameters only."""

from __future__ import annotations

import gc
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType

from sqlalchemy import func, or_, select
from sqlalchemy.engine import Connection

from explorer.core.hardware.device import KINDS, TIERS
from explorer.core.hardware.fields import FIGURE, TEXT, WHOLE, named
from explorer.core.precision import PRECISIONS, check_precision

from .schema import TABLES

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


def _conditions(f: DeviceFilter) -> list:
    d = TABLES["devices"].c
    out = []
    text = f.text.strip()
    if text:
        out.append(or_(*(col.icontains(text, autoescape=True) for col in (d.id, d.name, d.vendor, d.family))))
    if f.vendors:
        out.append(func.lower(d.vendor).in_([v.lower() for v in f.vendors]))
    if f.kinds:
        out.append(d.kind.in_(f.kinds))
    if f.tiers:
        out.append(d.tier.in_(f.tiers))
    if f.precision is not None:  # a column picked from the schema by a checked precision name
        column = d[f"peak_{f.precision}"]
        out.append(column.is_not(None) if f.min_peak is None else column >= f.min_peak)
    elif f.min_peak is not None:
        out.append(or_(*(d[f"peak_{q}"] >= f.min_peak for q in PRECISIONS)))
    for column, low in ((d.bandwidth, f.min_bandwidth), (d.capacity, f.min_capacity), (d.price, f.min_price)):
        if low is not None:
            out.append(column >= low)
    for column, high in ((d.price, f.max_price), (d.cloud_price, f.max_cloud_price)):
        if high is not None:
            out.append(column <= high)
    if f.origin is not None:
        out.append(d.origin == f.origin)
    if f.ids:
        out.append(d.id.in_(f.ids))
    return out


#: The ``devices`` columns of the table in ``DeviceRow`` order: the listed plain fields, then the SI values of
#: the derived main-memory figures and of the listed cited figures (None -> NaN), then the origin.
_PLAIN = named(TEXT, WHOLE, listed=True)
_FIGURES = ("bandwidth", "capacity") + named(FIGURE, listed=True)
_COLUMNS = _PLAIN + _FIGURES + ("origin",)


def query_rows(conn: Connection, f: DeviceFilter) -> tuple[DeviceRow, ...]:
    """The rows matching ``f``, ordered by vendor, name and id (case-insensitive)."""
    d = TABLES["devices"].c
    statement = select(
        *(d[name] for name in _COLUMNS),
        func.json_array_length(d.overrides) > 0,
        d.version,
        *(d[f"peak_{p}"] for p in PRECISIONS),
        *(d[f"peak_sparse_{p}"] for p in PRECISIONS),
    ).where(*_conditions(f))
    # Building thousands of rows allocates many small objects and none of them form reference cycles, so
    # the cyclic garbage collector is paused meanwhile: its full passes would otherwise add tens of ms.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _build_rows(conn.execute(statement).all())
    finally:
        if collecting:
            gc.enable()


def _build_rows(result: list) -> tuple[DeviceRow, ...]:
    # Sorted here rather than by the database: the same order on every backend and collation, and SQLite
    # does not walk an index row by row to avoid a sort.
    result.sort(key=lambda r: (r[2].casefold(), r[1].casefold(), r[0]))
    plain, figures = slice(len(_PLAIN)), slice(len(_PLAIN), len(_PLAIN) + len(_FIGURES))
    origin = figures.stop
    dense = slice(origin + 3, origin + 3 + len(PRECISIONS))
    sparse = slice(dense.stop, None)
    return tuple(
        DeviceRow(
            *r[plain],
            tuple(r[dense]),
            tuple(r[sparse]),
            *[NAN if x is None else x for x in r[figures]],
            r[origin],
            bool(r[origin + 1]),
            r[origin + 2],
        )
        for r in result
    )
