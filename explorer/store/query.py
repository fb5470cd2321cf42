"""The device table query: frozen rows (SI units) with search and filters, from bound parameters only."""

from __future__ import annotations

import gc

from sqlalchemy import func, or_, select
from sqlalchemy.engine import Connection

from explorer.core.hardware.fields import FIGURE, TEXT, WHOLE, named
from explorer.core.precision import PRECISIONS

from .rows import NAN, ORIGINS, PRECISION_INDEX, DeviceFilter, DeviceRow, origin_label
from .schema import TABLES

__all__ = ["NAN", "ORIGINS", "PRECISION_INDEX", "DeviceFilter", "DeviceRow", "origin_label", "query_rows"]


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
