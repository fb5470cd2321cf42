"""Revision 0002: a catalog database made by an earlier release gains the FP6 peak columns and keeps its rows."""

from __future__ import annotations

from alembic import command
from sqlalchemy import inspect, text

from explorer.store.engine import (
    HEAD_REVISION,
    _alembic_config,
    create_catalog_engine,
    current_revision,
    open_catalog,
)


def test_a_revision_0001_database_gains_the_fp6_columns_and_keeps_its_devices(tmp_path):
    url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    engine = create_catalog_engine(url)
    with engine.begin() as conn:
        command.upgrade(_alembic_config(conn), "0001")
        conn.execute(text(
            "INSERT INTO devices (id, name, vendor, kind, efficiency_compute, efficiency_memory, notes, "
            "peak_fp8, origin, version, overrides, created_at, updated_at) VALUES ('mine', 'Mine', 'Me', 'npu', "
            "1.0, 1.0, '', 1e15, 'user', 1, '[]', '2026-01-01 00:00:00', '2026-01-01 00:00:00')"))
    assert "peak_fp6" not in {c["name"] for c in inspect(engine).get_columns("devices")}
    engine.dispose()

    repo = open_catalog(url)  # migrates to the head revision, then seeds the shipped devices
    with repo.engine.connect() as conn:
        assert current_revision(conn) == HEAD_REVISION  # 0002 and every later revision
        assert {"peak_fp6", "peak_sparse_fp6"} <= {c["name"] for c in inspect(conn).get_columns("devices")}
        mine = conn.execute(text("SELECT peak_fp8, peak_fp6 FROM devices WHERE id = 'mine'")).one()
        assert mine == (1e15, None)
        b200 = conn.execute(text("SELECT peak_fp6, peak_sparse_fp6 FROM devices WHERE id = 'nvidia-b200'")).one()
        assert b200 == (4.5e15, 9e15)  # NVIDIA's "FP8/FP6 Tensor Core" row: 9 PFLOPS with sparsity, dense half
    repo.close()
