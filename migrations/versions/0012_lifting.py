"""lifting: change requests that lift published memories to a wider scope

- `change_requests.operation` may be `lift`; a lift names its `target_scope` and `target_scope_key` (the
  request's `scope`/`project` are the target's: who may approve it is decided there). Its `memory_id` is
  the first memory lifted.
- `change_request_items`: the memories one lift carries, in order, each with its title at request time (what
  the workflow shows: titles, never content), and once applied its outcome (`lifted`, `duplicate`,
  `superseded`) and the memory at the target scope it produced or merged into.

Revision ID: 0012_lifting
Revises: 0009_learning
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision = "0012_lifting"
down_revision = "0010_retention"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("change_requests", sa.Column("target_scope", sa.String(16), nullable=True))
    op.add_column("change_requests", sa.Column("target_scope_key", sa.Text, nullable=True))
    op.drop_constraint("change_requests_operation", "change_requests", type_="check")
    op.drop_constraint("change_requests_supersede_has_content", "change_requests", type_="check")
    op.create_check_constraint(
        "change_requests_operation", "change_requests", "operation IN ('supersede', 'retire', 'lift')"
    )
    op.create_check_constraint(
        "change_requests_supersede_has_content",
        "change_requests",
        "operation <> 'supersede' OR content IS NOT NULL",
    )
    op.create_check_constraint(
        "change_requests_lift_has_target",
        "change_requests",
        "operation <> 'lift' OR (target_scope IS NOT NULL AND target_scope_key IS NOT NULL)",
    )
    op.create_table(
        "change_request_items",
        sa.Column(
            "request_id",
            pg.UUID(as_uuid=False),
            sa.ForeignKey("change_requests.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("position", sa.Integer, primary_key=True),
        sa.Column("memory_id", pg.UUID(as_uuid=False), nullable=False),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("outcome", sa.String(16), nullable=True),
        sa.Column("result_memory_id", pg.UUID(as_uuid=False), nullable=True),
        sa.UniqueConstraint("request_id", "memory_id", name="change_request_items_one_memory"),
    )
    op.create_index("change_request_items_memory_idx", "change_request_items", ["memory_id"])


def downgrade() -> None:
    op.drop_index("change_request_items_memory_idx", table_name="change_request_items")
    op.drop_table("change_request_items")
    # lift requests cannot be represented before this revision
    op.execute("DELETE FROM change_requests WHERE operation = 'lift'")
    op.drop_constraint("change_requests_lift_has_target", "change_requests", type_="check")
    op.drop_constraint("change_requests_supersede_has_content", "change_requests", type_="check")
    op.drop_constraint("change_requests_operation", "change_requests", type_="check")
    op.create_check_constraint(
        "change_requests_operation", "change_requests", "operation IN ('supersede', 'retire')"
    )
    op.create_check_constraint(
        "change_requests_supersede_has_content",
        "change_requests",
        "operation = 'retire' OR content IS NOT NULL",
    )
    op.drop_column("change_requests", "target_scope_key")
    op.drop_column("change_requests", "target_scope")
