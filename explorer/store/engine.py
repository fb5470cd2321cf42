"""Opening the catalog database: which URL, the engine, migrations on open, first-start seeding.

Which database: an explicit URL (``--db``), else ``$HWEXPLORER_DB``, else a SQLite file in the user data
directory. ``postgresql://`` URLs use psycopg 3. A database URL's password never appears in messages:
everything shown goes through :func:`redact_url`.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs
from sqlalchemy import create_engine, event, func, inspect, select, text
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.pool import StaticPool

from .errors import CatalogDatabaseError
from .repository import CatalogRepository
from .tx import ADVISORY_LOCK_KEY

ENV_VAR = "HWEXPLORER_DB"
HEAD_REVISION = "0005"  # the newest migration in migrations/versions (a test checks they agree)
MIGRATIONS = Path(__file__).resolve().parent / "migrations"
MEMORY_URL = "sqlite://"


def default_database_path() -> Path:
    return Path(platformdirs.user_data_dir("hwexplorer", appauthor=False)) / "catalog.sqlite3"


def database_url(url: str | None = None) -> str:
    """The URL to use: ``url``, else ``$HWEXPLORER_DB``, else the default SQLite file."""
    chosen = url or os.environ.get(ENV_VAR) or ""
    return chosen.strip() or f"sqlite:///{default_database_path()}"


def parse_url(url: str) -> URL:
    """A SQLAlchemy URL for SQLite or PostgreSQL (psycopg 3); a bare path means a SQLite file."""
    if "://" not in url:
        return URL.create("sqlite", database=str(Path(url).expanduser()))
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise CatalogDatabaseError(
            "cannot read the database URL (expected sqlite:///PATH or postgresql://USER@HOST/DB)"
        ) from None
    backend = parsed.get_backend_name()
    if backend in ("postgres", "postgresql"):
        return parsed.set(drivername="postgresql+psycopg")
    if backend == "sqlite":
        return parsed
    raise CatalogDatabaseError(
        f"unsupported database '{backend}' in {redact_url(url)}; "
        "use sqlite:///PATH or postgresql://USER@HOST/DB"
    )


def redact_url(url: str | URL) -> str:
    """The URL with its password replaced by ``***`` (safe for output, logs and error messages)."""
    try:
        parsed = url if isinstance(url, URL) else make_url(url) if "://" in url else None
    except ArgumentError:
        return "<unreadable database URL>"
    if parsed is None:
        return str(url)
    return parsed.render_as_string(hide_password=True)


def _scrub(message: str, url: URL) -> str:
    """Remove the password from a driver message, in case the driver echoed it."""
    if url.password:
        message = message.replace(str(url.password), "***")
    return message


def create_catalog_engine(url: str | None = None) -> Engine:
    """An engine for the catalog (no migration). ``sqlite://`` is a private in-memory database (tests)."""
    parsed = parse_url(database_url(url))
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if database in ("", ":memory:"):
            engine = create_engine(parsed, poolclass=StaticPool, connect_args={"check_same_thread": False})
        else:
            try:
                Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise CatalogDatabaseError(
                    f"cannot create the folder for {redact_url(parsed)}: {exc.strerror}"
                ) from None
            engine = create_engine(parsed, connect_args={"timeout": 30})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(parsed, pool_pre_ping=True)


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys = ON")  # ON DELETE CASCADE of the child tables
    cursor.execute("PRAGMA busy_timeout = 30000")
    cursor.close()


def _alembic_config(connection: Connection):
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


def current_revision(conn: Connection) -> str | None:
    """The schema revision stamped by Alembic, read with plain SQL (importing Alembic costs ~0.3 s at start-up,
    so it is imported only when a migration actually has to run)."""
    if not inspect(conn).has_table("alembic_version"):
        return None
    return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest revision (PostgreSQL: serialized by an advisory lock)."""
    with engine.connect() as conn:
        if current_revision(conn) == HEAD_REVISION:
            return
    from alembic import command
    from alembic.util import CommandError

    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(select(func.pg_advisory_xact_lock(ADVISORY_LOCK_KEY)))
        try:
            command.upgrade(_alembic_config(conn), "head")
        except CommandError as exc:  # e.g. a revision this release does not know
            raise CatalogDatabaseError(
                f"the catalog database {redact_url(engine.url)} has schema revision "
                f"{current_revision(conn)!r}, which this version of hwexplorer does not know "
                f"(it knows up to {HEAD_REVISION!r}); use a newer hwexplorer ({exc})"
            ) from None


def open_catalog(
    url: str | None = None, seed: bool = True, catalog_dir: Path | None = None
) -> CatalogRepository:
    """Open (creating and migrating if needed) the catalog; seed or re-seed the shipped devices.

    Errors are :class:`CatalogDatabaseError` naming the database with its password masked.
    """
    from .seeding import ensure_seeded

    parsed = parse_url(database_url(url))
    engine = create_catalog_engine(url)
    try:
        migrate(engine)
        if seed:
            ensure_seeded(engine, catalog_dir)
    except SQLAlchemyError as exc:
        engine.dispose()
        reason = _scrub(str(getattr(exc, "orig", None) or exc).strip().splitlines()[0], parsed)
        raise CatalogDatabaseError(
            f"cannot open the catalog database {redact_url(parsed)}: {reason}"
        ) from None
    except BaseException:
        engine.dispose()
        raise
    return CatalogRepository(engine)
