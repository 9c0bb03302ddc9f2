"""derivation and expiry: what a memory builds on, stale marks, and candidate expiries

- `memory_derivations` links a memory to the memories it was derived from (a skill or bug pattern built from
  a decision's fact in the same promotion). When a source is superseded or retired, the memories derived
  from it are marked stale (`memories.stale_at`, `stale_reason`) until a human confirms or retires them.
- `promotion_candidates.expires_at` carries a staging entry's `expires_at` / `ttl_seconds` from cognify to
  publish (the plan is a claim check in Postgres, so the expiry travels there, not in Temporal's history).

Revision ID: 0007_derivation_and_expiry
Revises: 0006_change_requests
Create Date: 2026-12-09
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision = "0007_derivation_and_expiry"
down_revision = "0006_change_requests"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "memory_derivations",
        sa.Column(
            "memory_id",
            pg.UUID(as_uuid=False),
            sa.ForeignKey("memories.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column(
            "derived_from_id",
            pg.UUID(as_uuid=False),
            sa.ForeignKey("memories.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("task_id", sa.String(128), nullable=True),
        sa.Column("created_at", TS, nullable=False, server_default=sa.func.now()),
    )
    op.create_index("memory_derivations_source_idx", "memory_derivations", ["derived_from_id"])
    op.add_column("memories", sa.Column("stale_at", TS, nullable=True))
    op.add_column("memories", sa.Column("stale_reason", sa.Text, nullable=True))
    op.create_index(
        "memories_stale_idx",
        "memories",
        ["org", "scope_key"],
        postgresql_where=sa.text("stale_at IS NOT NULL AND deprecated_at IS NULL"),
    )
    op.add_column("promotion_candidates", sa.Column("expires_at", TS, nullable=True))


def downgrade() -> None:
    op.drop_column("promotion_candidates", "expires_at")
    op.drop_index("memories_stale_idx", table_name="memories")
    op.drop_column("memories", "stale_reason")
    op.drop_column("memories", "stale_at")
    op.drop_index("memory_derivations_source_idx", table_name="memory_derivations")
    op.drop_table("memory_derivations")
