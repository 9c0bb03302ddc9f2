"""structured episodes and project knowledge

- `promotion_candidates.structure`: cognify's structured fields of an episode candidate (governance/
  episodes.py), carried in the claim check from cognify to publish like the candidate's text.
- `episode_details`: one row per published episode: task type, outcome, tests (framework, run, passed,
  failed), lines added and removed, tokens, duration, and the whole structure (pivots, decided hypotheses)
  as JSON; indexed by (org, project, task type) and (org, project, outcome).
- link tables, each indexed by its value: `episode_files` (path, touches, lines added and removed; a second
  index on the reversed path answers "ends with `/` + path" with a prefix scan), `episode_symbols`,
  `episode_error_types` (with occurrences), `episode_tools` (with calls). Every row goes with its memory
  (ON DELETE CASCADE): erasure, pruning and restores need no second statement.
- `project_knowledge`: per project, snapshots of hotspots and statistics computed by the scheduled
  `ProjectKnowledgeWorkflow` from published project-scope memory; readers get the latest.

Revision ID: 0026_structured_episodes
Revises: 0025_followup_promotions
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision = "0026_structured_episodes"
down_revision = "0025_followup_promotions"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def _memory_fk() -> sa.Column[str]:
    return sa.Column(
        "memory_id",
        pg.UUID(as_uuid=False),
        sa.ForeignKey("memories.id", ondelete="CASCADE"),
        primary_key=True,
    )


def upgrade() -> None:
    op.add_column("promotion_candidates", sa.Column("structure", pg.JSONB, nullable=True))
    op.create_table(
        "episode_details",
        _memory_fk(),
        sa.Column("org", sa.Text, nullable=False),
        sa.Column("project", sa.Text, nullable=True),
        sa.Column("task_id", sa.String(128), nullable=True),
        sa.Column("task_type", sa.String(16), nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("tests_framework", sa.String(120), nullable=True),
        sa.Column("tests_run", sa.Integer, nullable=True),
        sa.Column("tests_passed", sa.Integer, nullable=True),
        sa.Column("tests_failed", sa.Integer, nullable=True),
        sa.Column("lines_added", sa.Integer, nullable=False, server_default="0"),
        sa.Column("lines_removed", sa.Integer, nullable=False, server_default="0"),
        sa.Column("tokens", sa.BigInteger, nullable=True),
        sa.Column("duration_ms", sa.BigInteger, nullable=True),
        sa.Column("structure", pg.JSONB, nullable=False),
        sa.Column("created_at", TS, nullable=False, server_default=sa.func.now()),
        sa.CheckConstraint(
            "task_type IN ('bugfix', 'feature', 'refactor', 'test', 'docs', 'other')",
            name="episode_details_task_type_check",
        ),
        sa.CheckConstraint("outcome IN ('success', 'failure')", name="episode_details_outcome_check"),
    )
    op.create_index("episode_details_task_type_idx", "episode_details", ["org", "project", "task_type"])
    op.create_index("episode_details_outcome_idx", "episode_details", ["org", "project", "outcome"])
    op.create_table(
        "episode_files",
        _memory_fk(),
        sa.Column("path", sa.Text, primary_key=True),
        sa.Column("touches", sa.Integer, nullable=False, server_default="0"),
        sa.Column("lines_added", sa.Integer, nullable=False, server_default="0"),
        sa.Column("lines_removed", sa.Integer, nullable=False, server_default="0"),
    )
    op.create_index("episode_files_path_idx", "episode_files", ["path"])
    op.execute(
        "CREATE INDEX episode_files_path_reversed_idx ON episode_files (reverse(path) text_pattern_ops)"
    )
    op.create_table(
        "episode_symbols",
        _memory_fk(),
        sa.Column("symbol", sa.Text, primary_key=True),
    )
    op.create_index("episode_symbols_symbol_idx", "episode_symbols", ["symbol"])
    op.create_table(
        "episode_error_types",
        _memory_fk(),
        sa.Column("error_type", sa.String(120), primary_key=True),
        sa.Column("occurrences", sa.Integer, nullable=False, server_default="1"),
    )
    op.create_index("episode_error_types_type_idx", "episode_error_types", ["error_type"])
    op.create_table(
        "episode_tools",
        _memory_fk(),
        sa.Column("tool", sa.String(120), primary_key=True),
        sa.Column("calls", sa.Integer, nullable=False, server_default="1"),
    )
    op.create_index("episode_tools_tool_idx", "episode_tools", ["tool"])
    op.create_table(
        "project_knowledge",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("org", sa.Text, nullable=False),
        sa.Column("project", sa.Text, nullable=False),
        sa.Column("computed_at", TS, nullable=False, server_default=sa.func.now()),
        sa.Column("snapshot", pg.JSONB, nullable=False),
    )
    op.create_index(
        "project_knowledge_latest_idx", "project_knowledge", ["org", "project", sa.text("computed_at DESC")]
    )


def downgrade() -> None:
    op.drop_index("project_knowledge_latest_idx", table_name="project_knowledge")
    op.drop_table("project_knowledge")
    for table, index in (
        ("episode_tools", "episode_tools_tool_idx"),
        ("episode_error_types", "episode_error_types_type_idx"),
        ("episode_symbols", "episode_symbols_symbol_idx"),
    ):
        op.drop_index(index, table_name=table)
        op.drop_table(table)
    op.execute("DROP INDEX IF EXISTS episode_files_path_reversed_idx")
    op.drop_index("episode_files_path_idx", table_name="episode_files")
    op.drop_table("episode_files")
    op.drop_index("episode_details_outcome_idx", table_name="episode_details")
    op.drop_index("episode_details_task_type_idx", table_name="episode_details")
    op.drop_table("episode_details")
    op.drop_column("promotion_candidates", "structure")
