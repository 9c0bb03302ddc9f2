"""histories: a promotion run's critique lives in Postgres, not in Temporal's history

- `promotion_plans.critique` (text, nullable): cognify's critique of the run, redacted. The workflow's
  history carries ids, counts and states only (docs/privacy.md), so what an approver reads of the run
  (critique, plan, notes) is served by loregate from here, and erasure reaches it.

Revision ID: 0022_histories
Revises: 0021_working_memory
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022_histories"
down_revision = "0021_working_memory"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("promotion_plans", sa.Column("critique", sa.Text, nullable=True))


def downgrade() -> None:
    op.drop_column("promotion_plans", "critique")
