"""Named calibrations: the ``named_calibrations`` table, a device's kernel calibrations kept under names.

Each row is one calibration fitted to one measurement file (``hwexplorer calibrate kernels``, the app's Fidelity
chooser): its name and source key (``fit-<name>``), the curves (the device file's ``calibration:`` block form), and
its provenance (file, format, precision, date fitted, kernels fitted, MAPE per kind). Rows belong to a device and go
with it (``ON DELETE CASCADE``). Databases made by earlier releases gain the empty table; nothing else changes.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "named_calibrations",
        sa.Column("device_id", sa.String(120), sa.ForeignKey("devices.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("key", sa.String(200), primary_key=True),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("file", sa.Text(), nullable=False),
        sa.Column("format", sa.String(8), nullable=False),
        sa.Column("precision", sa.String(8), nullable=False),
        sa.Column("fitted", sa.String(10), nullable=False),
        sa.Column("measurements", sa.Integer(), nullable=False),
        sa.Column("mape", sa.JSON(), nullable=False),
        sa.Column("curves", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("named_calibrations")
