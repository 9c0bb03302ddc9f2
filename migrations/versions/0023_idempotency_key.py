"""idempotency key: one name for the key that makes a retried request or activity change nothing

- `memory_events.dedupe_key` → `memory_events.idempotency_key`, and its unique constraint with it;
- `change_requests.dedupe_key` → `change_requests.idempotency_key`, likewise.

The API always called it `idempotency_key`; the old column name sat beside `governance/dedup.py`, which is
about duplicate memories, not keys. Values, uniqueness and indexes are unchanged: a rename only. Export
files (version 1) keep naming the key `dedupe_key` on their event lines (storage/transfer.py maps it).

Revision ID: 0023_idempotency_key
Revises: 0022_histories
Create Date: 2026-11-27
"""

from __future__ import annotations

from alembic import op

revision = "0023_idempotency_key"
down_revision = "0022_histories"
branch_labels = None
depends_on = None

_TABLES = ("memory_events", "change_requests")


def _rename(old: str, new: str) -> None:
    for table in _TABLES:
        op.alter_column(table, old, new_column_name=new)
        # the unique constraint (and its index) Postgres named after the column when the table was made
        op.execute(f"ALTER TABLE {table} RENAME CONSTRAINT {table}_{old}_key TO {table}_{new}_key")


def upgrade() -> None:
    _rename("dedupe_key", "idempotency_key")


def downgrade() -> None:
    _rename("idempotency_key", "dedupe_key")
