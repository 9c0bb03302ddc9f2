"""SQLAlchemy Core tables mirroring the Alembic migrations (the migrations are the source of truth)."""

from __future__ import annotations

from collections.abc import Sequence

from pgvector.sqlalchemy import Vector
from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Date,
    DateTime,
    Float,
    ForeignKey,
    Identity,
    Integer,
    MetaData,
    SmallInteger,
    String,
    Table,
    Text,
    UniqueConstraint,
    func,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSON, JSONB, TSVECTOR, UUID

from governance.embedding import EMBEDDING_DIM

__all__ = [
    "vector_literal",
    "metadata",
    "principals",
    "api_keys",
    "tasks",
    "promotions",
    "staging_entries",
    "staging_daily_usage",
    "staging_idempotency",
    "memories",
    "memory_events",
    "memory_derivations",
    "bug_patterns",
    "memory_validations",
    "memory_votes",
    "approaches",
    "subtasks",
    "change_requests",
    "change_request_items",
    "webhooks",
    "webhook_deliveries",
    "staging_signals",
    "memory_uses",
    "EMBEDDING_DIM",
]


metadata = MetaData()

principals = Table(
    "principals",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("name", Text, nullable=False),
    Column("actor_type", String(16), nullable=False),
    Column("org", Text, nullable=False),
    Column("project", Text, nullable=True),  # null: every project of the org (org-wide principals)
    Column("is_admin", Boolean, nullable=False, server_default="false"),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)

api_keys = Table(
    "api_keys",
    metadata,
    Column("id", String(32), primary_key=True),  # the public prefix of the key, shown in listings
    Column("principal_id", String(64), ForeignKey("principals.id", ondelete="CASCADE"), nullable=False),
    Column("key_hash", String(64), nullable=False, unique=True),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("revoked_at", DateTime(timezone=True), nullable=True),
)

tasks = Table(
    "tasks",
    metadata,
    # the task's key, `<org>/<task id>` (governance/staging.task_key), or its id for tasks before 0018
    Column("id", Text, primary_key=True),
    # the id its tenant gave it; null: the key is the id (before 0018). Unique per org (migration 0018)
    Column("public_id", Text, nullable=True),
    Column("org", Text, nullable=False),
    Column("project", Text, nullable=False),
    Column("worktree", Text, nullable=False),
    Column("description", Text, nullable=False),
    Column("status", String(32), nullable=False, server_default="open"),
    Column("next_seq", BigInteger, nullable=False, server_default="0"),
    Column("promotion_workflow_id", Text, nullable=True),
    Column("created_by", String(64), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("ended_at", DateTime(timezone=True), nullable=True),  # when its promotion ended
    # entries with a lower seq were archived to a file (governance/storage/staging_archive.py)
    Column("archived_next_seq", BigInteger, nullable=False, server_default="0"),
    # content and payload bytes ever appended (the staging quota's count: governance/storage/quotas.py)
    Column("staged_bytes", BigInteger, nullable=False, server_default="0"),
    # closed by an orchestrator or a human (`closed`), or `erased`: no more entries, no more promotions
    Column("closed_at", DateTime(timezone=True), nullable=True),
    Column("closed_reason", Text, nullable=True),
    Column("closed_by", String(64), nullable=True),
)

# a task's promotions, numbered from 1 (migration 0025, governance/promotions.py): each takes the staging
# `after_seq < seq <= last_seq` (`last_seq` fixed by its collect step); `outcome` null while it runs
promotions = Table(
    "promotions",
    metadata,
    Column("task_id", Text, ForeignKey("tasks.id", ondelete="CASCADE"), primary_key=True),
    Column("number", Integer, primary_key=True),
    Column("workflow_id", Text, nullable=False, unique=True),
    Column("target_scope", String(16), nullable=True),
    Column("after_seq", BigInteger, nullable=False, server_default="0"),
    Column("last_seq", BigInteger, nullable=True),
    Column("outcome", String(32), nullable=True),
    Column("requested_by", String(64), nullable=True),
    Column("started_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("snapshot_at", DateTime(timezone=True), nullable=True),
    Column("ended_at", DateTime(timezone=True), nullable=True),
)

# a tenant's staging appends per UTC day, in a few rows (shards) so concurrent tasks rarely share one
staging_daily_usage = Table(
    "staging_daily_usage",
    metadata,
    Column("org", Text, primary_key=True),
    Column("day", Date, primary_key=True),
    Column("shard", SmallInteger, primary_key=True),
    Column("entries", BigInteger, nullable=False, server_default="0"),
    Column("bytes", BigInteger, nullable=False, server_default="0"),
)

staging_entries = Table(
    "staging_entries",
    metadata,
    # partitioned by month of created_at (migration 0005): the key must contain it
    Column("id", BigInteger, primary_key=True, autoincrement=True),
    Column("task_id", Text, ForeignKey("tasks.id"), nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("actor_id", String(64), nullable=False),
    Column("actor_type", String(16), nullable=False),
    Column("kind", String(32), nullable=False),
    Column("content", Text, nullable=False),
    Column("payload", JSON, nullable=True),  # json keeps the payload exactly as sent
    Column("idempotency_key", Text, nullable=True),
    Column("request_hash", String(64), nullable=False),
    Column("created_at", DateTime(timezone=True), primary_key=True, server_default=func.now()),
)

# one row per (principal, idempotency key) of a staging entry: the key's uniqueness, which a partitioned
# staging_entries cannot enforce (its unique indexes must contain created_at)
staging_idempotency = Table(
    "staging_idempotency",
    metadata,
    Column("actor_id", String(64), primary_key=True),
    Column("idempotency_key", Text, primary_key=True),
    Column("task_id", Text, nullable=False),
    Column("entry_id", BigInteger, nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("request_hash", String(64), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

memories = Table(
    "memories",
    metadata,
    Column("id", UUID(as_uuid=False), primary_key=True),
    Column("citation", String(16), nullable=False, unique=True),
    Column("memory_type", String(32), nullable=False),
    Column("scope", String(16), nullable=False),
    Column("scope_key", Text, nullable=False),
    Column("org", Text, nullable=False),
    Column("project", Text, nullable=True),
    Column("canonical_key", Text, nullable=True),
    Column("title", Text, nullable=False),
    Column("content", Text, nullable=False),
    Column("embedding", Vector(EMBEDDING_DIM), nullable=True),
    Column("content_hash", String(64), nullable=False),
    Column("confidence", Float, nullable=False),
    # confidence as of the last validation: decay starts from it, so a second run the same day is a no-op
    Column("base_confidence", Float, nullable=True),
    Column("validation_source", String(32), nullable=True),
    Column("validation_count", Integer, nullable=False, server_default="0"),
    Column("last_validated_at", DateTime(timezone=True), nullable=True),
    Column("decay_policy", String(16), nullable=False, server_default="stable"),
    Column("importance", Float, nullable=False, server_default="0.5"),
    Column("reward", Float, nullable=True),
    Column("success", Boolean, nullable=True),
    Column("source_task_ids", ARRAY(Text), nullable=False, server_default="{}"),
    Column("source_entry_ids", ARRAY(BigInteger), nullable=False, server_default="{}"),
    Column("related_ids", ARRAY(UUID(as_uuid=False)), nullable=False, server_default="{}"),
    Column("supersedes_id", UUID(as_uuid=False), nullable=True),
    Column("deprecated_at", DateTime(timezone=True), nullable=True),
    Column("valid_from_commit", Text, nullable=True),
    Column("valid_to_commit", Text, nullable=True),
    Column("contradiction_note", Text, nullable=True),
    Column("expires_at", DateTime(timezone=True), nullable=True),
    Column("retrieval_count", Integer, nullable=False, server_default="0"),
    Column("usefulness", Float, nullable=False, server_default="0.5"),
    Column("version", Integer, nullable=False, server_default="1"),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("tsv", TSVECTOR, nullable=True),  # generated column (see migration)
    # set when a memory it was derived from was superseded or retired; cleared when a human confirms it
    Column("stale_at", DateTime(timezone=True), nullable=True),
    Column("stale_reason", Text, nullable=True),
)

# which memories a memory builds on (a skill or bug pattern built from a fact): storage/derivations.py
memory_derivations = Table(
    "memory_derivations",
    metadata,
    Column("memory_id", UUID(as_uuid=False), ForeignKey("memories.id", ondelete="CASCADE"), primary_key=True),
    Column(
        "derived_from_id",
        UUID(as_uuid=False),
        ForeignKey("memories.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("task_id", Text, nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)

# a bug pattern's error signature and fix statistics: storage/bug_patterns.py
bug_patterns = Table(
    "bug_patterns",
    metadata,
    Column("memory_id", UUID(as_uuid=False), ForeignKey("memories.id", ondelete="CASCADE"), primary_key=True),
    Column("scope_key", Text, nullable=False),
    Column("error_type", Text, nullable=False),
    Column("signature", Text, nullable=False),
    Column("occurrences", Integer, nullable=False, server_default="0"),
    Column("first_seen", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("last_seen", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("solutions", JSONB, nullable=False, server_default="[]"),
)

memory_events = Table(
    "memory_events",
    metadata,
    Column("id", BigInteger, primary_key=True, autoincrement=True),
    Column("memory_id", UUID(as_uuid=False), nullable=True),
    Column("event_type", String(32), nullable=False),
    Column("actor_id", String(64), nullable=True),
    Column("actor_type", String(16), nullable=True),
    Column("task_id", Text, nullable=True),
    Column("workflow_id", Text, nullable=True),
    Column("reason", Text, nullable=True),
    Column("payload", JSONB, nullable=True),
    Column("idempotency_key", Text, nullable=True, unique=True),  # makes retried activities write once
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)

# which validations were counted: one per (memory, principal, source) moves confidence (memory_changes.py)
memory_validations = Table(
    "memory_validations",
    metadata,
    Column("memory_id", UUID(as_uuid=False), ForeignKey("memories.id", ondelete="CASCADE"), primary_key=True),
    Column("actor_id", String(64), primary_key=True),
    Column("source", String(32), primary_key=True),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)

# the latest feedback vote of each principal on a memory; usefulness is computed from them
memory_votes = Table(
    "memory_votes",
    metadata,
    Column("memory_id", UUID(as_uuid=False), ForeignKey("memories.id", ondelete="CASCADE"), primary_key=True),
    Column("actor_id", String(64), primary_key=True),
    Column("helpful", Boolean, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)

approaches = Table(
    "approaches",
    metadata,
    Column("id", BigInteger, primary_key=True, autoincrement=True),
    Column("task_id", Text, ForeignKey("tasks.id"), nullable=False),
    Column("subtask", Text, nullable=False, server_default=""),
    Column("fingerprint", String(64), nullable=False),
    Column("text", Text, nullable=False),
    Column("embedding", Vector(EMBEDDING_DIM), nullable=True),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("failures", Integer, nullable=False, server_default="0"),
    Column("last_outcome", String(16), nullable=False),
    Column("failure_reasons", JSONB, nullable=False, server_default="[]"),
    Column("last_attempt_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)

# what other tasks may learn from a staging entry before any promotion (migration 0020)
staging_signals = Table(
    "staging_signals",
    metadata,
    Column("entry_id", BigInteger, primary_key=True),
    Column("task_id", String(128), ForeignKey("tasks.id"), nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("signal", String(16), nullable=False),  # error | approach
    Column("key", String(80), nullable=False),  # error signature key | approach fingerprint
    Column("actor_id", String(64), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)

# a memory cited by a task's staging entry (or declared used by a call: entry_id NULL), migration 0020
memory_uses = Table(
    "memory_uses",
    metadata,
    Column("id", BigInteger, primary_key=True, autoincrement=True),
    Column("memory_id", UUID(as_uuid=False), ForeignKey("memories.id", ondelete="CASCADE"), nullable=False),
    Column("task_id", String(128), ForeignKey("tasks.id"), nullable=False),
    Column("entry_id", BigInteger, nullable=True),
    Column("actor_id", String(64), nullable=False),
    Column("actor_type", String(16), nullable=False),
    Column("independent", Boolean, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)

subtasks = Table(
    "subtasks",
    metadata,
    Column("task_id", Text, ForeignKey("tasks.id"), primary_key=True),
    Column("subtask", Text, primary_key=True),
    Column("refusals", Integer, nullable=False, server_default="0"),
    Column("stuck_at", DateTime(timezone=True), nullable=True),
)

# supersede and retire waiting for an approval (storage/change_requests.py, workflows/change_requests.py)
change_requests = Table(
    "change_requests",
    metadata,
    Column("id", UUID(as_uuid=False), primary_key=True),
    Column("memory_id", UUID(as_uuid=False), nullable=False),
    Column("org", Text, nullable=False),
    Column("project", Text, nullable=True),
    Column("scope", String(16), nullable=False),
    Column("operation", String(16), nullable=False),
    Column("content", Text, nullable=True),
    Column("title", Text, nullable=True),
    Column("canonical_key", Text, nullable=True),
    Column("reason", Text, nullable=False),
    Column("valid_from_commit", Text, nullable=True),
    Column("embedding", Vector(EMBEDDING_DIM), nullable=True),
    Column("redaction_counts", JSONB, nullable=False, server_default="{}"),
    Column("requested_by", String(64), nullable=False),
    Column("actor_type", String(16), nullable=False),
    Column("state", String(32), nullable=False, server_default="awaiting_approval"),
    Column("workflow_id", Text, nullable=True),
    Column("decided_by", String(64), nullable=True),
    Column("decided_by_type", String(16), nullable=True),
    Column("decision_note", Text, nullable=True),
    Column("result_memory_id", UUID(as_uuid=False), nullable=True),
    Column("idempotency_key", Text, nullable=True, unique=True),
    Column("request_hash", String(64), nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("decided_at", DateTime(timezone=True), nullable=True),
    # a lift's wider scope (its `scope`/`project` are the target's): storage/lifting.py
    Column("target_scope", String(16), nullable=True),
    Column("target_scope_key", Text, nullable=True),
)

# the memories one lift carries, in order; titles only (what the workflow shows), outcomes once applied
change_request_items = Table(
    "change_request_items",
    metadata,
    Column(
        "request_id",
        UUID(as_uuid=False),
        ForeignKey("change_requests.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("position", Integer, primary_key=True),
    Column("memory_id", UUID(as_uuid=False), nullable=False),
    Column("title", Text, nullable=False),
    Column("outcome", String(16), nullable=True),
    Column("result_memory_id", UUID(as_uuid=False), nullable=True),
)

# notifications an admin registers per tenant, and each delivery (storage/webhooks.py, governance/webhooks.py)
webhooks = Table(
    "webhooks",
    metadata,
    Column("id", UUID(as_uuid=False), primary_key=True),
    Column("org", Text, nullable=False),
    Column("project", Text, nullable=True),
    Column("url", Text, nullable=False),
    Column("secret", Text, nullable=False),
    Column("events", ARRAY(Text), nullable=False),
    Column("created_by", String(64), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)

webhook_deliveries = Table(
    "webhook_deliveries",
    metadata,
    Column("id", BigInteger, Identity(), primary_key=True),
    Column("webhook_id", UUID(as_uuid=False), ForeignKey("webhooks.id", ondelete="CASCADE"), nullable=False),
    Column("event", String(64), nullable=False),
    Column("event_key", Text, nullable=False),
    Column("facts", JSONB, nullable=False, server_default="{}"),
    Column("state", String(16), nullable=False, server_default="pending"),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("last_status", Integer, nullable=True),
    Column("last_error", Text, nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("last_attempt_at", DateTime(timezone=True), nullable=True),
    Column("delivered_at", DateTime(timezone=True), nullable=True),
    UniqueConstraint("webhook_id", "event_key", name="webhook_deliveries_once"),
)


def vector_literal(vector: Sequence[float] | None) -> str | None:
    """pgvector's text form, for `CAST(:v AS vector)` in hand-written statements."""
    if vector is None:
        return None
    return "[" + ",".join(f"{float(x):.7g}" for x in vector) + "]"
