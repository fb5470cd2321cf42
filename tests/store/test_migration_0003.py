"""Revision 0003: a catalog database at revision 0002 (a user's, seeded by the earlier release) gains the
``systems`` table, keeps its devices and edits, and gets the shipped systems; on SQLite and on PostgreSQL."""

from __future__ import annotations

from alembic import command
from sqlalchemy import inspect, text

from explorer.core.hardware.catalog_files import load_shipped_systems
from explorer.store.engine import HEAD_REVISION, _alembic_config, create_catalog_engine, current_revision, open_catalog


def test_a_revision_0002_database_gains_the_systems_and_keeps_its_devices(catalog_url):
    engine = create_catalog_engine(catalog_url)
    with engine.begin() as conn:
        command.upgrade(_alembic_config(conn), "0002")
        conn.execute(text(
            "INSERT INTO devices (id, name, vendor, kind, efficiency_compute, efficiency_memory, notes, "
            "peak_fp6, origin, version, overrides, created_at, updated_at) VALUES ('mine', 'Mine', 'Me', 'npu', "
            "1.0, 1.0, '', 1e15, 'user', 3, '[]', '2026-01-01 00:00:00+00', '2026-01-01 00:00:00+00')"))
        # the earlier release stored the fingerprint of the device files it seeded
        conn.execute(text("INSERT INTO catalog_meta (key, value) VALUES ('shipped_fingerprint', 'release-0002')"))
    assert not inspect(engine).has_table("systems")
    engine.dispose()

    repo = open_catalog(catalog_url)  # migrates to the head revision, then re-seeds: the systems arrive
    try:
        with repo.engine.connect() as conn:
            assert current_revision(conn) == HEAD_REVISION  # 0003 and every later revision
            assert inspect(conn).has_table("systems")
        mine = repo.record("mine")
        assert (mine.origin, mine.version, mine.device.peak) == ("user", 3, {})  # its row is kept as it was
        assert repo.systems() == tuple(sorted(load_shipped_systems(), key=lambda s: s.id))
        assert {r.origin for r in repo.system_rows()} == {"shipped"} and len(repo.system_rows()) == 11
    finally:
        repo.close()
