"""quarantine: why a plan item carries instructions aimed at agents

- `promotion_plan_items.quarantine` (text, nullable): the reasons governance/instructions.py gives for a
  candidate that tells its reader to run a command, insert code, ignore its instructions or do something
  else than its task. A plan holding such an item waits for a human's approval at any scope.

Revision ID: 0017_quarantine
Revises: 0016_webhooks
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017_quarantine"
down_revision = "0016_webhooks"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("promotion_plan_items", sa.Column("quarantine", sa.Text, nullable=True))


def downgrade() -> None:
    op.drop_column("promotion_plan_items", "quarantine")
