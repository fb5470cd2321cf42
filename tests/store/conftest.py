"""Backends of the catalog tests: SQLite everywhere; PostgreSQL when ``HWEXPLORER_TEST_PG_URL`` names a server
(``export HWEXPLORER_TEST_PG_URL=$(bash .ci/start_postgres.sh)``), else those tests are skipped with the reason.

``catalog_url`` runs one test body on both: a SQLite file, and a private PostgreSQL schema dropped afterwards.
"""

from __future__ import annotations

import os
import uuid

import pytest
from sqlalchemy import create_engine
from sqlalchemy.exc import OperationalError
from sqlalchemy.schema import CreateSchema, DropSchema

from explorer.store.engine import parse_url, redact_url

PG_ENV = "HWEXPLORER_TEST_PG_URL"


@pytest.fixture(scope="session")
def server_url():
    url = os.environ.get(PG_ENV, "").strip()
    if not url:
        pytest.skip(f"{PG_ENV} is not set (CI sets it from .ci/start_postgres.sh); PostgreSQL tests not run")
    engine = create_engine(parse_url(url))
    try:
        with engine.connect():
            pass
    except OperationalError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else "connection failed"
        pytest.skip(f"PostgreSQL at {redact_url(url)} is unreachable ({reason}); PostgreSQL tests not run")
    finally:
        engine.dispose()
    return url


@pytest.fixture
def pg_url(server_url):
    """A URL whose connections work in a fresh, private schema."""
    schema = f"hwx_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(parse_url(server_url))
    with admin.begin() as conn:
        conn.execute(CreateSchema(schema))
    url = parse_url(server_url).update_query_dict({"options": f"-csearch_path={schema}"})
    yield url.render_as_string(hide_password=False)
    with admin.begin() as conn:
        conn.execute(DropSchema(schema, cascade=True))
    admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def catalog_url(request, tmp_path):
    """An empty catalog database on each backend (nothing created yet: ``open_catalog`` migrates it)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'catalog.sqlite3'}"
    return request.getfixturevalue("pg_url")
