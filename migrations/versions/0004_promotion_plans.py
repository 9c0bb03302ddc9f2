"""promotion plans: candidates, plan items and an embedding cache in Postgres, not in Temporal's history

The claim check of the promotion gate (governance/storage/plans.py): `cognify` writes its candidates,
`plan` its items (decision, target, similarity, reason, content hash, embedding) a chunk at a time, and
`publish` reads them and writes back what it did; the workflow carries ids and counts only. The embedding
cache maps (model, sha256 of the exact text) to its vector, so a text is embedded once per model.

Revision ID: 0004_promotion_plans
Revises: 0003_trust_votes
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects import postgresql as pg

revision = "0004_promotion_plans"
down_revision = "0003_trust_votes"
branch_labels = None
depends_on = None

DIM = 384
TS = sa.DateTime(timezone=True)


def _run_key() -> list[sa.Column[str]]:
    return [
        sa.Column("workflow_id", sa.Text, primary_key=True),
        sa.Column("run_id", sa.Text, primary_key=True),
    ]


def _of_plan() -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["workflow_id", "run_id"],
        ["promotion_plans.workflow_id", "promotion_plans.run_id"],
        ondelete="CASCADE",
    )


def upgrade() -> None:
    op.create_table(
        "promotion_plans",
        *_run_key(),
        sa.Column("task_id", sa.String(128), nullable=False),
        sa.Column("candidate_count", sa.Integer, nullable=False),
        sa.Column("plan_total", sa.Integer, nullable=True),
        sa.Column("published_count", sa.Integer, nullable=True),
        sa.Column("created_at", TS, nullable=False, server_default=sa.func.now()),
        sa.Column("updated_at", TS, nullable=False, server_default=sa.func.now()),
    )
    op.create_index("promotion_plans_task_idx", "promotion_plans", ["task_id"])
    op.create_table(
        "promotion_candidates",
        *_run_key(),
        sa.Column("idx", sa.Integer, primary_key=True),
        sa.Column("memory_type", sa.String(32), nullable=False),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("canonical_key", sa.Text, nullable=True),
        sa.Column("importance", sa.Float, nullable=False),
        sa.Column("source_entry_ids", pg.ARRAY(sa.BigInteger), nullable=False),
        _of_plan(),
    )
    op.create_table(
        "promotion_plan_items",
        *_run_key(),
        sa.Column("idx", sa.Integer, primary_key=True),
        sa.Column("candidate_idx", sa.Integer, nullable=False),
        sa.Column("decision", sa.String(16), nullable=False),
        sa.Column("target_id", sa.Text, nullable=True),
        sa.Column("similarity", sa.Float, nullable=True),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("embedding", Vector(DIM), nullable=True),
        sa.Column("planned_at", TS, nullable=False, server_default=sa.func.now()),
        sa.Column("memory_id", sa.Text, nullable=True),
        sa.Column("citation", sa.String(16), nullable=True),
        sa.Column("action", sa.String(16), nullable=True),
        sa.Column("superseded_id", sa.Text, nullable=True),
        sa.Column("replayed", sa.Boolean, nullable=True),
        _of_plan(),
    )
    op.create_table(
        "embedding_cache",
        sa.Column("model", sa.Text, primary_key=True),
        sa.Column("text_sha256", sa.String(64), primary_key=True),
        sa.Column("embedding", Vector(DIM), nullable=False),
        sa.Column("created_at", TS, nullable=False, server_default=sa.func.now()),
    )


def downgrade() -> None:
    op.drop_table("embedding_cache")
    op.drop_table("promotion_plan_items")
    op.drop_table("promotion_candidates")
    op.drop_index("promotion_plans_task_idx", table_name="promotion_plans")
    op.drop_table("promotion_plans")
