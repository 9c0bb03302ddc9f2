"""Tasks and the staging log as read: a task opened, found and marked, its entries and snapshots.

Appending is `storage/staging_append.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, text, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from governance.errors import Conflict
from governance.redaction import redact_free_text
from governance.staging import task_key
from governance.storage.tables import api_keys, staging_entries, tasks

__all__ = [
    "written_by_non_humans",
    "ENDED_STATUSES",
    "TaskInfo",
    "StoredEntry",
    "open_task",
    "get_task",
    "find_tasks",
    "key_is_live",
    "read_entries",
    "last_seq",
    "snapshot_entries",
    "snapshot_size",
    "set_task_status",
    "set_promotion_workflow",
    "get_tasks",
    "entry_decay_policies",
]


# a task's status once its promotion ended: published (`promoted`; `unverified` when the verification
# failed or never came), `rejected` (by a human or the approval timeout) or `failed`
ENDED_STATUSES: frozenset[str] = frozenset({"promoted", "unverified", "rejected", "failed"})
# An ended promotion no longer closes its task: what is appended afterwards belongs to the task's next
# promotion (governance/promotions.py). Only a task closed by its orchestrator or a human, or erased
# (`tasks.closed_at`), takes no more entries.


@dataclass(frozen=True)
class TaskInfo:
    """A task and the tenant it belongs to: `id` is its key inside loregate, `public_id` its tenant's id."""

    id: str
    public_id: str
    org: str
    project: str
    worktree: str
    description: str
    status: str
    created_by: str
    created_at: datetime
    promotion_workflow_id: str | None
    # why the task takes no more entries or promotions (`closed`, `erased`); None while it is open
    closed_reason: str | None = None


@dataclass(frozen=True)
class StoredEntry:
    """A staging entry as read back."""

    id: int
    seq: int
    kind: str
    content: str
    payload: Any
    actor: str
    actor_type: str
    idempotency_key: str | None
    created_at: datetime


def _task(row: Any) -> TaskInfo:
    return TaskInfo(
        id=row.id,
        public_id=row.public_id or row.id,
        org=row.org,
        project=row.project,
        worktree=row.worktree,
        description=row.description,
        status=row.status,
        created_by=row.created_by,
        created_at=row.created_at,
        promotion_workflow_id=row.promotion_workflow_id,
        closed_reason=row.closed_reason,
    )


async def key_is_live(conn: AsyncConnection, key_hash: str) -> bool:
    """Whether an unrevoked API key has this hash."""
    found = await conn.execute(
        select(api_keys.c.id).where(api_keys.c.key_hash == key_hash, api_keys.c.revoked_at.is_(None))
    )
    return found.first() is not None


async def get_task(conn: AsyncConnection, task_id: str) -> TaskInfo | None:
    """The task whose key is `task_id`."""
    row = (await conn.execute(select(tasks).where(tasks.c.id == task_id))).first()
    return _task(row) if row is not None else None


# what migration 0018's unique index `tasks_tenant_task_id_key` covers, so the lookup uses it
_TENANT_TASK_ID = func.coalesce(tasks.c.public_id, tasks.c.id)


async def find_tasks(conn: AsyncConnection, task_id: str, orgs: Sequence[str] | None) -> list[TaskInfo]:
    """The tasks called `task_id` by their tenant, among `orgs` (None: every org); one per org at most."""
    query = select(tasks).where(_TENANT_TASK_ID == task_id)
    if orgs is not None:
        query = query.where(tasks.c.org.in_(list(orgs)))
    return [_task(r) for r in await conn.execute(query.order_by(tasks.c.org))]


async def open_task(
    engine: AsyncEngine,
    *,
    task_id: str,
    org: str,
    project: str,
    worktree: str,
    description: str,
    created_by: str,
    key: str | None = None,
) -> tuple[TaskInfo, bool]:
    """Create the task; reopening with identical attributes returns it (retry-safe): (task, created).

    `task_id` is taken once per tenant (`org`), never across tenants: another org's task of the same id is
    another task. Its key is `task_key(org, task_id)` unless `key` names one (reflection's own tasks).
    """
    description = redact_free_text(description) or ""  # free text, shown beside published memory
    async with engine.begin() as conn:
        row = (
            await conn.execute(
                text(
                    "INSERT INTO tasks (id, public_id, org, project, worktree, description, created_by) "
                    "VALUES (:id, :public_id, :org, :project, :worktree, :description, :created_by) "
                    "ON CONFLICT DO NOTHING RETURNING *"
                ),
                dict(
                    id=key or task_key(org, task_id),
                    public_id=task_id,
                    org=org,
                    project=project,
                    worktree=worktree,
                    description=description,
                    created_by=created_by,
                ),
            )
        ).first()
        if row is not None:
            return _task(row), True
        found = await find_tasks(conn, task_id, [org])
    if not found:  # the key is another tenant's: only a `key` named by the caller can be (reflection's)
        raise Conflict(f"task {task_id!r} cannot be opened in {org!r}: its key {key!r} is taken")
    existing = found[0]
    if (existing.org, existing.project, existing.worktree, existing.description) != (
        org,
        project,
        worktree,
        description,
    ):
        raise Conflict(f"task {task_id!r} already exists with different attributes")
    return existing, False


async def read_entries(
    conn: AsyncConnection,
    task_id: str,
    *,
    after_seq: int,
    limit: int | None,
    up_to_seq: int | None = None,
) -> list[StoredEntry]:
    """Entries of the task with `after_seq < seq (<= up_to_seq)`, in sequence order, at most `limit`."""
    query = (
        select(staging_entries)
        .where(staging_entries.c.task_id == task_id, staging_entries.c.seq > after_seq)
        .order_by(staging_entries.c.seq)
        .limit(limit)
    )
    if up_to_seq is not None:
        query = query.where(staging_entries.c.seq <= up_to_seq)
    rows = (await conn.execute(query)).all()
    return [
        StoredEntry(
            id=r.id,
            seq=r.seq,
            kind=r.kind,
            content=r.content,
            payload=r.payload,
            actor=r.actor_id,
            actor_type=r.actor_type,
            idempotency_key=r.idempotency_key,
            created_at=r.created_at,
        )
        for r in rows
    ]


async def last_seq(conn: AsyncConnection, task_id: str) -> int:
    """The task's highest sequence number (-1 when it has no entries): the end of a staging snapshot."""
    value = (
        await conn.execute(
            select(func.coalesce(func.max(staging_entries.c.seq), -1)).where(
                staging_entries.c.task_id == task_id
            )
        )
    ).scalar_one()
    return int(value)


async def snapshot_size(conn: AsyncConnection, task_id: str, after_seq: int = 0) -> tuple[int, int]:
    """(entries, last seq) of the task's staging after `after_seq` now: the extent of a promotion's snapshot
    (last seq -1 when the task has no entry at all, `after_seq` when none came after it)."""
    row = (
        await conn.execute(
            select(func.count(), func.coalesce(func.max(staging_entries.c.seq), -1)).where(
                staging_entries.c.task_id == task_id,
                staging_entries.c.seq > (after_seq if after_seq > 0 else -1),
            )
        )
    ).one()
    last = int(row[1])
    return int(row[0]), last if last >= 0 or after_seq <= 0 else after_seq


async def written_by_non_humans(conn: AsyncConnection, entry_ids: Sequence[int]) -> bool:
    """Whether any of these staging entries was written by someone other than a human."""
    if not entry_ids:
        return False
    found = await conn.execute(
        select(staging_entries.c.id)
        .where(staging_entries.c.id.in_(list(entry_ids)), staging_entries.c.actor_type != "human")
        .limit(1)
    )
    return found.first() is not None


async def snapshot_entries(
    conn: AsyncConnection, task_id: str, *, up_to_seq: int, after_seq: int = 0
) -> list[StoredEntry]:
    """The task's entries with `after_seq < seq <= up_to_seq`, in order: what a promotion reads (raw)."""
    return await read_entries(
        conn, task_id, after_seq=after_seq if after_seq > 0 else -1, limit=None, up_to_seq=up_to_seq
    )


async def set_task_status(conn: AsyncConnection, task_id: str, status: str) -> None:
    """Record where the task stands; an ended promotion's status (`ENDED_STATUSES`) also stamps `ended_at`.

    A status that is not an end (`promoting`) clears `ended_at`: staging of a task being promoted is never
    archived (governance/storage/staging_archive.py).
    """
    ended = func.now() if status in ENDED_STATUSES else None
    await conn.execute(update(tasks).where(tasks.c.id == task_id).values(status=status, ended_at=ended))


async def set_promotion_workflow(conn: AsyncConnection, task_id: str, workflow_id: str) -> None:
    """Remember on the task which workflow promotes it."""
    await conn.execute(update(tasks).where(tasks.c.id == task_id).values(promotion_workflow_id=workflow_id))


async def get_tasks(conn: AsyncConnection, task_ids: Sequence[str]) -> dict[str, TaskInfo]:
    """The tasks among `task_ids` that exist, by id."""
    if not task_ids:
        return {}
    rows = await conn.execute(select(tasks).where(tasks.c.id.in_(list(task_ids))))
    return {r.id: _task(r) for r in rows}


async def entry_decay_policies(conn: AsyncConnection, entry_ids: Sequence[int]) -> dict[int, str]:
    """The `decay_policy` each of these staging entries' payloads asks for (entries asking none left out)."""
    if not entry_ids:
        return {}
    asked = staging_entries.c.payload["decay_policy"].astext
    rows = await conn.execute(
        select(staging_entries.c.id, asked.label("policy")).where(
            staging_entries.c.id.in_(list(entry_ids)), asked.is_not(None)
        )
    )
    return {int(r.id): str(r.policy) for r in rows}
