"""Fix a promotion's staging snapshot and mark its task as being promoted.

The collect activity maps the snapshot to its result (with the gate's rule, which is policy's); this is the
use case, one transaction: the task read, the entries after the last snapshot that published counted (a
follow-up promotion takes only those, governance/promotions.py; one with no record, a workflow from before
numbering, takes all), the snapshot's end recorded on the promotion and the task set `promoting` (the
staging archive leaves it alone until the promotion ends). It reads no content: cognify reads the snapshot
and redacts it.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncEngine

from governance.errors import NotFound
from governance.scopes import Scope, keys_at_or_above, scope_key
from governance.storage.promotions import promotion_by_workflow, record_snapshot
from governance.storage.staging import TaskInfo, get_task, set_task_status, snapshot_size

__all__ = ["Snapshot", "collect_snapshot"]


@dataclass(frozen=True)
class Snapshot:
    """The task, its snapshot's extent (`entry_count` entries up to `last_seq`), and where it goes: the
    target scope, its key and the scope keys it is classified against (itself and the wider ones)."""

    task: TaskInfo
    entry_count: int
    last_seq: int
    scope: Scope
    scope_key: str
    visible_scope_keys: list[str]


async def collect_snapshot(
    engine: AsyncEngine, task_id: str, workflow_id: str, target_scope: str
) -> Snapshot:
    """Fix the task's snapshot (up to its current last seq) for the promotion `workflow_id`.

    Raises `NotFound` when the task does not exist (nothing is written then)."""
    async with engine.begin() as conn:
        task = await get_task(conn, task_id)
        if task is None:
            raise NotFound(f"task {task_id} does not exist")
        promotion = await promotion_by_workflow(conn, workflow_id)
        after_seq = promotion.after_seq if promotion is not None else 0
        entry_count, snapshot_end = await snapshot_size(conn, task_id, after_seq)
        await record_snapshot(conn, workflow_id, snapshot_end)
        await set_task_status(conn, task_id, "promoting")
    scope = Scope(target_scope)
    keys = {"org": task.org, "project": task.project, "worktree": task.worktree, "task_id": task.id}
    return Snapshot(
        task=task,
        entry_count=entry_count,
        last_seq=snapshot_end,
        scope=scope,
        scope_key=scope_key(scope, **keys),
        # a target scope is classified against itself and wider scopes, never against narrower ones
        visible_scope_keys=keys_at_or_above(scope, **keys),
    )
