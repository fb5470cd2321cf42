"""FP6 peaks: the devices table gains ``peak_fp6`` and ``peak_sparse_fp6``.

Vendors print a separate FP6 rate (NVIDIA Blackwell "FP8/FP6 Tensor Core"; AMD CDNA 4 MXFP6), and the MX
formats' FP6 elements (OCP MXFP6) compute at it. The ``peaks`` table is keyed by precision name and needs no
change; only the derived per-precision copies in ``devices`` are columns.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

COLUMNS = ("peak_fp6", "peak_sparse_fp6")


def upgrade() -> None:
    with op.batch_alter_table("devices") as batch:
        for name in COLUMNS:
            batch.add_column(sa.Column(name, sa.Float()))


def downgrade() -> None:
    with op.batch_alter_table("devices") as batch:
        for name in reversed(COLUMNS):
            batch.drop_column(name)
