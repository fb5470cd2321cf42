"""The catalog schema (SQLAlchemy 2.0 typed ORM). Migrations in ``migrations/versions`` create exactly this.

Every cited figure is stored as four columns: the value in SI units (for queries), the text as written
(``"2039 GB/s"``), the key of its source and an optional note, so that a device read back from the
database is identical to the one written (``device_to_dict`` round-trips exactly).

``devices`` also carries copies of a few derived SI figures (main-memory bandwidth and capacity, the
peak per precision) so that the device table is a single query; they are rewritten with the device.

Re-seeding state lives on ``devices``: ``shipped_json`` is the shipped version of the device as last
seeded (``device_to_dict`` form) with its ``shipped_hash``, and ``overrides`` lists the fields the user
changed (``"price"``, ``"peak.fp16"``, ``"memory"``...); those keep the user's value when a newer
release re-seeds. ``version`` is the optimistic-locking counter: every save requires the version it
read and increments it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from sqlalchemy import JSON, Boolean, DateTime, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from .rows import ID_LENGTH

Value = Annotated[float | None, mapped_column(Float)]
OptText = Annotated[str | None, mapped_column(Text)]
DeviceFK = Annotated[
    str, mapped_column(String(ID_LENGTH), ForeignKey("devices.id", ondelete="CASCADE"), primary_key=True)
]
Position = Annotated[int, mapped_column(Integer, primary_key=True)]


class Base(DeclarativeBase):
    pass


class CatalogMeta(Base):
    """Key/value facts about the database, e.g. the fingerprint of the shipped catalog last seeded."""

    __tablename__ = "catalog_meta"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class DeviceRecord(Base):
    __tablename__ = "devices"

    id: Mapped[str] = mapped_column(String(ID_LENGTH), primary_key=True)
    name: Mapped[str] = mapped_column(Text)
    vendor: Mapped[str] = mapped_column(Text, index=True)
    kind: Mapped[str] = mapped_column(String(16), index=True)
    tier: Mapped[str | None] = mapped_column(String(16), index=True)
    family: Mapped[OptText]
    year: Mapped[int | None] = mapped_column(Integer)

    clock: Mapped[Value]  # Hz
    clock_text: Mapped[OptText]
    clock_source: Mapped[OptText]
    clock_note: Mapped[OptText]
    tdp: Mapped[Value] = mapped_column(index=True)  # W
    tdp_text: Mapped[OptText]
    tdp_source: Mapped[OptText]
    tdp_note: Mapped[OptText]
    price: Mapped[Value] = mapped_column(index=True)  # USD, list price
    price_text: Mapped[OptText]
    price_source: Mapped[OptText]
    price_note: Mapped[OptText]
    price_date: Mapped[OptText]
    cloud_price: Mapped[Value]  # USD/s, on-demand cloud price per device
    cloud_price_text: Mapped[OptText]
    cloud_price_source: Mapped[OptText]
    cloud_price_note: Mapped[OptText]

    efficiency_compute: Mapped[float] = mapped_column(Float, default=1.0)
    efficiency_memory: Mapped[float] = mapped_column(Float, default=1.0)
    notes: Mapped[str] = mapped_column(Text, default="")

    # Derived when written, so that the device table is one query without joins (NULL when unknown):
    bandwidth: Mapped[Value] = mapped_column(index=True)  # B/s, main memory
    capacity: Mapped[Value] = mapped_column(index=True)  # bytes, off-chip memory
    # copies of the SI values in ``peaks`` (FLOP/s); the peaks table keeps text, source and note
    peak_fp64: Mapped[Value]
    peak_fp32: Mapped[Value]
    peak_tf32: Mapped[Value]
    peak_fp16: Mapped[Value]
    peak_bf16: Mapped[Value]
    peak_fp8: Mapped[Value]
    peak_fp6: Mapped[Value]
    peak_int8: Mapped[Value]
    peak_int4: Mapped[Value]
    peak_fp4: Mapped[Value]
    peak_sparse_fp64: Mapped[Value]
    peak_sparse_fp32: Mapped[Value]
    peak_sparse_tf32: Mapped[Value]
    peak_sparse_fp16: Mapped[Value]
    peak_sparse_bf16: Mapped[Value]
    peak_sparse_fp8: Mapped[Value]
    peak_sparse_fp6: Mapped[Value]
    peak_sparse_int8: Mapped[Value]
    peak_sparse_int4: Mapped[Value]
    peak_sparse_fp4: Mapped[Value]

    origin: Mapped[str] = mapped_column(String(8), index=True)  # shipped | user
    version: Mapped[int] = mapped_column(Integer, default=1)
    overrides: Mapped[list[str]] = mapped_column(JSON, default=list)
    shipped_json: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    calibration: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # the file's calibration: block (0004)
    shipped_hash: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class SourceRecord(Base):
    __tablename__ = "sources"
    device_id: Mapped[DeviceFK]
    key: Mapped[str] = mapped_column(Text, primary_key=True)
    position: Mapped[int] = mapped_column(Integer)
    title: Mapped[str] = mapped_column(Text)
    url: Mapped[str] = mapped_column(Text)
    date: Mapped[str] = mapped_column(Text)


class PeakRecord(Base):
    """Peak throughput per precision (FLOP/s or OP/s); ``sparse`` marks the 2:4 structured-sparsity peak."""

    __tablename__ = "peaks"
    __table_args__ = (Index("ix_peaks_lookup", "precision", "sparse", "value"),)
    device_id: Mapped[DeviceFK]
    sparse: Mapped[bool] = mapped_column(Boolean, primary_key=True)
    precision: Mapped[str] = mapped_column(String(8), primary_key=True)
    position: Mapped[int] = mapped_column(Integer)
    value: Mapped[float] = mapped_column(Float)
    text: Mapped[str] = mapped_column(Text)
    source: Mapped[OptText]
    note: Mapped[OptText]


class MacEnergyRecord(Base):
    """Energy of one multiply-accumulate per precision (J)."""

    __tablename__ = "mac_energies"
    device_id: Mapped[DeviceFK]
    precision: Mapped[str] = mapped_column(String(8), primary_key=True)
    position: Mapped[int] = mapped_column(Integer)
    value: Mapped[float] = mapped_column(Float)
    text: Mapped[str] = mapped_column(Text)
    source: Mapped[OptText]
    note: Mapped[OptText]


class MemoryLevelRecord(Base):
    """One level of the memory hierarchy; ``position`` 0 is the outermost (off-chip) level."""

    __tablename__ = "memory_levels"
    device_id: Mapped[DeviceFK]
    position: Mapped[Position]
    name: Mapped[str] = mapped_column(Text)
    role: Mapped[str] = mapped_column(String(16))
    instances: Mapped[int] = mapped_column(Integer, default=1)
    capacity: Mapped[Value]  # bytes
    capacity_text: Mapped[OptText]
    capacity_source: Mapped[OptText]
    capacity_note: Mapped[OptText]
    bandwidth: Mapped[Value]  # B/s
    bandwidth_text: Mapped[OptText]
    bandwidth_source: Mapped[OptText]
    bandwidth_note: Mapped[OptText]
    energy: Mapped[Value]  # J/B
    energy_text: Mapped[OptText]
    energy_source: Mapped[OptText]
    energy_note: Mapped[OptText]
    latency: Mapped[Value]  # s
    latency_text: Mapped[OptText]
    latency_source: Mapped[OptText]
    latency_note: Mapped[OptText]


class MatrixEngineRecord(Base):
    """The matrix engine: a systolic array (rows x cols, dataflow) or tensor cores (tiles, units, SMs)."""

    __tablename__ = "matrix_engines"
    device_id: Mapped[DeviceFK]
    type: Mapped[str] = mapped_column(String(16))
    dataflow: Mapped[str | None] = mapped_column(String(4))
    tile_m: Mapped[int | None] = mapped_column(Integer)
    tile_n: Mapped[int | None] = mapped_column(Integer)
    tile_k: Mapped[int | None] = mapped_column(Integer)
    block_m: Mapped[int | None] = mapped_column(Integer)
    block_n: Mapped[int | None] = mapped_column(Integer)
    rows: Mapped[Value]
    rows_text: Mapped[OptText]
    rows_source: Mapped[OptText]
    rows_note: Mapped[OptText]
    cols: Mapped[Value]
    cols_text: Mapped[OptText]
    cols_source: Mapped[OptText]
    cols_note: Mapped[OptText]
    units: Mapped[Value]
    units_text: Mapped[OptText]
    units_source: Mapped[OptText]
    units_note: Mapped[OptText]
    sm_count: Mapped[Value]
    sm_count_text: Mapped[OptText]
    sm_count_source: Mapped[OptText]
    sm_count_note: Mapped[OptText]


class LinkRecord(Base):
    """The host link (``role='host'``, at most one) and device-to-device links (``'interconnect'``)."""

    __tablename__ = "links"
    device_id: Mapped[DeviceFK]
    role: Mapped[str] = mapped_column(String(16), primary_key=True)
    position: Mapped[Position]
    name: Mapped[str] = mapped_column(Text)
    direction: Mapped[str] = mapped_column(String(16))
    bandwidth: Mapped[Value]  # B/s as stated (see direction)
    bandwidth_text: Mapped[OptText]
    bandwidth_source: Mapped[OptText]
    bandwidth_note: Mapped[OptText]


class ConflictRecord(Base):
    """Where the vendor and other references disagree about a field."""

    __tablename__ = "conflicts"
    device_id: Mapped[DeviceFK]
    position: Mapped[Position]
    field: Mapped[str] = mapped_column(Text)
    note: Mapped[str] = mapped_column(Text)


class SystemRecord(Base):
    """A system (``docs/system-file.md``): a catalog device times a count, in a hierarchy of domains.

    The system is stored whole as its system-file mapping (``data``, the ``system_to_dict`` form: every figure with
    the text its source wrote, its source key and note, and the sources themselves), because a domain hierarchy is
    one document that is always read whole. The columns beside it are copies for the system table and its filters,
    rewritten with the system; the bookkeeping columns mean what they mean on ``devices``. ``device_id`` must name a
    device of the catalog: a device a system uses cannot be deleted.
    """

    __tablename__ = "systems"

    id: Mapped[str] = mapped_column(String(ID_LENGTH), primary_key=True)
    name: Mapped[str] = mapped_column(Text)
    vendor: Mapped[str] = mapped_column(Text, index=True)
    kind: Mapped[str] = mapped_column(String(16), index=True)
    device_id: Mapped[str] = mapped_column(String(ID_LENGTH), ForeignKey("devices.id"), index=True)
    devices: Mapped[int] = mapped_column(Integer)
    node_devices: Mapped[int] = mapped_column(Integer)
    # B/s that one device sends in one direction (NULL: no such domain, or its bandwidth is unknown)
    scale_up_bandwidth: Mapped[Value]
    scale_out_bandwidth: Mapped[Value]
    host_bandwidth: Mapped[Value]
    data: Mapped[dict[str, Any]] = mapped_column(JSON)

    origin: Mapped[str] = mapped_column(String(8), index=True)  # shipped | user
    version: Mapped[int] = mapped_column(Integer, default=1)
    overrides: Mapped[list[str]] = mapped_column(JSON, default=list)
    shipped_json: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    shipped_hash: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class NamedCalibrationRecord(Base):
    """A named kernel calibration of a device (issue 21): the curves fitted to one measurement file, with where they
    come from. ``key`` is ``fit-<slug of name>`` (unique per device); ``curves`` the device file's ``calibration:``
    block form (4 significant digits, each curve citing ``key``), ``mape`` the fit's error per kind (fractions).
    Not a child of the device's figures: a device edit leaves them, deleting the device deletes them (0005)."""

    __tablename__ = "named_calibrations"
    device_id: Mapped[DeviceFK]
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    name: Mapped[str] = mapped_column(Text)
    file: Mapped[str] = mapped_column(Text)  # the measurement file's name, as imported
    format: Mapped[str] = mapped_column(String(8))  # csv | torch | nsight
    precision: Mapped[str] = mapped_column(String(8))
    fitted: Mapped[str] = mapped_column(String(10))  # ISO date of the fit
    measurements: Mapped[int] = mapped_column(Integer)  # kernels fitted
    mape: Mapped[dict[str, Any]] = mapped_column(JSON)  # {"matrix"|"vector": fraction}
    curves: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


TABLES = Base.metadata.tables
CHILD_TABLES = ("sources", "peaks", "mac_energies", "memory_levels", "matrix_engines", "links", "conflicts")
