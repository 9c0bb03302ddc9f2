"""trust votes: one counted validation per (memory, principal, source), one feedback vote per principal

A principal's repeated validation of a memory with the same source, or its repeated feedback, must not move
trust again and again: `memory_validations` remembers which validations were counted, `memory_votes` holds
the latest vote of each principal (usefulness is computed from these, governance/trust.py).

Revision ID: 0003_trust_votes
Revises: 0002_default_policy
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision = "0003_trust_votes"
down_revision = "0002_default_policy"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "memory_validations",
        sa.Column(
            "memory_id",
            pg.UUID(as_uuid=False),
            sa.ForeignKey("memories.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("actor_id", sa.String(64), primary_key=True),
        sa.Column("source", sa.String(32), primary_key=True),
        sa.Column("created_at", TS, nullable=False, server_default=sa.func.now()),
    )
    op.create_table(
        "memory_votes",
        sa.Column(
            "memory_id",
            pg.UUID(as_uuid=False),
            sa.ForeignKey("memories.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("actor_id", sa.String(64), primary_key=True),
        sa.Column("helpful", sa.Boolean, nullable=False),
        sa.Column("created_at", TS, nullable=False, server_default=sa.func.now()),
        sa.Column("updated_at", TS, nullable=False, server_default=sa.func.now()),
    )


def downgrade() -> None:
    op.drop_table("memory_votes")
    op.drop_table("memory_validations")
