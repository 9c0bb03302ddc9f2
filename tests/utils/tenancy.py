"""A task's key from the id its tenant gave it, for tests that look a task up below the API.

Task ids belong to their tenant (migration 0018): the tasks the API opens are keyed `<org>/<task id>`
inside (workflow ids `promote-<key>`, scope keys `task:<key>`, staging rows), while tasks the factories
insert directly keep their id as key. Tests open tasks with fresh ids, so one id names one task.
"""

from __future__ import annotations

import os

import psycopg

__all__ = ["task_key_of"]


def task_key_of(task_id: str) -> str:
    """The key of the one task called `task_id` (the id itself when no task, or a key, is given)."""
    if "/" in task_id:
        return task_id
    with psycopg.connect(os.environ["LOREGATE_DATABASE_URL"]) as conn:
        rows = conn.execute("SELECT id FROM tasks WHERE COALESCE(public_id, id) = %s", (task_id,)).fetchall()
    assert len(rows) <= 1, f"task id {task_id!r} names {len(rows)} tasks: use its key"
    return str(rows[0][0]) if rows else task_id
