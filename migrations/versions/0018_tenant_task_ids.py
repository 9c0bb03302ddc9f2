"""tenant task ids: a task id belongs to its tenant (the org), so two orgs may both have a task `t-1`

- `tasks.public_id` (text, nullable): the id the tenant gave the task. `tasks.id` becomes the task's key
  inside loregate, `<org>/<task id>` for tasks opened from now on (governance/staging.task_key); staging,
  approaches, subtasks, events, plans, derivations, reflections, task scope keys (`task:<key>`) and
  workflow ids (`promote-<key>`) carry the key. Existing tasks keep their id as their key and a null
  `public_id` (their id is their public id): nothing of theirs is rewritten, so running promotions,
  recorded workflow ids and task scope keys stay valid.
- A unique index on `(org, COALESCE(public_id, id))`: an id is taken once per tenant, never across.
- Every task id column widens from varchar(128) to text (a key holds the org too).

The downgrade gives every task its public id back as its id (staging, approaches, subtasks, events,
plans, derivations, reflections, task scope keys, memories' source task ids), and
refuses, naming them, when two tenants use the same task id: the old schema cannot hold both. Workflow
ids already recorded (`tasks.promotion_workflow_id`, plans, events, Temporal's own) keep the key form.

Revision ID: 0018_tenant_task_ids
Revises: 0017_quarantine
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018_tenant_task_ids"
down_revision = "0017_quarantine"
branch_labels = None
depends_on = None

# (table, column) of every task id column besides tasks.id
_TASK_COLUMNS = (
    ("staging_entries", "task_id"),
    ("staging_idempotency", "task_id"),
    ("memory_events", "task_id"),
    ("approaches", "task_id"),
    ("subtasks", "task_id"),
    ("promotion_plans", "task_id"),
    ("memory_derivations", "task_id"),
    ("reflections", "task_id"),
)

# a key's public id: what follows its last `/` (a task id never holds one)
_PUBLIC = "regexp_replace({0}, '^.*/', '')"


class TaskIdsShared(Exception):
    """The downgrade met task ids that more than one tenant uses."""


def upgrade() -> None:
    op.add_column("tasks", sa.Column("public_id", sa.Text, nullable=True))
    op.execute("ALTER TABLE tasks ALTER COLUMN id TYPE text")
    for table, column in _TASK_COLUMNS:
        op.execute(f"ALTER TABLE {table} ALTER COLUMN {column} TYPE text")
    op.execute("CREATE UNIQUE INDEX tasks_tenant_task_id_key ON tasks (org, COALESCE(public_id, id))")


def downgrade() -> None:
    conn = op.get_bind()
    shared = conn.execute(
        sa.text(
            "SELECT COALESCE(public_id, id) AS tid, string_agg(org, ', ' ORDER BY org) AS orgs FROM tasks "
            "GROUP BY 1 HAVING count(*) > 1 ORDER BY 1 LIMIT 20"
        )
    ).fetchall()
    if shared:
        named = "; ".join(f"{r.tid!r} in {r.orgs}" for r in shared)
        raise TaskIdsShared(
            f"cannot downgrade below 0018: these task ids are used by more than one tenant ({named}); "
            "erase or rename all but one of each first"
        )
    op.execute("DROP INDEX tasks_tenant_task_id_key")
    # a copy of each keyed task under its public id, then its dependants moved over, then the keyed row gone
    columns = [
        r[0]
        for r in conn.execute(
            sa.text(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_schema = current_schema() AND table_name = 'tasks' AND column_name <> 'id' "
                "ORDER BY ordinal_position"
            )
        )
    ]
    listed = ", ".join(columns)
    op.execute(
        f"INSERT INTO tasks (id, {listed}) SELECT {_PUBLIC.format('id')}, {listed} FROM tasks "
        "WHERE id LIKE '%/%'"
    )
    for table, column in _TASK_COLUMNS:
        op.execute(f"UPDATE {table} SET {column} = {_PUBLIC.format(column)} WHERE {column} LIKE '%/%'")
    for table in ("memories", "bug_patterns"):
        op.execute(
            f"UPDATE {table} SET scope_key = 'task:' || {_PUBLIC.format('substr(scope_key, 6)')} "
            "WHERE scope_key LIKE 'task:%/%'"
        )
    op.execute(
        "UPDATE memories SET source_task_ids = ARRAY("
        f"SELECT {_PUBLIC.format('t')} FROM unnest(source_task_ids) WITH ORDINALITY AS u(t, i) ORDER BY i) "
        "WHERE array_to_string(source_task_ids, ' ') LIKE '%/%'"
    )
    op.execute("DELETE FROM tasks WHERE id LIKE '%/%'")
    op.drop_column("tasks", "public_id")
    for table, column in _TASK_COLUMNS:
        op.execute(f"ALTER TABLE {table} ALTER COLUMN {column} TYPE varchar(128)")
    op.execute("ALTER TABLE tasks ALTER COLUMN id TYPE varchar(128)")
