"""Staging usage for the quotas, counted as appends happen (migration 0015), inside the append statement.

The append statement itself counts a batch's bytes on `tasks.staged_bytes` and checks the task's quotas
(storage/staging_append.py); with a daily quota it also locks the task's shard of the tenant's UTC day (one
of 8 rows, `shard_of`), checks the day's total, and adds the batch to that shard, all in the same statement:
a refused batch is neither written nor counted. `task_usage` and `day_usage` read what a task holds and what
a tenant appended today (to word a refusal). The day's total is the locked shard as it stands plus the
other shards as the statement's snapshot sees them, so concurrent appends to tasks of different shards (and
the first two appends of a shard in a day) may both pass the last few entries of a daily quota. Bytes are
the UTF-8 length of the content plus that of the payload's JSON text; entries are every entry ever appended
(`next_seq`), archived ones included.
"""

from __future__ import annotations

import zlib

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.limits import StagingUsage

__all__ = ["DAILY_SHARDS", "day_usage", "shard_of", "task_usage"]

# rows per tenant and day: appends to different tasks of a tenant spread over them
DAILY_SHARDS = 8


def shard_of(task_id: str) -> int:
    """Which of its tenant's daily rows a task's appends count on."""
    return zlib.crc32(task_id.encode()) % DAILY_SHARDS


_DAY_USAGE = text(
    """
    SELECT coalesce(sum(entries), 0) AS entries, coalesce(sum(bytes), 0) AS bytes
    FROM staging_daily_usage WHERE org = :org AND day = CAST(now() AT TIME ZONE 'UTC' AS date)
    """
)


async def day_usage(conn: AsyncConnection, org: str) -> StagingUsage:
    """What the tenant appended so far today (UTC), every shard."""
    row = (await conn.execute(_DAY_USAGE, {"org": org})).one()
    return StagingUsage(entries=int(row.entries), bytes=int(row.bytes))


async def task_usage(conn: AsyncConnection, task_id: str) -> StagingUsage | None:
    """What the task holds now (entries ever appended, bytes counted); None: no such task."""
    row = (
        await conn.execute(
            text("SELECT next_seq AS entries, staged_bytes AS bytes FROM tasks WHERE id = :task_id"),
            {"task_id": task_id},
        )
    ).first()
    return None if row is None else StagingUsage(entries=int(row.entries), bytes=int(row.bytes))
