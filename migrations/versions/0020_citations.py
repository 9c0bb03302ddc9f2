"""citations: live signals of staging across tasks, and which tasks used which memories

- `staging_signals`: one row per staging entry another task may learn from before any promotion: an
  `error` entry under its error signature's key (governance/bug_signature.py), a failed `approach` entry under
  its approach fingerprint (governance/approaches.py). Keys are hashes; the content stays in staging and is
  read from there (an erased or archived entry takes its signal out of sight with it).
- `memory_uses`: a memory cited (`[mem:…]`) by a task's staging entry, or declared used by an explicit call
  (`entry_id` NULL), with the citing principal and whether it was independent of the memory (not one of its
  authors or publishers: only others' use counts towards ranking).

Revision ID: 0020_citations
Revises: 0018_tenant_task_ids
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision = "0020_citations"
down_revision = "0018_tenant_task_ids"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "staging_signals",
        sa.Column("entry_id", sa.BigInteger, primary_key=True),
        sa.Column("task_id", sa.String(128), sa.ForeignKey("tasks.id"), nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("signal", sa.String(16), nullable=False),
        sa.Column("key", sa.String(80), nullable=False),
        sa.Column("actor_id", sa.String(64), nullable=False),
        sa.Column("created_at", TS, nullable=False, server_default=sa.func.now()),
    )
    op.create_index("staging_signals_key_idx", "staging_signals", ["signal", "key", "created_at"])
    op.create_index("staging_signals_task_idx", "staging_signals", ["task_id", "seq"])
    op.create_table(
        "memory_uses",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column(
            "memory_id",
            pg.UUID(as_uuid=False),
            sa.ForeignKey("memories.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("task_id", sa.String(128), sa.ForeignKey("tasks.id"), nullable=False),
        sa.Column("entry_id", sa.BigInteger, nullable=True),
        sa.Column("actor_id", sa.String(64), nullable=False),
        sa.Column("actor_type", sa.String(16), nullable=False),
        sa.Column("independent", sa.Boolean, nullable=False),
        sa.Column("created_at", TS, nullable=False, server_default=sa.func.now()),
    )
    op.create_index(
        "memory_uses_entry_key",
        "memory_uses",
        ["memory_id", "entry_id"],
        unique=True,
        postgresql_where=sa.text("entry_id IS NOT NULL"),
    )
    op.create_index(
        "memory_uses_call_key",
        "memory_uses",
        ["memory_id", "task_id", "actor_id"],
        unique=True,
        postgresql_where=sa.text("entry_id IS NULL"),
    )
    op.create_index("memory_uses_task_idx", "memory_uses", ["task_id"])
    op.create_index("memory_uses_memory_idx", "memory_uses", ["memory_id", "independent"])


def downgrade() -> None:
    op.drop_table("memory_uses")
    op.drop_table("staging_signals")
