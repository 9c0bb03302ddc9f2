"""retention: count a retention group's active memories by index

Retention keeps at least N active memories per (org, project, scope, type) group and checks the count again
under each batch's locks (governance/retention.py, activities/retention.py); this partial index on the
group's columns makes that count an index scan instead of a scan of every memory.

Revision ID: 0010_retention
Revises: 0009_learning
Create Date: 2026-11-23
"""

from __future__ import annotations

from alembic import op

revision = "0010_retention"
down_revision = "0009_learning"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "CREATE INDEX memories_retention_group ON memories "
        "(org, (COALESCE(project, '')), scope, memory_type) WHERE deprecated_at IS NULL"
    )


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS memories_retention_group")
