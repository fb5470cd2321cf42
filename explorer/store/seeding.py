"""Seeding the catalog with the shipped devices, and re-seeding when a newer release ships updated data.

Rules (docs/catalog.md):

* A shipped id not in the database is added (origin ``shipped``).
* A user device with the same id as a shipped one is left alone (reported as skipped).
* A shipped device without user edits is replaced by the new shipped version.
* A shipped device with user edits keeps the user's value for every overridden field and takes the new
  shipped value for all other fields; the overrides stay marked. If the merge would be invalid (say the new
  release reshaped a field the user's value depends on), the user's whole device is kept and every field
  that differs from the new shipped version is marked as overridden. Nothing the user wrote is lost.
* A device that a newer release no longer ships stays in the database unchanged.

Shipped systems (``catalog/systems/``) follow the same rules, after the devices and in the same transaction
(:mod:`.seed_rows`); the fingerprint covers both folders.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import delete, insert, select
from sqlalchemy.engine import Engine

from explorer.core.hardware.catalog_files import (
    SYSTEMS_DIR,
    catalog_files,
    load_shipped_devices,
    load_shipped_systems,
    shipped_catalog_dir,
)
from explorer.core.hardware.device import Device
from explorer.core.hardware.device_file import check_device_dict, device_to_dict
from explorer.core.hardware.system import System

from .repository import DEVICES, _insert_many, _load, _rewrite
from .seed_rows import SeedKind, seed_rows, seed_systems
from .tx import META, lock_for_writing

FINGERPRINT_KEY = "shipped_fingerprint"
SEED_FORMAT = "2"  # bump when the stored form of a device or system changes, to force a re-seed (2: systems)


@dataclass(frozen=True)
class SeedReport:
    added: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()  # refreshed to the new shipped version (no user edits)
    merged: tuple[str, ...] = ()  # refreshed; the user's overriding fields kept
    kept: tuple[str, ...] = ()  # the merge was invalid: the user's device kept as it was
    skipped: tuple[str, ...] = ()  # a user device already has this id
    unchanged: int = 0
    systems: SeedReport | None = None  # the same for the shipped systems

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.merged or self.kept or (self.systems and self.systems.changed))

    def summary(self, what: str = "device") -> str:
        parts = [
            f"{len(self.added)} added",
            f"{len(self.updated)} updated",
            f"{len(self.merged)} merged with your edits",
            f"{self.unchanged} unchanged",
        ]
        if self.kept:
            parts.append(f"{len(self.kept)} kept as you edited them ({', '.join(self.kept)})")
        if self.skipped:
            parts.append(
                f"{len(self.skipped)} skipped: a {what} of yours has the id ({', '.join(self.skipped)})"
            )
        text = ", ".join(parts)
        if self.systems is not None:
            text += "; systems: " + self.systems.summary("system").removeprefix("shipped catalog: ")
        return "shipped catalog: " + text


def catalog_fingerprint(folder: Path | None = None) -> str | None:
    """A hash of the shipped catalog files (names and bytes); None when there is no catalog folder."""
    folder = folder or shipped_catalog_dir()
    if not folder.is_dir():
        return None
    digest = hashlib.sha256(f"seed-format {SEED_FORMAT}\n".encode())
    systems = folder / SYSTEMS_DIR
    for path in catalog_files(folder) + (catalog_files(systems) if systems.is_dir() else []):
        name = path.relative_to(folder).as_posix()
        digest.update(name.encode("utf-8") + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def ensure_seeded(engine: Engine, folder: Path | None = None) -> SeedReport | None:
    """Seed or re-seed when the shipped files differ from those last seeded; None when nothing was needed."""
    fingerprint = catalog_fingerprint(folder)
    if fingerprint is None:
        return None
    with engine.connect() as conn:
        if conn.scalar(select(META.c.value).where(META.c.key == FINGERPRINT_KEY)) == fingerprint:
            return None
    devices = load_shipped_devices(folder)
    systems = load_shipped_systems(folder, {d.id for d in devices})
    return seed(engine, devices, fingerprint, systems)


def seed(
    engine: Engine, shipped: Sequence[Device], fingerprint: str | None = None, systems: Sequence[System] = ()
) -> SeedReport:
    """Write the shipped devices, then the shipped ``systems``, following the re-seed rules, in one transaction."""
    with engine.begin() as conn:
        lock_for_writing(conn)
        if fingerprint is not None:  # another process may have seeded while we waited for the lock
            done = conn.scalar(select(META.c.value).where(META.c.key == FINGERPRINT_KEY))
            if done == fingerprint:
                return SeedReport()
        device_report = seed_rows(conn, shipped, DEVICE_KIND)
        system_report = SeedReport(*seed_systems(conn, systems))
        if fingerprint is not None:
            conn.execute(delete(META).where(META.c.key == FINGERPRINT_KEY))
            conn.execute(insert(META).values(key=FINGERPRINT_KEY, value=fingerprint))
    return SeedReport(*device_report, system_report)


DEVICE_KIND = SeedKind(DEVICES, device_to_dict, check_device_dict,
                       lambda conn, id_: _load(conn, [id_])[id_].device, _rewrite, _insert_many)
