"""Systems: the ``systems`` table, a catalog device times a count in a hierarchy of communication domains.

A system is stored whole as its system-file mapping (``data``, JSON: every figure keeps its text, source and note)
beside copies of what the system table shows and filters on; ``device_id`` references ``devices``. Databases made
by earlier releases gain the empty table here; the shipped systems are seeded when the catalog is next opened
(the shipped fingerprint now covers ``catalog/systems/``).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

INDEXED = ("vendor", "kind", "device_id", "origin")


def upgrade() -> None:
    op.create_table(
        "systems",
        sa.Column("id", sa.String(120), primary_key=True),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("vendor", sa.Text(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("device_id", sa.String(120), sa.ForeignKey("devices.id"), nullable=False),
        sa.Column("devices", sa.Integer(), nullable=False),
        sa.Column("node_devices", sa.Integer(), nullable=False),
        sa.Column("scale_up_bandwidth", sa.Float()),
        sa.Column("scale_out_bandwidth", sa.Float()),
        sa.Column("host_bandwidth", sa.Float()),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("origin", sa.String(8), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("overrides", sa.JSON(), nullable=False),
        sa.Column("shipped_json", sa.JSON()),
        sa.Column("shipped_hash", sa.String(64)),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    for column in INDEXED:
        op.create_index(f"ix_systems_{column}", "systems", [column])


def downgrade() -> None:
    for column in reversed(INDEXED):
        op.drop_index(f"ix_systems_{column}", "systems")
    op.drop_table("systems")
