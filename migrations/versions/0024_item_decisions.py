"""item decisions: an approver's per-item rejections and edits of a promotion's plan

- `promotion_item_decisions`: one row per plan item an approver rejected (with the reason) or edited (the
  original and the new text, redacted, and the word diffs), under the decision's id (the gateway's grant,
  or the approver check's request id for a Temporal UI signal) and the promotion run whose plan it
  decides. `applied_at` is set when publish applied it. The workflow's history carries the decision's id,
  the indexes and the decisions only; the reasons and texts live here, and go with the plan (cascade).

Revision ID: 0024_item_decisions
Revises: 0023_idempotency_key
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0024_item_decisions"
down_revision = "0023_idempotency_key"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "promotion_item_decisions",
        sa.Column("workflow_id", sa.Text, primary_key=True),
        sa.Column("decision_id", sa.Text, primary_key=True),
        sa.Column("idx", sa.Integer, primary_key=True),
        sa.Column("run_id", sa.Text, nullable=False),
        sa.Column("task_id", sa.Text, nullable=False),
        sa.Column("decision", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text, nullable=False, server_default=""),
        sa.Column("original_title", sa.Text, nullable=False),
        sa.Column("original_content", sa.Text, nullable=False),
        sa.Column("title", sa.Text, nullable=True),
        sa.Column("content", sa.Text, nullable=True),
        sa.Column("diff", JSONB, nullable=True),
        sa.Column("decided_by", sa.Text, nullable=False),
        sa.Column("created_at", TS, nullable=False, server_default=sa.func.now()),
        sa.Column("applied_at", TS, nullable=True),
        sa.CheckConstraint("decision IN ('reject', 'edit')", name="promotion_item_decisions_kind"),
        sa.ForeignKeyConstraint(
            ["workflow_id", "run_id"],
            ["promotion_plans.workflow_id", "promotion_plans.run_id"],
            ondelete="CASCADE",
        ),
    )
    op.create_index(
        "promotion_item_decisions_run_idx", "promotion_item_decisions", ["workflow_id", "run_id", "idx"]
    )


def downgrade() -> None:
    op.drop_index("promotion_item_decisions_run_idx", table_name="promotion_item_decisions")
    op.drop_table("promotion_item_decisions")
