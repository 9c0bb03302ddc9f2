"""plan reads: partial indexes of a plan's quarantined and published items

An approver's page of a promotion says how many of its plan items are quarantined and how many were
published, with the first of each (governance/storage/plans.py `quarantined_items`, `published_page`).
Without these, each count and each first page read all the run's plan items (10,000 on a big task, ~1.7 kB
each with their embedding) to find the few quarantined ones, or none published while the promotion waits
for approval. Both indexes hold only the items they name: quarantine is written once, by plan; an item
enters the published one when publish writes its outcome.

Revision ID: 0027_plan_reads
Revises: 0026_structured_episodes
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0027_plan_reads"
down_revision = "0026_structured_episodes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "promotion_plan_items_quarantined",
        "promotion_plan_items",
        ["workflow_id", "run_id", "idx"],
        postgresql_where=sa.text("quarantine IS NOT NULL"),
    )
    op.create_index(
        "promotion_plan_items_published",
        "promotion_plan_items",
        ["workflow_id", "run_id", "idx"],
        postgresql_where=sa.text("memory_id IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("promotion_plan_items_published", table_name="promotion_plan_items")
    op.drop_index("promotion_plan_items_quarantined", table_name="promotion_plan_items")
