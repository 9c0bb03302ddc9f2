"""follow-up promotions: a task's promotions numbered, each with its snapshot; tasks closed explicitly

- `promotions`: one row per promotion of a task (`number` 1, 2, …), its workflow id (`promote-<key>` for the
  first, `promote-<key>-<n>` after), the staging it takes (`after_seq` < seq <= `last_seq`, the snapshot
  its collect step fixed), its target scope, who asked, its outcome (null while it runs) and times. The
  next promotion takes the entries after the last snapshot that published (governance/promotions.py);
- `tasks.closed_at`, `closed_reason`, `closed_by`: a task closed by an orchestrator or a human, or erased,
  takes no more entries and no more promotions (an ended promotion no longer closes its task).

Upgrade records every task's existing promotion (`tasks.promotion_workflow_id`) as its promotion 1: its
outcome from the task's status, and, for one that collected already, the task's last seq as its snapshot
(staging appended after an ended promotion was refused until now, so nothing unpromoted is skipped; a
promotion under way took its snapshot before this migration, at most its last seq). Downgrade drops the
table and the columns: tasks keep the workflow id of their latest promotion.

Revision ID: 0025_followup_promotions
Revises: 0024_item_decisions
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025_followup_promotions"
down_revision = "0024_item_decisions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "promotions",
        sa.Column("task_id", sa.Text, sa.ForeignKey("tasks.id", ondelete="CASCADE"), nullable=False),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("workflow_id", sa.Text, nullable=False, unique=True),
        sa.Column("target_scope", sa.String(16), nullable=True),
        sa.Column("after_seq", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("last_seq", sa.BigInteger, nullable=True),
        sa.Column("outcome", sa.String(32), nullable=True),
        sa.Column("requested_by", sa.String(64), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
        sa.Column("snapshot_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("task_id", "number"),
        sa.CheckConstraint("number >= 1", name="promotions_number_positive"),
    )
    op.add_column("tasks", sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("tasks", sa.Column("closed_reason", sa.Text, nullable=True))
    op.add_column("tasks", sa.Column("closed_by", sa.String(64), nullable=True))
    op.execute(
        """
        INSERT INTO promotions (task_id, number, workflow_id, after_seq, last_seq, outcome, started_at,
                                snapshot_at, ended_at)
        SELECT t.id, 1, t.promotion_workflow_id, 0,
               CASE WHEN t.status IN ('promoted', 'unverified', 'rejected', 'promoting') THEN t.next_seq END,
               CASE t.status WHEN 'promoted' THEN 'published' WHEN 'unverified' THEN 'unverified'
                             WHEN 'rejected' THEN 'rejected' WHEN 'failed' THEN 'failed' END,
               t.created_at,
               CASE WHEN t.status IN ('promoted', 'unverified', 'rejected', 'promoting')
                    THEN t.created_at END,
               t.ended_at
        FROM tasks t
        WHERE t.promotion_workflow_id IS NOT NULL
        ON CONFLICT DO NOTHING
        """
    )


def downgrade() -> None:
    op.drop_column("tasks", "closed_by")
    op.drop_column("tasks", "closed_reason")
    op.drop_column("tasks", "closed_at")
    op.drop_table("promotions")
