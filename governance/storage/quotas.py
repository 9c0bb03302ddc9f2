"""Staging usage counted for the quotas: a task's entries and bytes, a tenant's appends in the UTC day.

Called inside the append's transaction (governance/storage/staging.py) after the task's row is locked, so
the task's count is exact under concurrent writers; the tenant's day is counted over its tasks' entries and
two appends to different tasks of one tenant may both pass the last few entries of its quota.
Bytes are the UTF-8 length of the content plus that of the payload's JSON text.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.limits import StagingUsage

__all__ = ["lock_task_usage", "tenant_usage_today"]

_TASK_USAGE = text(
    """
    SELECT t.next_seq AS entries,
           (SELECT coalesce(sum(octet_length(e.content) + coalesce(octet_length(e.payload::text), 0)), 0)
              FROM staging_entries e WHERE e.task_id = t.id) AS bytes
    FROM tasks t WHERE t.id = :task_id FOR UPDATE OF t
    """
)

_TENANT_TODAY = text(
    """
    SELECT count(*) AS entries,
           coalesce(sum(octet_length(e.content) + coalesce(octet_length(e.payload::text), 0)), 0) AS bytes
    FROM staging_entries e JOIN tasks t ON t.id = e.task_id
    WHERE t.org = :org
      AND e.created_at >= (date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')
    """
)


async def lock_task_usage(conn: AsyncConnection, task_id: str) -> StagingUsage | None:
    """The task's staging so far (entries ever appended, bytes still held), its row locked; None: no task."""
    row = (await conn.execute(_TASK_USAGE, {"task_id": task_id})).first()
    return None if row is None else StagingUsage(entries=int(row.entries), bytes=int(row.bytes))


async def tenant_usage_today(conn: AsyncConnection, org: str) -> StagingUsage:
    """The entries and bytes the tenant's tasks appended since the UTC day began."""
    row = (await conn.execute(_TENANT_TODAY, {"org": org})).one()
    return StagingUsage(entries=int(row.entries), bytes=int(row.bytes))
