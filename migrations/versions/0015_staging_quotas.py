"""staging quotas: a task's staged bytes on its row, and each tenant's appends per UTC day

`tasks.staged_bytes` grows with every append, in the statement that already locks the task's row, so a
task's quota is checked without reading its entries. `staging_daily_usage` counts a tenant's appended
entries and bytes per UTC day in 8 rows (by the task's hash), so concurrent appends to different tasks of
one tenant rarely wait on one row; the quota reads the 8 rows' sum. Existing tasks are backfilled.

Revision ID: 0015_staging_quotas
Revises: 0014_lexicon
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015_staging_quotas"
down_revision = "0014_lexicon"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("tasks", sa.Column("staged_bytes", sa.BigInteger, nullable=False, server_default="0"))
    op.execute(
        """
        UPDATE tasks t SET staged_bytes = s.bytes
        FROM (SELECT task_id, sum(octet_length(content) + coalesce(octet_length(payload::text), 0)) AS bytes
              FROM staging_entries GROUP BY task_id) s
        WHERE s.task_id = t.id
        """
    )
    op.create_table(
        "staging_daily_usage",
        sa.Column("org", sa.Text, primary_key=True),
        sa.Column("day", sa.Date, primary_key=True),
        sa.Column("shard", sa.SmallInteger, primary_key=True),
        sa.Column("entries", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("bytes", sa.BigInteger, nullable=False, server_default="0"),
    )


def downgrade() -> None:
    op.drop_table("staging_daily_usage")
    op.drop_column("tasks", "staged_bytes")
