"""initial schema: principals, keys, casbin rules, tasks, staging, memories, events, approaches

Revision ID: 0001_initial_schema
Revises:
Create Date: 2026-11-21
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects import postgresql as pg

revision = "0001_initial_schema"
down_revision = None
branch_labels = None
depends_on = None

DIM = 384
TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")

    op.create_table(
        "principals",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("actor_type", sa.String(16), nullable=False),
        sa.Column("org", sa.Text, nullable=False),
        sa.Column("project", sa.Text, nullable=True),
        sa.Column("is_admin", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("created_at", TS, nullable=False, server_default=sa.func.now()),
        sa.CheckConstraint(
            "actor_type IN ('agent','orchestrator','human','system')", name="principals_actor_type_check"
        ),
    )
    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column(
            "principal_id", sa.String(64), sa.ForeignKey("principals.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("key_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", TS, nullable=False, server_default=sa.func.now()),
        sa.Column("revoked_at", TS, nullable=True),
    )
    # pycasbin's SQLAlchemy adapter table (its default name and shape)
    op.create_table(
        "casbin_rule",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("ptype", sa.String(255)),
        *[sa.Column(f"v{i}", sa.String(255)) for i in range(6)],
    )

    op.create_table(
        "tasks",
        sa.Column("id", sa.String(128), primary_key=True),
        sa.Column("org", sa.Text, nullable=False),
        sa.Column("project", sa.Text, nullable=False),
        sa.Column("worktree", sa.Text, nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("status", sa.String(32), nullable=False, server_default="open"),
        sa.Column("next_seq", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("promotion_workflow_id", sa.Text, nullable=True),
        sa.Column("created_by", sa.String(64), nullable=False),
        sa.Column("created_at", TS, nullable=False, server_default=sa.func.now()),
    )
    op.create_index("tasks_tenant_idx", "tasks", ["org", "project"])

    op.create_table(
        "staging_entries",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("task_id", sa.String(128), sa.ForeignKey("tasks.id"), nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("actor_id", sa.String(64), nullable=False),
        sa.Column("actor_type", sa.String(16), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        # json, not jsonb: the audit log keeps the payload exactly as sent (number forms, key order)
        sa.Column("payload", pg.JSON, nullable=True),
        sa.Column("idempotency_key", sa.Text, nullable=True),
        sa.Column("request_hash", sa.String(64), nullable=False),
        sa.Column("created_at", TS, nullable=False, server_default=sa.func.now()),
        sa.UniqueConstraint("task_id", "seq", name="staging_entries_task_seq_key"),
    )
    op.create_index(
        "staging_entries_idempotency_idx",
        "staging_entries",
        ["actor_id", "idempotency_key"],
        unique=True,
        postgresql_where=sa.text("idempotency_key IS NOT NULL"),
    )

    op.create_table(
        "memories",
        sa.Column("id", pg.UUID(as_uuid=False), primary_key=True),
        sa.Column("citation", sa.String(16), nullable=False, unique=True),
        sa.Column("memory_type", sa.String(32), nullable=False),
        sa.Column("scope", sa.String(16), nullable=False),
        sa.Column("scope_key", sa.Text, nullable=False),
        sa.Column("org", sa.Text, nullable=False),
        sa.Column("project", sa.Text, nullable=True),
        sa.Column("canonical_key", sa.Text, nullable=True),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("embedding", Vector(DIM), nullable=True),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("confidence", sa.Float, nullable=False),
        sa.Column("base_confidence", sa.Float, nullable=True),
        sa.Column("validation_source", sa.String(32), nullable=True),
        sa.Column("validation_count", sa.Integer, nullable=False, server_default="0"),
        sa.Column("last_validated_at", TS, nullable=True),
        sa.Column("decay_policy", sa.String(16), nullable=False, server_default="stable"),
        sa.Column("importance", sa.Float, nullable=False, server_default="0.5"),
        sa.Column("reward", sa.Float, nullable=True),
        sa.Column("success", sa.Boolean, nullable=True),
        sa.Column("source_task_ids", pg.ARRAY(sa.Text), nullable=False, server_default="{}"),
        sa.Column("source_entry_ids", pg.ARRAY(sa.BigInteger), nullable=False, server_default="{}"),
        sa.Column("related_ids", pg.ARRAY(pg.UUID(as_uuid=False)), nullable=False, server_default="{}"),
        sa.Column("supersedes_id", pg.UUID(as_uuid=False), sa.ForeignKey("memories.id"), nullable=True),
        sa.Column("deprecated_at", TS, nullable=True),
        sa.Column("valid_from_commit", sa.Text, nullable=True),
        sa.Column("valid_to_commit", sa.Text, nullable=True),
        sa.Column("contradiction_note", sa.Text, nullable=True),
        sa.Column("expires_at", TS, nullable=True),
        sa.Column("retrieval_count", sa.Integer, nullable=False, server_default="0"),
        sa.Column("usefulness", sa.Float, nullable=False, server_default="0.5"),
        sa.Column("version", sa.Integer, nullable=False, server_default="1"),
        sa.Column("created_at", TS, nullable=False, server_default=sa.func.now()),
        sa.Column("updated_at", TS, nullable=False, server_default=sa.func.now()),
        sa.Column(
            "tsv",
            pg.TSVECTOR,
            sa.Computed("to_tsvector('simple', coalesce(title, '') || ' ' || content)", persisted=True),
        ),
        sa.CheckConstraint("confidence >= 0.1 AND confidence <= 1.0", name="memories_confidence_bounds"),
        sa.CheckConstraint("scope IN ('task','worktree','project','org')", name="memories_scope_check"),
    )
    # The invariant of published memory: at most one active head per (scope key, canonical key).
    op.create_index(
        "memories_one_active_head",
        "memories",
        ["scope_key", "canonical_key"],
        unique=True,
        postgresql_where=sa.text("deprecated_at IS NULL AND canonical_key IS NOT NULL"),
    )
    op.create_index(
        "memories_active_by_scope",
        "memories",
        ["scope_key", "memory_type"],
        postgresql_where=sa.text("deprecated_at IS NULL"),
    )
    op.create_index("memories_content_hash_idx", "memories", ["scope_key", "content_hash"])
    # unique: a memory is superseded at most once, so supersession chains cannot fork
    op.create_index("memories_supersedes_idx", "memories", ["supersedes_id"], unique=True)
    op.create_index("memories_tsv_idx", "memories", ["tsv"], postgresql_using="gin")
    op.execute(
        "CREATE INDEX memories_embedding_hnsw ON memories "
        "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
    )

    op.create_table(
        "memory_events",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("memory_id", pg.UUID(as_uuid=False), nullable=True),
        sa.Column("event_type", sa.String(32), nullable=False),
        sa.Column("actor_id", sa.String(64), nullable=True),
        sa.Column("actor_type", sa.String(16), nullable=True),
        sa.Column("task_id", sa.String(128), nullable=True),
        sa.Column("workflow_id", sa.Text, nullable=True),
        sa.Column("reason", sa.Text, nullable=True),
        sa.Column("payload", pg.JSONB, nullable=True),
        sa.Column("dedupe_key", sa.Text, nullable=True, unique=True),
        sa.Column("created_at", TS, nullable=False, server_default=sa.func.now()),
    )
    op.create_index("memory_events_memory_idx", "memory_events", ["memory_id", "id"])
    op.create_index("memory_events_task_idx", "memory_events", ["task_id"])

    op.create_table(
        "approaches",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("task_id", sa.String(128), sa.ForeignKey("tasks.id"), nullable=False),
        sa.Column("subtask", sa.Text, nullable=False, server_default=""),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("embedding", Vector(DIM), nullable=True),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("failures", sa.Integer, nullable=False, server_default="0"),
        sa.Column("last_outcome", sa.String(16), nullable=False),
        sa.Column("failure_reasons", pg.JSONB, nullable=False, server_default="[]"),
        sa.Column("last_attempt_at", TS, nullable=False, server_default=sa.func.now()),
        sa.UniqueConstraint("task_id", "subtask", "fingerprint", name="approaches_fingerprint_key"),
    )
    op.create_table(
        "subtasks",
        sa.Column("task_id", sa.String(128), sa.ForeignKey("tasks.id"), primary_key=True),
        sa.Column("subtask", sa.Text, primary_key=True),
        sa.Column("refusals", sa.Integer, nullable=False, server_default="0"),
        sa.Column("stuck_at", TS, nullable=True),
    )


def downgrade() -> None:
    for table in (
        "subtasks",
        "approaches",
        "memory_events",
        "memories",
        "staging_entries",
        "tasks",
        "casbin_rule",
        "api_keys",
        "principals",
    ):
        op.drop_table(table)
    # the vector extension stays: other schemas in the database may use it
