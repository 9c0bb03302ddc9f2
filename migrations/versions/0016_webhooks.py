"""webhooks: notifications an admin registers per tenant, and every delivery of them

- `webhooks`: a tenant (org, or one project of it), the URL, its signing secret (needed to sign each
  delivery, so kept; shown once at registration), the events it wants, who registered it.
- `webhook_deliveries`: one row per (webhook, event key): the event, its facts (ids, states, counts),
  attempts, the last HTTP status or error, delivered or failed. The unique key makes each event reach each
  webhook once, whichever worker found it.

Revision ID: 0016_webhooks
Revises: 0015_staging_quotas
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision = "0016_webhooks"
down_revision = "0015_staging_quotas"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "webhooks",
        sa.Column("id", pg.UUID(as_uuid=False), primary_key=True),
        sa.Column("org", sa.Text, nullable=False),
        sa.Column("project", sa.Text, nullable=True),
        sa.Column("url", sa.Text, nullable=False),
        sa.Column("secret", sa.Text, nullable=False),
        sa.Column("events", pg.ARRAY(sa.Text), nullable=False),
        sa.Column("created_by", sa.String(64), nullable=False),
        sa.Column("created_at", TS, nullable=False, server_default=sa.func.now()),
    )
    op.create_index("webhooks_tenant_idx", "webhooks", ["org", "project"])
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column(
            "webhook_id",
            pg.UUID(as_uuid=False),
            sa.ForeignKey("webhooks.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("event", sa.String(64), nullable=False),
        sa.Column("event_key", sa.Text, nullable=False),
        sa.Column("facts", pg.JSONB, nullable=False, server_default="{}"),
        sa.Column("state", sa.String(16), nullable=False, server_default="pending"),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("last_status", sa.Integer, nullable=True),
        sa.Column("last_error", sa.Text, nullable=True),
        sa.Column("created_at", TS, nullable=False, server_default=sa.func.now()),
        sa.Column("last_attempt_at", TS, nullable=True),
        sa.Column("delivered_at", TS, nullable=True),
        sa.UniqueConstraint("webhook_id", "event_key", name="webhook_deliveries_once"),
    )
    op.create_index(
        "webhook_deliveries_pending_idx",
        "webhook_deliveries",
        ["id"],
        postgresql_where=sa.text("state = 'pending'"),
    )


def downgrade() -> None:
    op.drop_table("webhook_deliveries")
    op.drop_table("webhooks")
