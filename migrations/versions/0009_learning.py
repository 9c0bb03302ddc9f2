"""learning: bug patterns' error signatures and fix statistics

- `bug_patterns` holds, per published bug pattern, its error signature (type and masked message, see
  governance/bug_signature.py), how often it occurred, when it was last seen, and the solutions tried
  against it, each with its successes and attempts (JSON list). A recurrence merges into the pattern whose
  canonical key (`bug.<hash of the signature>`) it shares and updates this row in the same transaction.

Revision ID: 0009_learning
Revises: 0008_erasure
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision = "0009_learning"
down_revision = "0008_erasure"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "bug_patterns",
        sa.Column(
            "memory_id",
            pg.UUID(as_uuid=False),
            sa.ForeignKey("memories.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("scope_key", sa.Text, nullable=False),
        sa.Column("error_type", sa.Text, nullable=False),
        sa.Column("signature", sa.Text, nullable=False),
        sa.Column("occurrences", sa.Integer, nullable=False, server_default="0"),
        sa.Column("first_seen", TS, nullable=False, server_default=sa.func.now()),
        sa.Column("last_seen", TS, nullable=False, server_default=sa.func.now()),
        sa.Column("solutions", pg.JSONB, nullable=False, server_default=sa.text("'[]'::jsonb")),
    )
    op.create_index("bug_patterns_signature_idx", "bug_patterns", ["signature", "scope_key"])


def downgrade() -> None:
    op.drop_index("bug_patterns_signature_idx", table_name="bug_patterns")
    op.drop_table("bug_patterns")
