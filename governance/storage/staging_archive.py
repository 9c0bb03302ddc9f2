"""Staging at scale: monthly partitions kept ahead of time, and the archive of ended tasks' staging.

`staging_entries` is range-partitioned by month (UTC) of `created_at` (migration 0005). The database
function `loregate_staging_partition(month)` creates a month's partition (idempotent; rows the default
partition caught for that month move into it); `ensure_staging_partitions` calls it, and
`drop_empty_partitions` drops old months the archive emptied, each under a short lock timeout so a busy
table is left for the next night.

The archive takes, per task, the entries with `seq >= archived_next_seq` (`next_seq` is the last sequence
number handed out) once the task's
promotion ended (`tasks.ended_at`, see staging.ENDED_STATUSES) before a cutoff. A chunk is read under the
task row's lock (`lock_archivable_task`: appends to that task wait, and a promotion starting meanwhile sees
the task after the chunk left), deleted with its idempotency keys, and `archived_next_seq` moved past it,
in the caller's transaction — the one that also records the STAGING_ARCHIVED event.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.staging_archive import ArchivedEntry
from governance.storage.staging import ENDED_STATUSES

__all__ = [
    "ArchivableTask",
    "StagingPartition",
    "ensure_staging_partitions",
    "staging_partitions",
    "drop_empty_partitions",
    "archivable_tasks",
    "lock_archivable_task",
    "entries_to_archive",
    "delete_archived",
    "skip_missing",
]

_PARTITION_NAME = re.compile(r"^staging_entries_y(\d{4})m(\d{2})$")
_ORG_FILTER = "(CAST(:orgs AS text[]) IS NULL OR t.org = ANY(CAST(:orgs AS text[])))"
# the entries still in staging (sequence numbers run from 1 to `next_seq`, the last one handed out)
_PENDING = "(SELECT count(*) FROM staging_entries s WHERE s.task_id = t.id AND s.seq >= t.archived_next_seq)"
_DUE = (
    "t.status = ANY(CAST(:ended AS text[])) AND t.ended_at IS NOT NULL AND t.ended_at < :cutoff "
    "AND t.next_seq >= t.archived_next_seq"
)


@dataclass(frozen=True)
class ArchivableTask:
    """A task whose staging is due for the archive, and how many entries it has left in staging."""

    task_id: str
    org: str
    project: str
    ended_at: datetime
    pending: int


@dataclass(frozen=True)
class StagingPartition:
    """One partition of staging_entries: its name, the month it holds (None: the default) and its rows."""

    name: str
    month: datetime | None
    rows: int


def _month_of(name: str) -> datetime | None:
    match = _PARTITION_NAME.match(name)
    return datetime(int(match[1]), int(match[2]), 1, tzinfo=UTC) if match else None


async def ensure_staging_partitions(conn: AsyncConnection, months: Sequence[datetime]) -> list[str]:
    """Create the partitions of these months where missing; the names of those it created."""
    names: list[str] = []
    for month in months:
        name = (await conn.execute(text("SELECT loregate_staging_partition(:m)"), {"m": month})).scalar_one()
        if name is not None:
            names.append(str(name))
    return names


async def staging_partitions(conn: AsyncConnection) -> list[StagingPartition]:
    """Every partition of staging_entries with its (estimated, after ANALYZE; exact when empty) row count."""
    rows = (
        await conn.execute(
            text(
                """
                SELECT c.relname AS name, c.reltuples::bigint AS estimate
                FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                WHERE i.inhparent = 'staging_entries'::regclass ORDER BY c.relname
                """
            )
        )
    ).all()
    return [StagingPartition(r.name, _month_of(r.name), max(0, int(r.estimate))) for r in rows]


async def drop_empty_partitions(conn: AsyncConnection, *, before: datetime) -> list[str]:
    """Drop the monthly partitions of months before `before` that hold no rows; the names dropped.

    Dropping a partition locks the parent table: each drop waits at most 2 s for it (a savepoint), and a
    partition that cannot be dropped now is left for the next run.
    """
    dropped: list[str] = []
    for part in await staging_partitions(conn):
        if part.month is None or part.month >= before:
            continue
        async with conn.begin_nested() as savepoint:
            try:
                await conn.execute(text("SET LOCAL lock_timeout = '2s'"))
                empty = (
                    await conn.execute(text(f'SELECT NOT EXISTS (SELECT 1 FROM "{part.name}")'))
                ).scalar_one()
                if empty:
                    await conn.execute(text(f'DROP TABLE "{part.name}"'))
                    dropped.append(part.name)
            except DBAPIError:
                await savepoint.rollback()
    return dropped


async def archivable_tasks(
    conn: AsyncConnection,
    *,
    ended_before: datetime,
    orgs: Sequence[str] | None = None,
    limit: int = 100,
    after: tuple[datetime, str] | None = None,
) -> list[ArchivableTask]:
    """Tasks whose promotion ended before `ended_before` and that still have staging, oldest end first.

    `after` (the last task's (ended_at, id)) pages through them.
    """
    rows = (
        await conn.execute(
            text(
                f"""
                SELECT t.id, t.org, t.project, t.ended_at, {_PENDING} AS pending
                FROM tasks t
                WHERE {_DUE} AND {_ORG_FILTER}
                  AND (CAST(:after_at AS timestamptz) IS NULL
                       OR (t.ended_at, t.id) > (CAST(:after_at AS timestamptz), CAST(:after_id AS text)))
                ORDER BY t.ended_at, t.id LIMIT :limit
                """
            ),
            {
                "ended": sorted(ENDED_STATUSES),
                "cutoff": ended_before,
                "orgs": list(orgs) if orgs is not None else None,
                "after_at": after[0] if after else None,
                "after_id": after[1] if after else None,
                "limit": limit,
            },
        )
    ).all()
    return [ArchivableTask(r.id, r.org, r.project, r.ended_at, int(r.pending)) for r in rows]


async def lock_archivable_task(
    conn: AsyncConnection, task_id: str, *, ended_before: datetime
) -> ArchivableTask | None:
    """Lock the task row and check again that it is due (a promotion may have started since); else None."""
    row = (
        await conn.execute(
            text(
                f"""
                SELECT t.id, t.org, t.project, t.ended_at, {_PENDING} AS pending
                FROM tasks t WHERE t.id = :task_id AND {_DUE} FOR UPDATE
                """
            ),
            {"task_id": task_id, "ended": sorted(ENDED_STATUSES), "cutoff": ended_before},
        )
    ).first()
    return ArchivableTask(row.id, row.org, row.project, row.ended_at, int(row.pending)) if row else None


async def entries_to_archive(conn: AsyncConnection, task_id: str, *, limit: int) -> list[ArchivedEntry]:
    """The task's next `limit` entries not archived yet, in sequence order, exactly as stored."""
    rows = (
        await conn.execute(
            text(
                """
                SELECT s.id, s.task_id, s.seq, s.actor_id, s.actor_type, s.kind, s.content,
                       s.payload::text AS payload_json, s.idempotency_key, s.request_hash, s.created_at
                FROM staging_entries s JOIN tasks t ON t.id = s.task_id
                WHERE s.task_id = :task_id AND s.seq >= t.archived_next_seq
                ORDER BY s.seq LIMIT :limit
                """
            ),
            {"task_id": task_id, "limit": limit},
        )
    ).all()
    return [ArchivedEntry(**r._mapping) for r in rows]


async def delete_archived(conn: AsyncConnection, task_id: str, *, first_seq: int, last_seq: int) -> int:
    """Delete the task's entries `first_seq..last_seq` and their idempotency keys; mark them archived."""
    params = {"task_id": task_id, "first": first_seq, "last": last_seq}
    deleted = (
        await conn.execute(
            text(
                """
                WITH gone AS (
                    DELETE FROM staging_entries WHERE task_id = :task_id AND seq BETWEEN :first AND :last
                    RETURNING 1
                ), keys AS (
                    DELETE FROM staging_idempotency WHERE task_id = :task_id AND seq BETWEEN :first AND :last
                )
                SELECT count(*) FROM gone
                """
            ),
            params,
        )
    ).scalar_one()
    await conn.execute(
        text(
            "UPDATE tasks SET archived_next_seq = GREATEST(archived_next_seq, :last + 1) WHERE id = :task_id"
        ),
        params,
    )
    return int(deleted)


async def skip_missing(conn: AsyncConnection, task_id: str) -> None:
    """The task's counter is past entries that are not there (nothing left to archive): catch up to it."""
    await conn.execute(
        text("UPDATE tasks SET archived_next_seq = next_seq + 1 WHERE id = :task_id"), {"task_id": task_id}
    )
