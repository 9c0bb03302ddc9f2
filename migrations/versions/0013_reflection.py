"""reflection: which episodes each reflection distilled, and the reflections themselves

- `reflections` holds one row per run of `ReflectionWorkflow` (its id is chosen by the workflow, so a retried
  activity finds its row): the project it reflected on, what started it (`threshold`, `schedule`, `manual`),
  who asked, the reflection task whose staging carries the insights, how many episodes and insights, and how
  it ended (`staged`, `published`, `rejected`, `nothing`, `failed`).
- `reflection_episodes` claims each episode for exactly one reflection: its primary key is the episode, so
  two reflections racing over one project never distil the same episode twice. An episode with no row here
  is *pending*; the threshold trigger sums the importance of the pending episodes of a project.

Revision ID: 0013_reflection
Revises: 0009_learning
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision = "0013_reflection"
down_revision = "0012_lifting"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "reflections",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("org", sa.Text, nullable=False),
        sa.Column("project", sa.Text, nullable=False),
        sa.Column("trigger", sa.String(16), nullable=False),
        sa.Column("requested_by", sa.String(64), nullable=True),
        sa.Column("workflow_id", sa.Text, nullable=False),
        sa.Column("task_id", sa.String(128), nullable=True),
        sa.Column("state", sa.String(16), nullable=False, server_default="claimed"),
        sa.Column("episode_count", sa.Integer, nullable=False, server_default="0"),
        sa.Column("insight_count", sa.Integer, nullable=False, server_default="0"),
        sa.Column("engine", sa.Text, nullable=True),
        sa.Column("created_at", TS, nullable=False, server_default=sa.func.now()),
        sa.Column("finished_at", TS, nullable=True),
    )
    op.create_index("reflections_scope_idx", "reflections", ["org", "project", "created_at"])
    op.create_index("reflections_task_idx", "reflections", ["task_id"])
    op.create_table(
        "reflection_episodes",
        sa.Column(
            "episode_id",
            pg.UUID(as_uuid=False),
            sa.ForeignKey("memories.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column(
            "reflection_id",
            sa.String(64),
            sa.ForeignKey("reflections.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("created_at", TS, nullable=False, server_default=sa.func.now()),
    )
    op.create_index("reflection_episodes_reflection_idx", "reflection_episodes", ["reflection_id"])


def downgrade() -> None:
    op.drop_index("reflection_episodes_reflection_idx", table_name="reflection_episodes")
    op.drop_table("reflection_episodes")
    op.drop_index("reflections_task_idx", table_name="reflections")
    op.drop_index("reflections_scope_idx", table_name="reflections")
    op.drop_table("reflections")
