"""working memory: a task's hypotheses and the files and symbols it touched

- `working_hypotheses`: what an agent currently believes about its task (text, confidence in [0, 1], the
  staging entries that support it). One row per (task, text); a hypothesis at 0.9 or more is appended to
  staging once as a decision (`decision_entry_id`).
- `task_code_locations`: the files and symbols of a task, one row per (task, kind, value): `tracked` when an
  agent said so, `touches` / `error_touches` counted from the task's staging entries (their payload's
  `files` / `symbols`, and what their text names), first and last sequence number; indexed by value.
- `working_memory_state`: per task, the last staging sequence number folded into `task_code_locations`.
- a GIN index on `memories.source_task_ids`, so a file's history finds the memories of the tasks that
  touched it.

Revision ID: 0021_working_memory
Revises: 0020_citations
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision = "0021_working_memory"
down_revision = "0020_citations"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "working_hypotheses",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("task_id", sa.String(128), sa.ForeignKey("tasks.id"), nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("text_sha256", sa.String(64), nullable=False),
        sa.Column("confidence", sa.Float, nullable=False),
        sa.Column("evidence_ids", pg.ARRAY(sa.BigInteger), nullable=False, server_default="{}"),
        sa.Column("decision_entry_id", sa.BigInteger, nullable=True),
        sa.Column("created_by", sa.String(64), nullable=False),
        sa.Column("created_at", TS, nullable=False, server_default=sa.func.now()),
        sa.Column("updated_at", TS, nullable=False, server_default=sa.func.now()),
        sa.UniqueConstraint("task_id", "text_sha256", name="working_hypotheses_task_text_key"),
        sa.CheckConstraint("confidence >= 0 AND confidence <= 1", name="working_hypotheses_confidence_check"),
    )
    op.create_table(
        "task_code_locations",
        sa.Column("task_id", sa.String(128), sa.ForeignKey("tasks.id"), primary_key=True),
        sa.Column("kind", sa.String(8), primary_key=True),
        sa.Column("value", sa.Text, primary_key=True),
        sa.Column("tracked", sa.Boolean, nullable=False, server_default="false"),
        sa.Column("touches", sa.Integer, nullable=False, server_default="0"),
        sa.Column("error_touches", sa.Integer, nullable=False, server_default="0"),
        sa.Column("first_seq", sa.BigInteger, nullable=True),
        sa.Column("last_seq", sa.BigInteger, nullable=True),
        sa.Column("updated_at", TS, nullable=False, server_default=sa.func.now()),
        sa.CheckConstraint("kind IN ('file', 'symbol')", name="task_code_locations_kind_check"),
    )
    op.create_index("task_code_locations_value_idx", "task_code_locations", ["kind", "value"])
    op.create_table(
        "working_memory_state",
        sa.Column("task_id", sa.String(128), sa.ForeignKey("tasks.id"), primary_key=True),
        sa.Column("indexed_seq", sa.BigInteger, nullable=False, server_default="-1"),
        sa.Column("updated_at", TS, nullable=False, server_default=sa.func.now()),
    )
    op.create_index("memories_source_tasks_idx", "memories", ["source_task_ids"], postgresql_using="gin")


def downgrade() -> None:
    op.drop_index("memories_source_tasks_idx", table_name="memories")
    op.drop_table("working_memory_state")
    op.drop_index("task_code_locations_value_idx", table_name="task_code_locations")
    op.drop_table("task_code_locations")
    op.drop_table("working_hypotheses")
