"""Migration scripts, one per schema revision (Alembic ignores this file)."""
