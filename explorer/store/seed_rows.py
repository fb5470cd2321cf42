"""The seeding loop shared by shipped devices and shipped systems (``seeding.py`` states the rules, docs/catalog.md).

A :class:`SeedKind` says how one kind of catalog row is read, checked, rewritten and inserted; :func:`seed_rows`
applies the re-seed rules to a kind. Devices are seeded first, then systems, in one transaction (every shipped
system's device is then in the catalog).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import Table, select, update
from sqlalchemy.engine import Connection

from explorer.core.hardware.system_file import check_system_dict, system_to_dict

from .overrides import canonical_hash, changed_fields, copy_fields, referenced_sources
from .system_repository import SYSTEMS, _load, insert_systems, rewrite_system
from .tx import now

#: (added, updated, merged, kept, skipped, unchanged): the fields of a SeedReport
Outcome = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...], int]


@dataclass(frozen=True)
class SeedKind:
    table: Table
    to_dict: Callable[[Any], dict]
    check_dict: Callable[[Any, str], tuple[Any, list[str]]]
    current: Callable[[Connection, str], Any]  # the stored row's object
    rewrite: Callable[..., None]  # (conn, obj, overrides=..., shipped=...)
    insert: Callable[..., None]  # (conn, objs, origin, now, shipped=...)


def seed_rows(conn: Connection, shipped: Sequence[Any], kind: SeedKind) -> Outcome:
    """Write the shipped rows: add new ids, refresh unedited ones, merge edited ones, leave user ids alone."""
    updated, merged, kept, skipped, unchanged = [], [], [], [], 0
    new_rows, new_data = [], []
    t = kind.table
    existing = {r.id: r for r in conn.execute(select(t.c.id, t.c.origin, t.c.shipped_hash, t.c.overrides))}
    for item in shipped:
        item = replace(item, origin="shipped")
        data = kind.to_dict(item)
        row = existing.get(item.id)
        if row is None:
            new_rows.append(item)
            new_data.append(data)
            continue
        if row.origin != "shipped":
            skipped.append(item.id)
            continue
        if row.shipped_hash == canonical_hash(data):
            unchanged += 1
            continue
        conn.execute(update(t).where(t.c.id == item.id).values(version=t.c.version + 1))
        if not row.overrides:
            kind.rewrite(conn, item, overrides=(), shipped=data)
            updated.append(item.id)
            continue
        current = kind.current(conn, item.id)
        result, overrides, ok = _merge(kind, data, kind.to_dict(current), list(row.overrides))
        kind.rewrite(conn, replace(result or current, origin="shipped"), overrides=overrides, shipped=data)
        (merged if ok else kept).append(item.id)
    kind.insert(conn, new_rows, "shipped", now(), shipped=new_data)
    return (tuple(r.id for r in new_rows), tuple(updated), tuple(merged), tuple(kept), tuple(skipped), unchanged)


def _merge(kind: SeedKind, shipped: dict, current: dict, overrides: list[str]) -> tuple[Any, set[str], bool]:
    """The new shipped mapping with the user's overridden fields; (object, overrides, merged cleanly)."""
    data = copy_fields(shipped, current, overrides)
    missing = referenced_sources(data) - set(data.get("sources") or {})
    keep_sources = [f"sources.{k}" for k in sorted(missing) if k in (current.get("sources") or {})]
    data = copy_fields(data, current, keep_sources)
    item, problems = kind.check_dict(data, "re-seed")
    if item is None or problems:
        return None, set(overrides) | set(changed_fields(shipped, current)), False
    return item, set(overrides) | set(keep_sources), True


SYSTEM_KIND = SeedKind(SYSTEMS, system_to_dict, check_system_dict,
                       lambda conn, id_: _load(conn, [id_])[id_].system, rewrite_system, insert_systems)


def seed_systems(conn: Connection, shipped: Sequence) -> Outcome:
    return seed_rows(conn, shipped, SYSTEM_KIND)
