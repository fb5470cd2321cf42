"""Alembic environment. The application runs it through ``explorer.store.engine.migrate``, which passes an
open connection in ``config.attributes["connection"]``; no alembic.ini is needed at runtime.

For writing a new migration by hand-run Alembic commands, a ``sqlalchemy.url`` main option works too.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from explorer.store.schema import Base


def _configure_and_run(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",  # SQLite cannot ALTER most things in place
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run() -> None:
    config = context.config
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure_and_run(connection)
        return
    url = config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("no database: call explorer.store.engine.migrate() or set sqlalchemy.url")
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            _configure_and_run(conn)
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise RuntimeError("offline (--sql) migrations are not supported; run them against a database")
run()
