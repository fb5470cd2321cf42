"""CatalogRepository: read, search and edit the device catalog; optimistic locking on every save.

Every statement is built with SQLAlchemy expressions and bound parameters (no SQL from strings). A save
first runs ``UPDATE devices SET version = version + 1 WHERE id = :id AND version = :expected``: that row
lock serializes concurrent writers of one device, and a writer whose version moved gets a
:class:`ConflictError` carrying both versions, so no update is lost.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Self

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from explorer.core.hardware.device import Device
from explorer.core.hardware.device_file import (
    DeviceFileError,
    check_device_dict,
    device_from_dict,
    device_to_dict,
)
from explorer.core.session.named_calibrations import NamedCalibration

from .calibration_repository import CalibrationMethods, write_calibrations
from .errors import (
    ConflictError,
    DeviceInUseError,
    DuplicateDeviceError,
    FieldConflict,
    ReadOnlyDeviceError,
    UnknownDeviceError,
)
from .mapping import child_rows, device_from_rows, device_row
from .overrides import canonical_hash, changed_fields, copy_fields, sort_fields, value_of
from .query import DeviceFilter, DeviceRow, query_rows
from .schema import CHILD_TABLES, ID_LENGTH, TABLES
from .system_repository import SystemMethods
from .tx import lock_for_writing
from .tx import now as _now

DEVICES = TABLES["devices"]
SYSTEMS = TABLES["systems"]


@dataclass(frozen=True)
class StoredDevice:
    """A device with its catalog bookkeeping."""

    device: Device
    version: int
    origin: str
    overrides: tuple[str, ...]  # fields where a user edit wins over the shipped value
    shipped: dict | None  # the shipped version (device-file mapping) last seeded, for shipped devices
    created_at: datetime
    updated_at: datetime


class CatalogRepository(SystemMethods, CalibrationMethods):
    """Devices (the methods below), systems (:class:`SystemMethods`) and the devices' named calibrations
    (:class:`CalibrationMethods`) of one catalog database."""

    def __init__(self, engine: Engine):
        self.engine = engine

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------------------------------ reading
    def rows(self, filters: DeviceFilter | None = None) -> tuple[DeviceRow, ...]:
        with self.engine.connect() as conn:
            return query_rows(conn, filters or DeviceFilter())

    def ids(self) -> tuple[str, ...]:
        with self.engine.connect() as conn:
            return tuple(conn.scalars(select(DEVICES.c.id).order_by(DEVICES.c.id)))

    def count(self) -> int:
        with self.engine.connect() as conn:
            return conn.scalar(select(func.count()).select_from(DEVICES)) or 0

    def get(self, device_id: str) -> Device:
        return self.record(device_id).device

    def record(self, device_id: str) -> StoredDevice:
        with self.engine.connect() as conn:
            found = _load(conn, [device_id])
        if device_id not in found:
            raise UnknownDeviceError(device_id, self.close_matches(device_id))
        return found[device_id]

    def devices(self, ids: Sequence[str] | None = None) -> tuple[Device, ...]:
        """Every device (or those with ``ids``, in that order), loaded with one query per table."""
        with self.engine.connect() as conn:
            found = _load(conn, None if ids is None else list(ids))
        if ids is None:
            return tuple(found[k].device for k in sorted(found))
        missing = [i for i in ids if i not in found]
        if missing:
            raise UnknownDeviceError(missing[0], self.close_matches(missing[0]))
        return tuple(found[i].device for i in ids)

    def close_matches(self, spec: str, limit: int = 5) -> tuple[str, ...]:
        """Ids that contain ``spec`` (or whose name does), else the ids most similar to it."""
        with self.engine.connect() as conn:
            pairs = conn.execute(select(DEVICES.c.id, DEVICES.c.name).order_by(DEVICES.c.id)).all()
        needle = spec.lower()
        contains = [i for i, name in pairs if needle in i or needle in name.lower()]
        if contains:
            return tuple(contains[:limit])
        return tuple(difflib.get_close_matches(needle, [i for i, _ in pairs], n=limit, cutoff=0.5))

    # ------------------------------------------------------------------------------------------ writing
    def add(self, device: Device) -> int:
        """Add a user device; returns its version (1). A taken id raises DuplicateDeviceError."""
        _check(device)
        try:
            with self.engine.begin() as conn:
                if _exists(conn, device.id):
                    raise DuplicateDeviceError(device.id)
                _insert(conn, device, origin="user", now=_now())
        except IntegrityError:
            raise DuplicateDeviceError(device.id) from None
        return 1

    def update(self, device: Device, expected_version: int) -> int:
        """Save an edit made to version ``expected_version``; returns the new version.

        Raises ConflictError (with both values per differing field) if someone saved in between.
        Editing a shipped device marks the changed fields as overrides: they win when re-seeding.
        """
        _check(device)
        with self.engine.begin() as conn:
            if not _claim(conn, device.id, expected_version):
                theirs = _load(conn, [device.id]).get(device.id)
                if theirs is None:
                    raise UnknownDeviceError(device.id, self.close_matches(device.id))
                raise _conflict(device, theirs, expected_version)
            _rewrite(conn, device)
        return expected_version + 1

    def revert(self, device_id: str, expected_version: int, fields: Iterable[str] | None = None) -> int:
        """Give overridden fields of a shipped device (all, or ``fields``) their shipped value back."""
        stored = self.record(device_id)
        if stored.shipped is None:
            raise ReadOnlyDeviceError(
                f"'{device_id}' is a user device: there is no shipped version to revert to"
            )
        chosen = set(stored.overrides if fields is None else fields)
        data = copy_fields(device_to_dict(stored.device), stored.shipped, chosen)
        device = replace(device_from_dict(data, device_id), origin=stored.origin)
        with self.engine.begin() as conn:
            if not _claim(conn, device_id, expected_version):
                theirs = _load(conn, [device_id]).get(device_id)
                if theirs is None:
                    raise UnknownDeviceError(device_id)
                raise _conflict(device, theirs, expected_version)
            _rewrite(conn, device, forget=chosen)
        return expected_version + 1

    def delete(self, device_id: str) -> None:
        """Delete a user device. Shipped devices (ReadOnlyDeviceError) and devices that systems are made of
        (DeviceInUseError) cannot be deleted."""
        with self.engine.begin() as conn:
            origin = conn.scalar(select(DEVICES.c.origin).where(DEVICES.c.id == device_id))
            if origin is None:
                raise UnknownDeviceError(device_id, self.close_matches(device_id))
            if origin == "shipped":
                raise ReadOnlyDeviceError(
                    f"'{device_id}' is a shipped device and cannot be deleted; "
                    "duplicate it or revert your edits"
                )
            users = tuple(conn.scalars(select(SYSTEMS.c.id).where(SYSTEMS.c.device_id == device_id)
                                       .order_by(SYSTEMS.c.id)))
            if users:
                raise DeviceInUseError(device_id, users)
            conn.execute(delete(DEVICES).where(DEVICES.c.id == device_id))

    def duplicate(self, device_id: str, new_id: str, name: str | None = None) -> Device:
        """Copy a device under a new id as a user device (named ``name``, default "<name> (copy)")."""
        source = self.get(device_id)
        copy = replace(source, id=new_id, name=name or f"{source.name} (copy)", origin="user")
        self.add(copy)
        return copy

    def import_devices(
        self, devices: Sequence[Device], replace_existing: bool = False, validate: bool = True,
        calibrations: Mapping[str, Sequence[NamedCalibration]] | None = None,
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Write all devices in one transaction (all or nothing); returns (added ids, replaced ids).

        New ids become user devices. An existing id raises DuplicateDeviceError unless
        ``replace_existing``; replacing a shipped device records the changed fields as overrides.
        ``calibrations`` (named calibrations by device id, an export's ``named_calibrations``) are written in the
        same transaction, each replacing one of the same name; the device's other calibrations stay.
        """
        if validate:
            for device in devices:
                _check(device)
        added, replaced = [], []
        now = _now()
        with self.engine.begin() as conn:
            lock_for_writing(conn)
            existing = set(conn.scalars(select(DEVICES.c.id))) & {d.id for d in devices}
            for device in devices:
                if device.id in existing:
                    if not replace_existing:
                        raise DuplicateDeviceError(device.id)
                    conn.execute(
                        update(DEVICES).where(DEVICES.c.id == device.id).values(version=DEVICES.c.version + 1)
                    )
                    _rewrite(conn, device)
                    replaced.append(device.id)
                else:
                    added.append(device.id)
            _insert_many(conn, [d for d in devices if d.id not in existing], "user", now)
            write_calibrations(conn, calibrations or {})
        return tuple(added), tuple(replaced)


# ------------------------------------------------------------------------------------------------ helpers
def _check(device: Device) -> None:
    if len(device.id) > ID_LENGTH:
        raise DeviceFileError([f"<edit>: {device.id[:20]}...: id: longer than {ID_LENGTH} characters"])
    _, problems = check_device_dict(device_to_dict(device), "<edit>")
    if problems:
        raise DeviceFileError(problems)


def _exists(conn: Connection, device_id: str) -> bool:
    return conn.scalar(select(DEVICES.c.id).where(DEVICES.c.id == device_id)) is not None


def _claim(conn: Connection, device_id: str, expected_version: int) -> bool:
    """Bump the version if it is still ``expected_version``; holds the row lock until commit."""
    result = conn.execute(
        update(DEVICES)
        .where(DEVICES.c.id == device_id, DEVICES.c.version == expected_version)
        .values(version=DEVICES.c.version + 1)
    )
    return result.rowcount == 1


def _conflict(mine: Device, theirs: StoredDevice, expected_version: int) -> ConflictError:
    a, b = device_to_dict(mine), device_to_dict(theirs.device)
    fields = tuple(FieldConflict(f, value_of(a, f), value_of(b, f)) for f in changed_fields(a, b))
    return ConflictError(mine, theirs.device, expected_version, theirs.version, fields)


def _bookkeeping(origin: str, now: datetime, shipped: dict | None = None) -> dict[str, Any]:
    return {
        "origin": origin,
        "version": 1,
        "overrides": [],
        "created_at": now,
        "updated_at": now,
        "shipped_json": shipped,
        "shipped_hash": canonical_hash(shipped) if shipped is not None else None,
    }


def _insert(
    conn: Connection, device: Device, origin: str, now: datetime, shipped: dict | None = None
) -> None:
    conn.execute(insert(DEVICES).values(**device_row(device), **_bookkeeping(origin, now, shipped)))
    _insert_children(conn, [device])


def _insert_many(
    conn: Connection,
    devices: Sequence[Device],
    origin: str,
    now: datetime,
    shipped: Sequence[dict] | None = None,
) -> None:
    if not devices:
        return
    rows = [
        {**device_row(d), **_bookkeeping(origin, now, shipped[i] if shipped is not None else None)}
        for i, d in enumerate(devices)
    ]
    conn.execute(insert(DEVICES), rows)
    _insert_children(conn, devices)


def _insert_children(conn: Connection, devices: Sequence[Device]) -> None:
    batches: dict[str, list[dict]] = {name: [] for name in CHILD_TABLES}
    for device in devices:
        for name, rows in child_rows(device).items():
            batches[name].extend(rows)
    for name, rows in batches.items():
        if rows:
            conn.execute(insert(TABLES[name]), rows)


def _rewrite(
    conn: Connection,
    device: Device,
    *,
    overrides: Iterable[str] | None = None,
    forget: Iterable[str] = (),
    shipped: dict | None = None,
) -> None:
    """Replace the content of an existing, already-claimed device row and its children.

    For a shipped device, the fields this write changes become overrides unless they equal the shipped
    value, and ``forget`` drops markers (revert). Re-seeding passes the new ``shipped`` version together
    with the ``overrides`` to keep.
    """
    row = conn.execute(
        select(DEVICES.c.origin, DEVICES.c.overrides, DEVICES.c.shipped_json).where(DEVICES.c.id == device.id)
    ).one()
    values: dict[str, Any] = {**device_row(device), "updated_at": _now()}
    if row.origin == "shipped":
        if overrides is None:
            base = row.shipped_json or {}
            new = device_to_dict(device)
            current = _load(conn, [device.id])[device.id].device
            touched = set(changed_fields(device_to_dict(current), new))
            overrides = (set(row.overrides) - set(forget) - touched) | {
                f for f in touched if value_of(new, f) != value_of(base, f)
            }
        values["overrides"] = sort_fields(overrides)
        if shipped is not None:
            values["shipped_json"] = shipped
            values["shipped_hash"] = canonical_hash(shipped)
    conn.execute(update(DEVICES).where(DEVICES.c.id == device.id).values(**values))
    for name in CHILD_TABLES:
        table = TABLES[name]
        conn.execute(delete(table).where(table.c.device_id == device.id))
    _insert_children(conn, [device])


def _load(conn: Connection, ids: list[str] | None) -> dict[str, StoredDevice]:
    """Devices by id with all children (one query per table); ``None`` loads everything."""
    if ids is not None and not ids:
        return {}
    query = select(DEVICES)
    if ids is not None:
        query = query.where(DEVICES.c.id.in_(ids))
    heads = {r.id: r._mapping for r in conn.execute(query)}
    if not heads:
        return {}
    children: dict[str, dict[str, list]] = {i: {name: [] for name in CHILD_TABLES} for i in heads}
    for name in CHILD_TABLES:
        table = TABLES[name]
        child_query = select(table)
        if ids is not None:
            child_query = child_query.where(table.c.device_id.in_(list(heads)))
        for r in conn.execute(child_query):
            children[r.device_id][name].append(r._mapping)
    return {
        i: StoredDevice(
            device=device_from_rows(head, children[i]),
            version=head["version"],
            origin=head["origin"],
            overrides=tuple(head["overrides"] or ()),
            shipped=head["shipped_json"],
            created_at=head["created_at"],
            updated_at=head["updated_at"],
        )
        for i, head in heads.items()
    }
