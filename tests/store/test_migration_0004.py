"""Revision 0004: a catalog database made by an earlier release gains the devices' calibration column; devices
stored before keep their rows (no calibration) and the shipped ones are re-seeded with theirs."""

from __future__ import annotations

from alembic import command
from sqlalchemy import inspect, text

from explorer.store.engine import HEAD_REVISION, _alembic_config, create_catalog_engine, current_revision, open_catalog


def test_a_revision_0003_database_gains_the_calibration_column(tmp_path):
    url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    engine = create_catalog_engine(url)
    with engine.begin() as conn:
        command.upgrade(_alembic_config(conn), "0003")
        conn.execute(text(
            "INSERT INTO devices (id, name, vendor, kind, efficiency_compute, efficiency_memory, notes, "
            "origin, version, overrides, created_at, updated_at) VALUES ('mine', 'Mine', 'Me', 'npu', "
            "1.0, 1.0, '', 'user', 1, '[]', '2026-01-01 00:00:00', '2026-01-01 00:00:00')"))
    assert "calibration" not in {c["name"] for c in inspect(engine).get_columns("devices")}
    engine.dispose()

    repo = open_catalog(url)
    try:
        with repo.engine.connect() as conn:
            assert current_revision(conn) == HEAD_REVISION  # 0004 and every later revision
            assert "calibration" in {c["name"] for c in inspect(conn).get_columns("devices")}
        assert repo.get("mine").calibration is None
        h100 = repo.get("nvidia-h100-sxm5").calibration
        assert h100.matrix["bf16"].source == "xla-sm90" and h100.vector.source == "bwbench-h100"
        assert repo.get("nvidia-a100-sxm4-80gb").calibration is None
    finally:
        repo.close()
