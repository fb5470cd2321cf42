"""Seeding and re-seeding the shipped systems, by the devices' rules (``seeding.py``, docs/catalog.md).

Called by :func:`explorer.store.seeding.seed` inside its transaction, after the shipped devices are written (so
every shipped system's device is in the catalog).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from sqlalchemy import select, update
from sqlalchemy.engine import Connection

from explorer.core.hardware.system import System
from explorer.core.hardware.system_file import check_system_dict, system_to_dict

from .overrides import canonical_hash, changed_fields, copy_fields, referenced_sources
from .system_repository import SYSTEMS, _load, insert_systems, rewrite_system
from .tx import now

#: (added, updated, merged, kept, skipped, unchanged): the fields of a SeedReport
Outcome = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...], int]


def seed_systems(conn: Connection, shipped: Sequence[System]) -> Outcome:
    """Write the shipped systems: add new ids, refresh unedited ones, merge edited ones, leave user ids alone."""
    updated, merged, kept, skipped, unchanged = [], [], [], [], 0
    new_systems, new_data = [], []
    existing = {r.id: r for r in conn.execute(
        select(SYSTEMS.c.id, SYSTEMS.c.origin, SYSTEMS.c.shipped_hash, SYSTEMS.c.overrides))}
    for system in shipped:
        system = replace(system, origin="shipped")
        data = system_to_dict(system)
        row = existing.get(system.id)
        if row is None:
            new_systems.append(system)
            new_data.append(data)
            continue
        if row.origin != "shipped":
            skipped.append(system.id)
            continue
        if row.shipped_hash == canonical_hash(data):
            unchanged += 1
            continue
        conn.execute(update(SYSTEMS).where(SYSTEMS.c.id == system.id).values(version=SYSTEMS.c.version + 1))
        if not row.overrides:
            rewrite_system(conn, system, overrides=(), shipped=data)
            updated.append(system.id)
            continue
        current = _load(conn, [system.id])[system.id].system
        result, overrides, ok = _merge(data, system_to_dict(current), list(row.overrides))
        rewrite_system(conn, replace(result or current, origin="shipped"), overrides=overrides, shipped=data)
        (merged if ok else kept).append(system.id)
    insert_systems(conn, new_systems, "shipped", now(), shipped=new_data)
    return (tuple(s.id for s in new_systems), tuple(updated), tuple(merged), tuple(kept), tuple(skipped),
            unchanged)


def _merge(shipped: dict, current: dict, overrides: list[str]) -> tuple[System | None, set[str], bool]:
    """The new shipped mapping with the user's overridden fields; (system, overrides, merged cleanly)."""
    data = copy_fields(shipped, current, overrides)
    missing = referenced_sources(data) - set(data.get("sources") or {})
    keep_sources = [f"sources.{k}" for k in sorted(missing) if k in (current.get("sources") or {})]
    data = copy_fields(data, current, keep_sources)
    system, problems = check_system_dict(data, "re-seed")
    if system is None or problems:
        return None, set(overrides) | set(changed_fields(shipped, current)), False
    return system, set(overrides) | set(keep_sources), True
