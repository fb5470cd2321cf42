"""Alembic migrations of the catalog database (run programmatically by explorer.store.engine.migrate)."""
