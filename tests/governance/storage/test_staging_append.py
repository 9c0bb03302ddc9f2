"""The driver-level append: a dead pooled connection costs nothing twice, a revoked key writes nothing.

The common append (no idempotency key) pings on the driver's connection instead of at the pool's checkout,
then pipelines its statements; these tests hold it to what the pool's ping promised, to the key check inside
the statement, and to the daily quota counted in the statement itself.
"""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from sqlalchemy import select, text
from sqlalchemy.exc import DataError
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.config import Settings
from governance.errors import DailyQuotaExceeded, Unauthenticated
from governance.identity import hash_api_key, key_id_of
from governance.limits import StagingQuota
from governance.scopes import ActorType, EntryKind
from governance.staging import EntryDraft
from governance.storage.engine import make_engine
from governance.storage.identity import revoke_key
from governance.storage.staging_append import append_batch
from governance.storage.tables import staging_entries
from tests.utils.factories import make_actor, new_tenant, open_task

# no daily quota (the statement that counts one is tested at the end)
NO_DAY = StagingQuota()


async def _task(engine: AsyncEngine, org: str, project: str) -> str:
    return await open_task(engine, org, project, "append path")


async def _seqs(engine: AsyncEngine, task_id: str) -> list[int]:
    async with engine.connect() as conn:
        query = select(staging_entries.c.seq).where(staging_entries.c.task_id == task_id)
        return sorted(int(s) for s in (await conn.execute(query)).scalars())


def _draft(content: str) -> list[EntryDraft]:
    return [EntryDraft(kind=EntryKind.LOG, content=content)]


async def test_append_batch_on_a_pooled_connection_that_died_writes_once(
    settings: Settings, engine: AsyncEngine
) -> None:
    org, project = new_tenant()
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    task_id = await _task(engine, org, project)
    pooled = make_engine(settings.model_copy(update={"db_pool_size": 1}))
    try:
        first = await append_batch(pooled, task_id, agent.principal, _draft("one"), (org, NO_DAY))
        async with pooled.connect() as conn:
            backend = int((await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one())
        async with engine.connect() as conn:  # the server ends the pooled session (as a restart does)
            await conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": backend})
        second = await append_batch(pooled, task_id, agent.principal, _draft("two"), (org, NO_DAY))
    finally:
        await pooled.dispose()
    assert [e.seq for e in first.entries + second.entries] == [1, 2]
    assert await _seqs(engine, task_id) == [1, 2]  # the failed ping ran nothing: no entry twice, no gap


async def test_append_batch_with_a_revoked_key_writes_nothing(engine: AsyncEngine) -> None:
    org, project = new_tenant()
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    other = await make_actor(engine, ActorType.AGENT, org, project)
    task_id = await _task(engine, org, project)
    key_hash = hash_api_key(agent.key)
    done = await append_batch(
        engine, task_id, agent.principal, _draft("before"), (org, NO_DAY), key_hash=key_hash
    )
    assert [e.seq for e in done.entries] == [1]
    async with engine.begin() as conn:
        assert await revoke_key(conn, str(key_id_of(agent.key)))
    with pytest.raises(Unauthenticated, match="revoked"):
        await append_batch(
            engine, task_id, agent.principal, _draft("after"), (org, NO_DAY), key_hash=key_hash
        )
    # the refused batch reserved nothing: the next live writer gets the next number, no gap
    done = await append_batch(
        engine, task_id, other.principal, _draft("next"), (org, NO_DAY), key_hash=hash_api_key(other.key)
    )
    assert [e.seq for e in done.entries] == [2]
    assert await _seqs(engine, task_id) == [1, 2]


async def test_append_batch_with_a_revoked_key_writes_nothing_under_a_daily_quota(
    engine: AsyncEngine,
) -> None:
    org, project = new_tenant()
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    task_id = await _task(engine, org, project)
    async with engine.begin() as conn:
        assert await revoke_key(conn, str(key_id_of(agent.key)))
    daily = (org, StagingQuota(tenant_entries_per_day=1_000))
    keyed = [EntryDraft(kind=EntryKind.LOG, content="keyed", idempotency_key="k-1")]
    for drafts, quota in ((_draft("day"), daily), (keyed, (org, NO_DAY))):  # day counted; keyed path
        with pytest.raises(Unauthenticated):
            await append_batch(
                engine, task_id, agent.principal, drafts, quota, key_hash=hash_api_key(agent.key)
            )
    assert await _seqs(engine, task_id) == []


async def test_append_batch_refused_by_the_database_leaves_its_connection_as_it_was(
    settings: Settings, engine: AsyncEngine
) -> None:
    org, project = new_tenant()
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    task_id = await _task(engine, org, project)
    # an actor id longer than its column: the database refuses the statement (as SQLAlchemy reports it)
    unstorable = dataclasses.replace(agent.principal, id="x" * 65)
    pooled = make_engine(settings.model_copy(update={"db_pool_size": 1}))
    try:
        with pytest.raises(DataError):
            await append_batch(pooled, task_id, unstorable, _draft("refused"), (org, NO_DAY))
        async with pooled.connect() as conn:  # the one pooled connection, in a transaction as before
            raw = await conn.get_raw_connection()
            assert raw.driver_connection.autocommit is False
        done = await append_batch(pooled, task_id, agent.principal, _draft("fine"), (org, NO_DAY))
    finally:
        await pooled.dispose()
    assert [e.seq for e in done.entries] == [1]  # the refused batch reserved nothing
    assert await _seqs(engine, task_id) == [1]


async def _day_counted(engine: AsyncEngine, org: str) -> int:
    async with engine.connect() as conn:
        found = await conn.execute(
            text("SELECT coalesce(sum(entries), 0) FROM staging_daily_usage WHERE org = :org"), {"org": org}
        )
        return int(found.scalar_one())


async def _stored(engine: AsyncEngine, tasks: list[str]) -> int:
    async with engine.connect() as conn:
        found = await conn.execute(
            text("SELECT count(*) FROM staging_entries WHERE task_id = ANY(:tasks)"), {"tasks": tasks}
        )
        return int(found.scalar_one())


async def test_parallel_appends_under_a_daily_quota_count_exactly_what_they_write(
    engine: AsyncEngine,
) -> None:
    # the day is counted in the append statement: writers of one tenant, keyed and unkeyed, on tasks of the
    # same shard and of others, never wait on each other's locks in a cycle, and what is counted is written
    org, project = new_tenant()
    agents = [await make_actor(engine, ActorType.AGENT, org, project) for _ in range(6)]
    tasks = [await _task(engine, org, project) for _ in range(3)]
    quota = (org, StagingQuota(tenant_entries_per_day=100_000, task_entries=100_000))

    async def writer(index: int) -> int:
        written = 0
        for b in range(8):
            keyed = b % 2 == 1
            drafts = [
                EntryDraft(
                    EntryKind.LOG, f"w{index} b{b} e{i}", idempotency_key=f"{b}-{i}" if keyed else None
                )
                for i in range(10)
            ]
            appended = await append_batch(
                engine, tasks[(index + b) % 3], agents[index].principal, drafts, quota
            )
            written += sum(not e.replayed for e in appended.entries)
        return written

    written = sum(await asyncio.wait_for(asyncio.gather(*(writer(i) for i in range(6))), timeout=120))
    assert written == 6 * 8 * 10
    assert await _stored(engine, tasks) == written == await _day_counted(engine, org)
    for task_id in tasks:
        seqs = await _seqs(engine, task_id)
        assert seqs == list(range(1, len(seqs) + 1))


async def test_daily_quota_in_the_statement_refuses_the_whole_batch_and_counts_nothing(
    engine: AsyncEngine,
) -> None:
    org, project = new_tenant()
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    first, second = await _task(engine, org, project), await _task(engine, org, project)
    quota = (org, StagingQuota(tenant_entries_per_day=25))
    batch = [EntryDraft(EntryKind.LOG, f"e{i}") for i in range(10)]
    for task_id in (first, second):  # 20 of 25, on two tasks (shards of the tenant's day)
        await append_batch(engine, task_id, agent.principal, batch, quota)
    keyed = [EntryDraft(EntryKind.LOG, f"k{i}", idempotency_key=f"k{i}") for i in range(10)]
    for drafts in (batch, keyed):  # the pipelined path and the keyed one
        with pytest.raises(DailyQuotaExceeded, match=f"tenant {org!r} appended 20 staging entries today"):
            await append_batch(engine, second, agent.principal, drafts, quota)
    assert await _day_counted(engine, org) == 20 == await _stored(engine, [first, second])
    fits = await append_batch(engine, first, agent.principal, batch[:5], quota)
    assert [e.seq for e in fits.entries] == [11, 12, 13, 14, 15]
    assert await _day_counted(engine, org) == 25


async def _first_day_of_a_tenant(engine: AsyncEngine, writers: int, appends: int) -> str:
    """A new tenant whose `writers` agents append `appends` keyed entries each, all at once, to one task."""
    org, project = new_tenant()
    agents = [await make_actor(engine, ActorType.AGENT, org, project) for _ in range(writers)]
    task_id = await _task(engine, org, project)
    quota = (org, StagingQuota(tenant_entries_per_day=100_000))

    async def writer(index: int) -> None:
        for i in range(appends):
            drafts = [EntryDraft(EntryKind.LOG, f"w{index} e{i}", idempotency_key=f"k{i}")]
            await append_batch(engine, task_id, agents[index].principal, drafts, quota)

    await asyncio.wait_for(asyncio.gather(*(writer(i) for i in range(writers))), timeout=60)
    assert await _seqs(engine, task_id) == list(range(1, writers * appends + 1))
    return org


async def test_the_first_appends_of_a_tenants_day_in_parallel_on_one_task_never_deadlock(
    engine: AsyncEngine,
) -> None:
    # A statement that found its shard of the day missing took the task's row before the shard's lock, and
    # one that found the row a moment later took them the other way round: the day's rows are made first.
    for _ in range(4):
        org = await _first_day_of_a_tenant(engine, writers=12, appends=3)
        assert await _day_counted(engine, org) == 12 * 3
        async with engine.connect() as conn:
            days = await conn.execute(
                text("SELECT count(*) FROM staging_daily_usage WHERE org = :org"), {"org": org}
            )
            assert days.scalar_one() == 2 * 8  # today and tomorrow, every shard
