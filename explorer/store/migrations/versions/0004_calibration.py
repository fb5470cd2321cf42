"""Calibration: the devices table gains ``calibration``, the device file's ``calibration:`` block as JSON.

The block (fitted efficiency curves with their sources and fit provenance, ``docs/device-file.md``) is read and
written whole, like the file's own form; a device without one keeps NULL and is analysed at the ideal roofline.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("devices") as batch:
        batch.add_column(sa.Column("calibration", sa.JSON()))


def downgrade() -> None:
    with op.batch_alter_table("devices") as batch:
        batch.drop_column("calibration")
