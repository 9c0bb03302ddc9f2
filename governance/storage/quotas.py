"""Staging usage for the quotas, counted as appends happen (migration 0015), inside the append statement.

The append statement itself counts a batch's bytes on `tasks.staged_bytes` and checks the task's quotas
(storage/staging_append.py); with a daily quota it also locks the task's shard of the tenant's UTC day (one
of 8 rows, `shard_of`), checks the day's total, and adds the batch to that shard, all in the same statement:
a refused batch is neither written nor counted. `task_usage` and `day_usage` read what a task holds and what
a tenant appended today (to word a refusal). The day's total is the locked shard as it stands plus the
other shards as the statement's snapshot sees them, so concurrent appends to tasks of different shards may
both pass the last few entries of a daily quota. The day's rows exist before its first append counts on
them (`seed_days`, once a day per tenant and process): a statement that found its shard missing would take
the task's row first and the shard's lock after, against the order every other append keeps, and two such
appends deadlocked. Bytes are the UTF-8 length of the content plus that of the payload's JSON text; entries
are every entry ever appended (`next_seq`), archived ones included.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import zlib

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from governance.limits import StagingUsage

__all__ = ["DAILY_SHARDS", "day_usage", "seed_days", "shard_of", "task_usage"]

# rows per tenant and day: appends to different tasks of a tenant spread over them
DAILY_SHARDS = 8


def shard_of(task_id: str) -> int:
    """Which of its tenant's daily rows a task's appends count on."""
    return zlib.crc32(task_id.encode()) % DAILY_SHARDS


# today's and tomorrow's rows of every shard, by the database's clock (a gateway's may differ around
# midnight): empty rows count nothing
_SEED_DAYS = text(
    """
    INSERT INTO staging_daily_usage (org, day, shard, entries, bytes)
    SELECT :org, CAST(now() AT TIME ZONE 'UTC' AS date) + d, s, 0, 0
    FROM generate_series(0, 1) AS d, generate_series(0, :shards - 1) AS s
    ON CONFLICT (org, day, shard) DO NOTHING
    """
)
# (engine, tenant) -> the UTC date (this process's clock) its rows were last seeded on
_seeded: dict[tuple[int, str], dt.date] = {}
# the seeds running, by loop, engine and tenant: the appends that arrive meanwhile wait for the same one
_seeding: dict[tuple[int, int, str], asyncio.Future[None]] = {}


async def seed_days(engine: AsyncEngine, org: str) -> None:
    """Make sure the tenant's daily rows exist for today and tomorrow before an append counts on them;
    one statement the first time a process counts the tenant's day, then nothing until its date turns.
    Appends arriving while it runs wait for it, and go on together (into one flush of the group commit)."""
    today = dt.datetime.now(dt.UTC).date()
    key = (id(engine.sync_engine), org)
    if _seeded.get(key) == today:
        return
    running = (id(asyncio.get_running_loop()), *key)
    pending = _seeding.get(running)
    if pending is None:
        pending = asyncio.ensure_future(_seed(engine, org, key, today))
        _seeding[running] = pending
        pending.add_done_callback(lambda _: _seeding.pop(running, None))
    await asyncio.shield(pending)  # one caller cancelled leaves the seed to the others


async def _seed(engine: AsyncEngine, org: str, key: tuple[int, str], today: dt.date) -> None:
    async with engine.begin() as conn:
        await conn.execute(_SEED_DAYS, {"org": org, "shards": DAILY_SHARDS})
    if len(_seeded) > 10_000:  # tenants of other days: forget them all rather than grow without bound
        _seeded.clear()
    _seeded[key] = today


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
