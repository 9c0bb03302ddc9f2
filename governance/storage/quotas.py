"""Staging usage for the quotas, counted as appends happen (migration 0015), inside the append's transaction.

Without a daily quota the append statement itself counts a batch's bytes on `tasks.staged_bytes` and checks
the task's quotas (storage/staging_append.py); with one, `count_task_and_day` adds the bytes to the task
and the batch to one of the tenant's 8 rows of the UTC day, returning what the task held and the day's total
before it, in one round trip. A refused batch raises, and its transaction rolls the counts back with it:
nothing is written, nothing is counted. `task_usage` reads what a task holds (to word a refusal). Across
tasks of one tenant the day's total is what this statement's snapshot sees, so concurrent appends to
different tasks may both pass the last few entries of a daily quota. Bytes are the UTF-8 length of the
content plus that of the payload's JSON text; entries are every entry ever appended (`next_seq`), archived
ones included.
"""

from __future__ import annotations

import zlib

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.limits import StagingUsage

__all__ = ["DAILY_SHARDS", "count_task_and_day", "task_usage"]

# rows per tenant and day: appends to different tasks of a tenant spread over them
DAILY_SHARDS = 8

# one round trip: the task's count, the tenant's shard of the day, and the day's total before this batch
# (the other shards as this statement's snapshot sees them, plus this shard's row as it was)
_TASK_AND_DAY = text(
    """
    WITH task AS (
        UPDATE tasks SET staged_bytes = staged_bytes + :size WHERE id = :task_id
        RETURNING next_seq AS entries, staged_bytes - :size AS bytes
    ), mine AS (
        INSERT INTO staging_daily_usage AS u (org, day, shard, entries, bytes)
        SELECT :org, CAST(now() AT TIME ZONE 'UTC' AS date), :shard, :n, :size FROM task
        ON CONFLICT (org, day, shard)
        DO UPDATE SET entries = u.entries + EXCLUDED.entries, bytes = u.bytes + EXCLUDED.bytes
        RETURNING entries - :n AS entries, bytes - :size AS bytes
    ), others AS (
        SELECT coalesce(sum(entries), 0) AS entries, coalesce(sum(bytes), 0) AS bytes
        FROM staging_daily_usage
        WHERE org = :org AND day = CAST(now() AT TIME ZONE 'UTC' AS date) AND shard <> :shard
    )
    SELECT task.entries, task.bytes, mine.entries + others.entries AS day_entries,
           mine.bytes + others.bytes AS day_bytes
    FROM task, mine, others
    """
)


async def task_usage(conn: AsyncConnection, task_id: str) -> StagingUsage | None:
    """What the task holds now (entries ever appended, bytes counted); None: no such task."""
    row = (
        await conn.execute(
            text("SELECT next_seq AS entries, staged_bytes AS bytes FROM tasks WHERE id = :task_id"),
            {"task_id": task_id},
        )
    ).first()
    return None if row is None else StagingUsage(entries=int(row.entries), bytes=int(row.bytes))


async def count_task_and_day(
    conn: AsyncConnection, task_id: str, org: str, entries: int, size: int
) -> tuple[StagingUsage, StagingUsage] | None:
    """Count the batch on the task and on the tenant's UTC day, in one statement; what each held before.

    None: no such task (nothing counted).
    """
    shard = zlib.crc32(task_id.encode()) % DAILY_SHARDS
    params = {"task_id": task_id, "org": org, "shard": shard, "n": entries, "size": size}
    row = (await conn.execute(_TASK_AND_DAY, params)).first()
    if row is None:
        return None
    return (
        StagingUsage(entries=int(row.entries), bytes=int(row.bytes)),
        StagingUsage(entries=int(row.day_entries), bytes=int(row.day_bytes)),
    )
