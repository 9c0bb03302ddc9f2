"""change requests: supersede and retire at validated scopes wait for an approval

A supersede or retire of a memory at a scope whose policy requires validation, by anyone but a human
allowed to approve that scope, is a row here and a `ChangeRequestWorkflow` (`change-<id>`) that waits for
an approver. The proposed content (redacted), title, key and embedding stay in Postgres; the workflow
carries the request's id. `dedupe_key` + `request_hash` bind a client's idempotency key to its request.

Revision ID: 0006_change_requests
Revises: 0005_staging_partitions
Create Date: 2026-12-09
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects import postgresql as pg

revision = "0006_change_requests"
down_revision = "0005_staging_partitions"
branch_labels = None
depends_on = None

DIM = 384
TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "change_requests",
        sa.Column("id", pg.UUID(as_uuid=False), primary_key=True),
        sa.Column("memory_id", pg.UUID(as_uuid=False), nullable=False),
        # the memory's tenant and scope, kept so a listing filters without joining every memory
        sa.Column("org", sa.Text, nullable=False),
        sa.Column("project", sa.Text, nullable=True),
        sa.Column("scope", sa.String(16), nullable=False),
        sa.Column("operation", sa.String(16), nullable=False),
        sa.Column("content", sa.Text, nullable=True),
        sa.Column("title", sa.Text, nullable=True),
        sa.Column("canonical_key", sa.Text, nullable=True),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("valid_from_commit", sa.Text, nullable=True),
        sa.Column("embedding", Vector(DIM), nullable=True),
        sa.Column("redaction_counts", pg.JSONB, nullable=False, server_default="{}"),
        sa.Column("requested_by", sa.String(64), nullable=False),
        sa.Column("actor_type", sa.String(16), nullable=False),
        sa.Column("state", sa.String(32), nullable=False, server_default="awaiting_approval"),
        sa.Column("workflow_id", sa.Text, nullable=True),
        sa.Column("decided_by", sa.String(64), nullable=True),
        sa.Column("decided_by_type", sa.String(16), nullable=True),
        sa.Column("decision_note", sa.Text, nullable=True),
        sa.Column("result_memory_id", pg.UUID(as_uuid=False), nullable=True),
        sa.Column("dedupe_key", sa.Text, nullable=True, unique=True),
        sa.Column("request_hash", sa.String(64), nullable=True),
        sa.Column("created_at", TS, nullable=False, server_default=sa.func.now()),
        sa.Column("decided_at", TS, nullable=True),
        sa.CheckConstraint("operation IN ('supersede', 'retire')", name="change_requests_operation"),
        sa.CheckConstraint(
            "operation = 'retire' OR content IS NOT NULL", name="change_requests_supersede_has_content"
        ),
    )
    op.create_index("change_requests_org_state_idx", "change_requests", ["org", "state", "created_at"])
    op.create_index("change_requests_memory_idx", "change_requests", ["memory_id"])


def downgrade() -> None:
    op.drop_index("change_requests_memory_idx", table_name="change_requests")
    op.drop_index("change_requests_org_state_idx", table_name="change_requests")
    op.drop_table("change_requests")
