"""Initial catalog schema: devices, sources, peaks, MAC energies, memory levels, engines, links, conflicts.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# frozen copy of explorer.core.precision.PRECISIONS at this revision
PRECISIONS = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4", "fp4")

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _cited(prefix: str) -> list[sa.Column]:
    """A cited figure: SI value, text as written, source key, note."""
    names = (
        ("value", "text", "source", "note")
        if not prefix
        else (prefix, f"{prefix}_text", f"{prefix}_source", f"{prefix}_note")
    )
    return [sa.Column(names[0], sa.Float()), *(sa.Column(n, sa.Text()) for n in names[1:])]


def _device_fk() -> sa.Column:
    return sa.Column(
        "device_id", sa.String(120), sa.ForeignKey("devices.id", ondelete="CASCADE"), primary_key=True
    )


def upgrade() -> None:
    op.create_table(
        "catalog_meta",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text(), nullable=False),
    )
    op.create_table(
        "devices",
        sa.Column("id", sa.String(120), primary_key=True),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("vendor", sa.Text(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("tier", sa.String(16)),
        sa.Column("family", sa.Text()),
        sa.Column("year", sa.Integer()),
        *_cited("clock"),
        *_cited("tdp"),
        *_cited("price"),
        sa.Column("price_date", sa.Text()),
        *_cited("cloud_price"),
        sa.Column("efficiency_compute", sa.Float(), nullable=False),
        sa.Column("efficiency_memory", sa.Float(), nullable=False),
        sa.Column("notes", sa.Text(), nullable=False),
        sa.Column("bandwidth", sa.Float()),
        sa.Column("capacity", sa.Float()),
        *(sa.Column(f"peak_{p}", sa.Float()) for p in PRECISIONS),
        *(sa.Column(f"peak_sparse_{p}", sa.Float()) for p in PRECISIONS),
        sa.Column("origin", sa.String(8), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("overrides", sa.JSON(), nullable=False),
        sa.Column("shipped_json", sa.JSON()),
        sa.Column("shipped_hash", sa.String(64)),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    for column in ("vendor", "kind", "tier", "tdp", "price", "bandwidth", "capacity", "origin"):
        op.create_index(f"ix_devices_{column}", "devices", [column])
    op.create_table(
        "sources",
        _device_fk(),
        sa.Column("key", sa.Text(), primary_key=True),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("date", sa.Text(), nullable=False),
    )
    op.create_table(
        "peaks",
        _device_fk(),
        sa.Column("sparse", sa.Boolean(), primary_key=True),
        sa.Column("precision", sa.String(8), primary_key=True),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("value", sa.Float(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("source", sa.Text()),
        sa.Column("note", sa.Text()),
    )
    op.create_index("ix_peaks_lookup", "peaks", ["precision", "sparse", "value"])
    op.create_table(
        "mac_energies",
        _device_fk(),
        sa.Column("precision", sa.String(8), primary_key=True),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("value", sa.Float(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("source", sa.Text()),
        sa.Column("note", sa.Text()),
    )
    op.create_table(
        "memory_levels",
        _device_fk(),
        sa.Column("position", sa.Integer(), primary_key=True),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("instances", sa.Integer(), nullable=False),
        *_cited("capacity"),
        *_cited("bandwidth"),
        *_cited("energy"),
        *_cited("latency"),
    )
    op.create_table(
        "matrix_engines",
        _device_fk(),
        sa.Column("type", sa.String(16), nullable=False),
        sa.Column("dataflow", sa.String(4)),
        *(sa.Column(n, sa.Integer()) for n in ("tile_m", "tile_n", "tile_k", "block_m", "block_n")),
        *_cited("rows"),
        *_cited("cols"),
        *_cited("units"),
        *_cited("sm_count"),
    )
    op.create_table(
        "links",
        _device_fk(),
        sa.Column("role", sa.String(16), primary_key=True),
        sa.Column("position", sa.Integer(), primary_key=True),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("direction", sa.String(16), nullable=False),
        *_cited("bandwidth"),
    )
    op.create_table(
        "conflicts",
        _device_fk(),
        sa.Column("position", sa.Integer(), primary_key=True),
        sa.Column("field", sa.Text(), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
    )


def downgrade() -> None:
    for table in (
        "conflicts",
        "links",
        "matrix_engines",
        "memory_levels",
        "mac_energies",
        "peaks",
        "sources",
        "devices",
        "catalog_meta",
    ):
        op.drop_table(table)
