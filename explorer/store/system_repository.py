"""The systems of the catalog: read, search and edit them beside the devices, with the same rules.

A system is stored whole as its system-file mapping (``systems.data``) with copies of the table's figures in SI
units. Writes follow the devices' rules (``repository.py``): every save names the version it read
(``UPDATE systems SET version = version + 1 WHERE id = :id AND version = :expected`` first, a
:class:`ConflictError` when it moved); editing a shipped system marks the changed fields as overrides; shipped
systems cannot be deleted. A system whose ``device`` is not a device of the catalog is refused
(:class:`MissingDeviceError`, one line naming ``device``).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, insert, or_, select, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from explorer.core.hardware.system import System
from explorer.core.hardware.system_file import (
    TOP_LEVEL,
    SystemFileError,
    check_system_dict,
    system_from_dict,
    system_to_dict,
)

from .errors import (
    ConflictError,
    DuplicateSystemError,
    FieldConflict,
    MissingDeviceError,
    ReadOnlyDeviceError,
    UnknownSystemError,
)
from .overrides import canonical_hash, changed_fields, copy_fields, value_of
from .rows import NAN, SystemFilter, SystemRow  # SystemFilter and SystemRow are also this module's
from .schema import ID_LENGTH, TABLES
from .tx import lock_for_writing, now

SYSTEMS = TABLES["systems"]
DEVICES = TABLES["devices"]


@dataclass(frozen=True)
class StoredSystem:
    """A system with its catalog bookkeeping (as :class:`StoredDevice` for devices)."""

    system: System
    version: int
    origin: str
    overrides: tuple[str, ...]
    shipped: dict | None
    created_at: datetime
    updated_at: datetime


class SystemMethods:
    """The system half of :class:`CatalogRepository` (which supplies ``engine``)."""

    engine: Engine

    # ------------------------------------------------------------------------------------------ reading
    def system_rows(self, filters: SystemFilter | None = None) -> tuple[SystemRow, ...]:
        f = filters or SystemFilter()
        query = select(SYSTEMS).order_by(SYSTEMS.c.id)
        text = f.text.strip()
        if text:
            query = query.where(or_(*(col.icontains(text, autoescape=True) for col in (
                SYSTEMS.c.id, SYSTEMS.c.name, SYSTEMS.c.vendor, SYSTEMS.c.device_id))))
        if f.vendors:
            query = query.where(func.lower(SYSTEMS.c.vendor).in_([v.lower() for v in f.vendors]))
        if f.kinds:
            query = query.where(SYSTEMS.c.kind.in_(f.kinds))
        if f.origin:
            query = query.where(SYSTEMS.c.origin == f.origin)
        if f.device:
            query = query.where(SYSTEMS.c.device_id == f.device)
        with self.engine.connect() as conn:
            return tuple(_row(r) for r in conn.execute(query))

    def system_ids(self) -> tuple[str, ...]:
        with self.engine.connect() as conn:
            return tuple(conn.scalars(select(SYSTEMS.c.id).order_by(SYSTEMS.c.id)))

    def get_system(self, system_id: str) -> System:
        return self.system_record(system_id).system

    def system_record(self, system_id: str) -> StoredSystem:
        with self.engine.connect() as conn:
            found = _load(conn, [system_id])
        if system_id not in found:
            raise UnknownSystemError(system_id, self.system_close_matches(system_id))
        return found[system_id]

    def systems(self, ids: Sequence[str] | None = None) -> tuple[System, ...]:
        """Every system (or those with ``ids``, in that order)."""
        with self.engine.connect() as conn:
            found = _load(conn, None if ids is None else list(ids))
        if ids is None:
            return tuple(found[k].system for k in sorted(found))
        missing = [i for i in ids if i not in found]
        if missing:
            raise UnknownSystemError(missing[0], self.system_close_matches(missing[0]))
        return tuple(found[i].system for i in ids)

    def system_close_matches(self, spec: str, limit: int = 5) -> tuple[str, ...]:
        with self.engine.connect() as conn:
            pairs = conn.execute(select(SYSTEMS.c.id, SYSTEMS.c.name).order_by(SYSTEMS.c.id)).all()
        needle = spec.lower()
        contains = [i for i, name in pairs if needle in i or needle in name.lower()]
        if contains:
            return tuple(contains[:limit])
        return tuple(difflib.get_close_matches(needle, [i for i, _ in pairs], n=limit, cutoff=0.5))

    # ------------------------------------------------------------------------------------------ writing
    def add_system(self, system: System) -> int:
        """Add a user system; returns its version (1). A taken id raises DuplicateSystemError."""
        check_system(system)
        try:
            with self.engine.begin() as conn:
                if conn.scalar(select(SYSTEMS.c.id).where(SYSTEMS.c.id == system.id)) is not None:
                    raise DuplicateSystemError(system.id)
                require_devices(conn, [system])
                insert_systems(conn, [system], "user", now())
        except IntegrityError:
            raise DuplicateSystemError(system.id) from None
        return 1

    def update_system(self, system: System, expected_version: int) -> int:
        """Save an edit made to version ``expected_version``; returns the new version (ConflictError if moved)."""
        check_system(system)
        with self.engine.begin() as conn:
            require_devices(conn, [system])
            if not _claim(conn, system.id, expected_version):
                raise self._lost(conn, system, expected_version)
            rewrite_system(conn, system)
        return expected_version + 1

    def revert_system(self, system_id: str, expected_version: int, fields: Iterable[str] | None = None) -> int:
        """Give overridden fields of a shipped system (all, or ``fields``) their shipped value back."""
        stored = self.system_record(system_id)
        if stored.shipped is None:
            raise ReadOnlyDeviceError(f"'{system_id}' is a user system: there is no shipped version to revert to")
        chosen = set(stored.overrides if fields is None else fields)
        data = copy_fields(system_to_dict(stored.system), stored.shipped, chosen)
        system = replace(system_from_dict(data, system_id), origin=stored.origin)
        with self.engine.begin() as conn:
            require_devices(conn, [system])
            if not _claim(conn, system_id, expected_version):
                raise self._lost(conn, system, expected_version)
            rewrite_system(conn, system, forget=chosen)
        return expected_version + 1

    def delete_system(self, system_id: str) -> None:
        """Delete a user system. Shipped systems cannot be deleted (ReadOnlyDeviceError)."""
        with self.engine.begin() as conn:
            origin = conn.scalar(select(SYSTEMS.c.origin).where(SYSTEMS.c.id == system_id))
            if origin is None:
                raise UnknownSystemError(system_id, self.system_close_matches(system_id))
            if origin == "shipped":
                raise ReadOnlyDeviceError(f"'{system_id}' is a shipped system and cannot be deleted; "
                                          "duplicate it or revert your edits")
            conn.execute(delete(SYSTEMS).where(SYSTEMS.c.id == system_id))

    def import_systems(self, systems: Sequence[System], replace_existing: bool = False, validate: bool = True,
                       ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Write all systems in one transaction (all or nothing); returns (added ids, replaced ids).

        New ids become user systems; an existing id raises DuplicateSystemError unless ``replace_existing``
        (replacing a shipped system records the changed fields as overrides). Every system's device must be
        in the catalog.
        """
        if validate:
            for system in systems:
                check_system(system)
        added, replaced = [], []
        with self.engine.begin() as conn:
            lock_for_writing(conn)
            require_devices(conn, systems)
            existing = set(conn.scalars(select(SYSTEMS.c.id))) & {s.id for s in systems}
            for system in systems:
                if system.id not in existing:
                    added.append(system.id)
                    continue
                if not replace_existing:
                    raise DuplicateSystemError(system.id)
                conn.execute(update(SYSTEMS).where(SYSTEMS.c.id == system.id)
                             .values(version=SYSTEMS.c.version + 1))
                rewrite_system(conn, system)
                replaced.append(system.id)
            insert_systems(conn, [s for s in systems if s.id not in existing], "user", now())
        return tuple(added), tuple(replaced)

    def _lost(self, conn: Connection, mine: System, expected_version: int) -> Exception:
        theirs = _load(conn, [mine.id]).get(mine.id)
        if theirs is None:
            return UnknownSystemError(mine.id, self.system_close_matches(mine.id))
        a, b = system_to_dict(mine), system_to_dict(theirs.system)
        fields = tuple(FieldConflict(f, value_of(a, f), value_of(b, f)) for f in changed_fields(a, b))
        return ConflictError(mine, theirs.system, expected_version, theirs.version, fields, what="system")


# ------------------------------------------------------------------------------------------------ helpers
def _or_nan(x: float | None) -> float:
    return NAN if x is None else x


def _row(r) -> SystemRow:
    return SystemRow(r.id, r.name, r.vendor, r.kind, r.device_id, r.devices, r.node_devices,
                     _or_nan(r.scale_up_bandwidth), _or_nan(r.scale_out_bandwidth), _or_nan(r.host_bandwidth),
                     r.origin, bool(r.overrides), r.version)


def check_system(system: System) -> None:
    """The checks of a system file, on a system about to be written (SystemFileError, one line)."""
    if len(system.id) > ID_LENGTH:
        raise SystemFileError([f"<edit>: {system.id[:20]}...: id: longer than {ID_LENGTH} characters"])
    _, problems = check_system_dict(system_to_dict(system), "<edit>")
    if problems:
        raise SystemFileError(problems)


def require_devices(conn: Connection, systems: Sequence[System]) -> None:
    """MissingDeviceError for the first system whose device is not in the catalog."""
    wanted = {s.device_id for s in systems}
    if not wanted:
        return
    known = set(conn.scalars(select(DEVICES.c.id).where(DEVICES.c.id.in_(wanted))))
    for system in systems:
        if system.device_id not in known:
            raise MissingDeviceError(system.id, system.device_id)


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def system_row(system: System) -> dict[str, Any]:
    """The ``systems`` columns of ``system`` without the bookkeeping."""
    up, out = system.scale_up, system.scale_out
    return {
        "id": system.id, "name": system.name, "vendor": system.vendor, "kind": system.kind,
        "device_id": system.device_id, "devices": system.devices, "node_devices": system.node_devices,
        "scale_up_bandwidth": _finite(system.bandwidth(up)) if up is not None else None,
        "scale_out_bandwidth": _finite(system.bandwidth(out)) if out is not None else None,
        "host_bandwidth": _finite(system.host_bandwidth()),
        "data": system_to_dict(system),
    }


def insert_systems(conn: Connection, systems: Sequence[System], origin: str, when: datetime,
                   shipped: Sequence[dict] | None = None) -> None:
    if not systems:
        return
    rows = []
    for i, system in enumerate(systems):
        ship = shipped[i] if shipped is not None else None
        rows.append({**system_row(system), "origin": origin, "version": 1, "overrides": [], "created_at": when,
                     "updated_at": when, "shipped_json": ship,
                     "shipped_hash": canonical_hash(ship) if ship is not None else None})
    conn.execute(insert(SYSTEMS), rows)


def _claim(conn: Connection, system_id: str, expected_version: int) -> bool:
    result = conn.execute(update(SYSTEMS).where(SYSTEMS.c.id == system_id, SYSTEMS.c.version == expected_version)
                          .values(version=SYSTEMS.c.version + 1))
    return result.rowcount == 1


def sort_system_fields(fields: Iterable[str]) -> list[str]:
    """Override fields in system-file order (``sources.<key>`` one entry at a time)."""
    def order(field: str) -> tuple[int, str]:
        top = field.split(".", 1)[0]
        return (TOP_LEVEL.index(top) if top in TOP_LEVEL else len(TOP_LEVEL), field)

    return sorted(set(fields), key=order)


def rewrite_system(conn: Connection, system: System, *, overrides: Iterable[str] | None = None,
                   forget: Iterable[str] = (), shipped: dict | None = None) -> None:
    """Replace an existing, already-claimed system; for a shipped one, track overrides as ``_rewrite`` does."""
    row = conn.execute(select(SYSTEMS.c.origin, SYSTEMS.c.overrides, SYSTEMS.c.shipped_json, SYSTEMS.c.data)
                       .where(SYSTEMS.c.id == system.id)).one()
    values: dict[str, Any] = {**system_row(system), "updated_at": now()}
    if row.origin == "shipped":
        if overrides is None:
            base, new = row.shipped_json or {}, values["data"]
            touched = set(changed_fields(row.data, new))
            overrides = (set(row.overrides) - set(forget) - touched) | {
                f for f in touched if value_of(new, f) != value_of(base, f)
            }
        values["overrides"] = sort_system_fields(overrides)
        if shipped is not None:
            values["shipped_json"] = shipped
            values["shipped_hash"] = canonical_hash(shipped)
    conn.execute(update(SYSTEMS).where(SYSTEMS.c.id == system.id).values(**values))


def _load(conn: Connection, ids: list[str] | None) -> dict[str, StoredSystem]:
    if ids is not None and not ids:
        return {}
    query = select(SYSTEMS)
    if ids is not None:
        query = query.where(SYSTEMS.c.id.in_(ids))
    return {
        r.id: StoredSystem(
            system=replace(system_from_dict(r.data, "database"), origin=r.origin),
            version=r.version,
            origin=r.origin,
            overrides=tuple(r.overrides or ()),
            shipped=r.shipped_json,
            created_at=r.created_at,
            updated_at=r.updated_at,
        )
        for r in conn.execute(query)
    }
