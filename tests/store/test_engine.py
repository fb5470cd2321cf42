"""Opening the catalog database: URLs, password redaction, migrations, first-start seeding."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect

from explorer.core.hardware.catalog_files import load_shipped_devices, shipped_catalog_dir
from explorer.core.precision import PRECISIONS
from explorer.store.engine import (
    HEAD_REVISION,
    MIGRATIONS,
    create_catalog_engine,
    database_url,
    default_database_path,
    migrate,
    open_catalog,
    parse_url,
    redact_url,
)
from explorer.store.errors import CatalogDatabaseError
from explorer.store.schema import Base


def test_redact_url_masks_the_password():
    url = "postgresql://alice:s3cr%40t-pw@db.example.org:5432/catalog"
    shown = redact_url(url)
    assert "s3cr" not in shown and "***" in shown
    assert shown == "postgresql://alice:***@db.example.org:5432/catalog"
    assert redact_url("sqlite:////tmp/x.sqlite3") == "sqlite:////tmp/x.sqlite3"


def test_parse_url_picks_psycopg_3_and_accepts_a_bare_path(tmp_path):
    assert parse_url("postgresql://u@h/db").drivername == "postgresql+psycopg"
    assert parse_url("postgres://u@h/db").drivername == "postgresql+psycopg"
    bare = parse_url(str(tmp_path / "team.sqlite3"))
    assert bare.drivername == "sqlite" and bare.database == str(tmp_path / "team.sqlite3")


def test_unsupported_database_is_refused_without_showing_the_password():
    with pytest.raises(CatalogDatabaseError) as exc:
        parse_url("mysql://bob:hunter2@localhost/catalog")
    assert "mysql" in str(exc.value) and "hunter2" not in str(exc.value)


def test_url_precedence_flag_then_environment_then_user_data_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("HWEXPLORER_DB", raising=False)
    assert default_database_path() == tmp_path / "data" / "hwexplorer" / "catalog.sqlite3"
    assert database_url() == f"sqlite:///{tmp_path / 'data' / 'hwexplorer' / 'catalog.sqlite3'}"
    monkeypatch.setenv("HWEXPLORER_DB", "sqlite:////srv/team.sqlite3")
    assert database_url() == "sqlite:////srv/team.sqlite3"
    assert database_url("sqlite://") == "sqlite://"


def test_unreachable_server_error_names_the_database_but_not_the_password():
    url = "postgresql://carol:pa55w0rd-xyz@127.0.0.1:1/catalog?connect_timeout=2"
    with pytest.raises(CatalogDatabaseError) as exc:
        open_catalog(url)
    message = str(exc.value)
    assert "pa55w0rd-xyz" not in message
    assert "carol:***@127.0.0.1:1/catalog" in message
    assert exc.value.__cause__ is None and exc.value.__suppress_context__


def test_migrations_create_exactly_the_orm_schema():
    engine = create_catalog_engine("sqlite://")
    migrate(engine)
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        assert compare_metadata(context, Base.metadata) == []
        assert context.get_current_revision() == HEAD_REVISION
    columns = {c["name"] for c in inspect(engine).get_columns("devices")}
    assert {f"peak_{p}" for p in PRECISIONS} | {f"peak_sparse_{p}" for p in PRECISIONS} <= columns
    engine.dispose()


def test_head_revision_constant_matches_the_migration_scripts():
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    assert ScriptDirectory.from_config(config).get_current_head() == HEAD_REVISION


def test_first_start_creates_and_seeds_a_sqlite_file(tmp_path):
    path = tmp_path / "sub" / "catalog.sqlite3"
    repo = open_catalog(f"sqlite:///{path}")
    shipped = load_shipped_devices()
    assert path.is_file()
    assert repo.count() == len(shipped) > 0
    assert all(r.origin == "shipped" and r.version == 1 for r in repo.rows())
    repo.close()
    # a second start finds the same shipped files and changes nothing
    again = open_catalog(f"sqlite:///{path}")
    assert all(r.version == 1 for r in again.rows())
    assert again.count() == len(shipped)
    again.close()


def test_changed_shipped_files_trigger_a_reseed(tmp_path):
    folder = tmp_path / "catalog"
    shutil.copytree(shipped_catalog_dir(), folder)
    url = f"sqlite:///{tmp_path / 'c.sqlite3'}"
    open_catalog(url, catalog_dir=folder).close()
    first = sorted(folder.iterdir())[0]
    device_id = first.stem
    text = first.read_text(encoding="utf-8")
    first.write_text(
        text.replace(f"id: {device_id}\n", f"id: {device_id}\nfamily: Reseeded family\n", 1)
        if "\nfamily:" not in text
        else "\n".join(
            "family: Reseeded family" if line.startswith("family:") else line for line in text.splitlines()
        )
        + "\n",
        encoding="utf-8",
    )
    repo = open_catalog(url, catalog_dir=folder)
    assert repo.get(device_id).family == "Reseeded family"
    assert repo.record(device_id).version == 2
    repo.close()


def test_missing_catalog_folder_opens_an_empty_catalog(tmp_path):
    repo = open_catalog("sqlite://", catalog_dir=Path(tmp_path / "nowhere"))
    assert repo.count() == 0
    repo.close()


def test_a_database_from_a_newer_release_is_refused_clearly(tmp_path):
    from sqlalchemy import column, table
    from sqlalchemy import update as sql_update

    url = f"sqlite:///{tmp_path / 'newer.sqlite3'}"
    open_catalog(url, seed=False).close()
    engine = create_catalog_engine(url)
    with engine.begin() as conn:
        conn.execute(sql_update(table("alembic_version", column("version_num"))).values(version_num="9999"))
    engine.dispose()
    with pytest.raises(CatalogDatabaseError, match="schema revision '9999'.*newer hwexplorer"):
        open_catalog(url)
