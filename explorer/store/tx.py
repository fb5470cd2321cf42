"""What every writer of the catalog shares: the clock of its bookkeeping and the database-wide writer lock."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import delete, func, select
from sqlalchemy.engine import Connection

from .schema import TABLES

META = TABLES["catalog_meta"]
ADVISORY_LOCK_KEY = 0x6877_6578  # "hwex": serializes seeding across team members on PostgreSQL


def now() -> datetime:
    return datetime.now(UTC)


def lock_for_writing(conn: Connection) -> None:
    """Take the database-wide writer lock for the rest of the transaction (seeding, bulk import)."""
    if conn.dialect.name == "postgresql":
        conn.execute(select(func.pg_advisory_xact_lock(ADVISORY_LOCK_KEY)))
    else:  # SQLite: any write takes the database's RESERVED lock until commit
        conn.execute(delete(META).where(META.c.key == "write_lock"))
