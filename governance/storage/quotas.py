"""Staging usage for the quotas, counted as appends happen (migration 0015), inside the append's transaction.

`count_task` adds a batch's bytes to `tasks.staged_bytes` (the row the append locks anyway) and returns what
the task held before it; `count_tenant_day` adds the batch to one of the tenant's 8 rows of the UTC day and
returns the day's total before it. A refused batch raises, and its transaction rolls the counts back with
it: nothing is written, nothing is counted. Bytes are the UTF-8 length of the content plus that of the
payload's JSON text; entries are every entry ever appended (`next_seq`), archived ones included.
"""

from __future__ import annotations

import zlib

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.limits import StagingUsage

__all__ = ["DAILY_SHARDS", "count_task", "count_tenant_day"]

# rows per tenant and day: appends to different tasks of a tenant spread over them
DAILY_SHARDS = 8

_TASK = text(
    """
    UPDATE tasks SET staged_bytes = staged_bytes + :size WHERE id = :task_id
    RETURNING next_seq AS entries, staged_bytes - :size AS bytes
    """
)
_DAY = text(
    """
    INSERT INTO staging_daily_usage AS u (org, day, shard, entries, bytes)
    VALUES (:org, CAST(now() AT TIME ZONE 'UTC' AS date), :shard, :n, :size)
    ON CONFLICT (org, day, shard)
    DO UPDATE SET entries = u.entries + EXCLUDED.entries, bytes = u.bytes + EXCLUDED.bytes
    """
)
_DAY_TOTAL = text(
    """
    SELECT coalesce(sum(entries), 0) AS entries, coalesce(sum(bytes), 0) AS bytes FROM staging_daily_usage
    WHERE org = :org AND day = CAST(now() AT TIME ZONE 'UTC' AS date)
    """
)


async def count_task(conn: AsyncConnection, task_id: str, size: int) -> StagingUsage | None:
    """Add `size` bytes to the task's count (its row locked); what it held before. None: no such task."""
    row = (await conn.execute(_TASK, {"task_id": task_id, "size": size})).first()
    return None if row is None else StagingUsage(entries=int(row.entries), bytes=int(row.bytes))


async def count_tenant_day(
    conn: AsyncConnection, org: str, task_id: str, entries: int, size: int
) -> StagingUsage:
    """Add the batch to the tenant's UTC day; the day's entries and bytes before it."""
    shard = zlib.crc32(task_id.encode()) % DAILY_SHARDS
    await conn.execute(_DAY, {"org": org, "shard": shard, "n": entries, "size": size})
    row = (await conn.execute(_DAY_TOTAL, {"org": org})).one()
    return StagingUsage(entries=int(row.entries) - entries, bytes=int(row.bytes) - size)
