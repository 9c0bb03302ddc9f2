"""The group commit of unkeyed appends: concurrent requests share a statement, each answered on its own.

A refused request of a flush (a closed task, a revoked key, a quota) refuses only itself; every
acknowledged entry is stored with the id and sequence number its request was told; sequences stay gapless
per task under parallel writers of several tasks, with and without a daily quota.
"""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.errors import (
    Conflict,
    DailyQuotaExceeded,
    GovernanceError,
    TaskQuotaExceeded,
    Unauthenticated,
)
from governance.identity import hash_api_key, key_id_of
from governance.limits import StagingQuota
from governance.scopes import ActorType, EntryKind
from governance.staging import EntryDraft
from governance.storage.append_group import GroupCommit
from governance.storage.identity import revoke_key
from governance.storage.promotions import close_task
from governance.storage.staging_append import Appended, append_batch, group_counts
from tests.utils.factories import make_actor, new_tenant, open_task


async def _task(engine: AsyncEngine, org: str, project: str) -> str:
    return await open_task(engine, org, project, "group commit")


async def _rows(engine: AsyncEngine, tasks: list[str]) -> dict[str, list[tuple[int, int, str]]]:
    """Each task's stored (seq, id, content), in sequence order."""
    async with engine.connect() as conn:
        found = await conn.execute(
            text(
                "SELECT task_id, seq, id, content FROM staging_entries WHERE task_id = ANY(:tasks) "
                "ORDER BY task_id, seq"
            ),
            {"tasks": tasks},
        )
        rows: dict[str, list[tuple[int, int, str]]] = {t: [] for t in tasks}
        for task_id, seq, entry_id, content in found:
            rows[task_id].append((int(seq), int(entry_id), content))
        return rows


def _batch(tag: str, n: int) -> list[EntryDraft]:
    return [EntryDraft(kind=EntryKind.LOG, content=f"{tag} e{i}") for i in range(n)]


async def test_group_commit_refuses_only_the_request_whose_task_closed_or_key_was_revoked(
    engine: AsyncEngine,
) -> None:
    org, project = new_tenant()
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    revoked = await make_actor(engine, ActorType.AGENT, org, project)
    tasks = [await _task(engine, org, project) for _ in range(4)]
    async with engine.begin() as conn:
        assert await close_task(conn, tasks[1], reason="closed", by="test")
        assert await revoke_key(conn, str(key_id_of(revoked.key)))
    quota = (org, StagingQuota())
    callers = [agent, agent, revoked, agent]
    flushes, items = group_counts(engine, daily=False)
    # started together: every request is queued before the group's first flush runs
    answers = await asyncio.gather(
        *(
            append_batch(
                engine,
                task_id,
                caller.principal,
                _batch(f"r{i}", 5),
                quota,
                key_hash=hash_api_key(caller.key),
            )
            for i, (task_id, caller) in enumerate(zip(tasks, callers, strict=True))
        ),
        return_exceptions=True,
    )
    assert group_counts(engine, daily=False) == (flushes + 1, items + 4)  # one statement for the four
    assert isinstance(answers[1], Conflict) and "closed" in str(answers[1])
    assert isinstance(answers[2], Unauthenticated)
    stored = await _rows(engine, tasks)
    for i in (0, 3):
        answer = answers[i]
        assert isinstance(answer, Appended)
        assert [(e.seq, e.id) for e in answer.entries] == [(s, e) for s, e, _ in stored[tasks[i]]]
        assert [c for _, _, c in stored[tasks[i]]] == [f"r{i} e{k}" for k in range(5)]
    assert stored[tasks[1]] == [] and stored[tasks[2]] == []


async def test_group_commit_refuses_a_batch_over_its_task_quota_and_writes_the_others(
    engine: AsyncEngine,
) -> None:
    org, project = new_tenant()
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    small, large = await _task(engine, org, project), await _task(engine, org, project)
    quota = (org, StagingQuota(task_entries=10))
    answers = await asyncio.gather(
        append_batch(engine, small, agent.principal, _batch("fits", 10), quota),
        append_batch(engine, large, agent.principal, _batch("over", 11), quota),
        return_exceptions=True,
    )
    assert isinstance(answers[0], Appended) and [e.seq for e in answers[0].entries] == list(range(1, 11))
    assert isinstance(answers[1], TaskQuotaExceeded)
    stored = await _rows(engine, [small, large])
    assert len(stored[small]) == 10 and stored[large] == []


async def test_group_commit_counts_a_tenants_day_across_the_requests_of_one_flush(
    engine: AsyncEngine,
) -> None:
    # three batches of 10 of one tenant in one flush, 25 a day: the first two fit, the third would pass
    # the quota with them and is refused; what is counted is what is stored
    org, project = new_tenant()
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    tasks = [await _task(engine, org, project) for _ in range(3)]
    quota = (org, StagingQuota(tenant_entries_per_day=25))
    flushes, items = group_counts(engine, daily=True)
    answers = await asyncio.gather(
        *(append_batch(engine, t, agent.principal, _batch(f"d{i}", 10), quota) for i, t in enumerate(tasks)),
        return_exceptions=True,
    )
    assert group_counts(engine, daily=True) == (flushes + 1, items + 3)
    assert [type(a) for a in answers] == [Appended, Appended, DailyQuotaExceeded]
    stored = await _rows(engine, tasks)
    assert [len(stored[t]) for t in tasks] == [10, 10, 0]
    async with engine.connect() as conn:
        counted = await conn.execute(
            text("SELECT coalesce(sum(entries), 0) FROM staging_daily_usage WHERE org = :org"), {"org": org}
        )
        assert int(counted.scalar_one()) == 20


@pytest.mark.parametrize("daily", [False, True], ids=["no-daily-quota", "daily-quota"])
async def test_group_commit_parallel_writers_store_every_acknowledged_entry_gaplessly(
    engine: AsyncEngine, daily: bool
) -> None:
    # 12 writers on 4 tasks (three writers a task, so a flush defers a task's second request); one task
    # closed while they write: its writers are refused from then on, the others never notice
    org, project = new_tenant()
    agents = [await make_actor(engine, ActorType.AGENT, org, project) for _ in range(3)]
    tasks = [await _task(engine, org, project) for _ in range(4)]
    quota = (org, StagingQuota(tenant_entries_per_day=1_000_000 if daily else 0))
    acked: dict[str, list[tuple[int, int, str]]] = {t: [] for t in tasks}
    flushes, items = group_counts(engine, daily=daily)
    refused: list[str] = []

    async def writer(index: int) -> None:
        task_id = tasks[index % 4]
        agent = agents[index % 3]
        for b in range(10):
            if index == 0 and b == 4:
                async with engine.begin() as conn:
                    await close_task(conn, tasks[1], reason="closed", by="test")
            drafts = _batch(f"w{index} b{b}", 1 + (index + b) % 7)
            try:
                done = await append_batch(engine, task_id, agent.principal, drafts, quota)
            except GovernanceError:
                refused.append(task_id)
                continue
            acked[task_id].extend((e.seq, e.id, d.content) for e, d in zip(done.entries, drafts, strict=True))

    await asyncio.wait_for(asyncio.gather(*(writer(i) for i in range(12))), timeout=120)
    flushed, carried = group_counts(engine, daily=daily)
    assert carried - items > flushed - flushes  # requests shared statements
    assert refused and set(refused) == {tasks[1]}  # only the closed task's writers, once it closed
    stored = await _rows(engine, tasks)
    for task_id in tasks:
        assert sorted(acked[task_id]) == stored[task_id]  # every acknowledged entry, nothing else
        assert [s for s, _, _ in stored[task_id]] == list(range(1, len(stored[task_id]) + 1))
    if daily:
        async with engine.connect() as conn:
            counted = await conn.execute(
                text("SELECT coalesce(sum(entries), 0) FROM staging_daily_usage WHERE org = :org"),
                {"org": org},
            )
            assert int(counted.scalar_one()) == sum(len(rows) for rows in stored.values())


async def test_group_commit_sends_queued_requests_together_and_a_task_in_order() -> None:
    flushed: list[list[tuple[str, int]]] = []
    gate = asyncio.Event()

    async def flush(items: list[tuple[str, int]]) -> list[int]:
        flushed.append(items)
        await gate.wait()
        return [n for _, n in items]

    group: GroupCommit[tuple[str, int], int] = GroupCommit(
        flush=flush, keys=lambda item: [item[0]], weight=lambda item: 1
    )
    first = asyncio.ensure_future(group.submit(("a", 0)))
    await asyncio.sleep(0)
    await asyncio.sleep(0)  # the first flush runs, holding ("a", 0)
    rest = [asyncio.ensure_future(group.submit(item)) for item in (("a", 1), ("b", 2), ("a", 3), ("c", 4))]
    gate.set()
    assert await asyncio.gather(first, *rest) == [0, 1, 2, 3, 4]
    # while ("a", 0) ran the others queued; a task's second request waits for the next flush
    assert flushed == [[("a", 0)], [("a", 1), ("b", 2), ("c", 4)], [("a", 3)]]
    assert (group.flushes, group.items) == (3, 5)


async def test_group_commit_a_failed_flush_fails_its_requests_only() -> None:
    calls = 0

    async def flush(items: list[str]) -> list[str]:
        nonlocal calls
        calls += 1
        if calls == 1:
            await asyncio.sleep(0)
            raise ConnectionError("database gone")
        return items

    group: GroupCommit[str, str] = GroupCommit(flush=flush, keys=lambda item: [item], weight=lambda item: 1)
    first = asyncio.ensure_future(group.submit("x"))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    second = asyncio.ensure_future(group.submit("y"))
    with pytest.raises(ConnectionError):
        await first
    assert await second == "y"


async def test_group_commit_a_request_cancelled_while_queued_is_never_sent() -> None:
    sent: list[str] = []
    gate = asyncio.Event()

    async def flush(items: list[str]) -> list[str]:
        sent.extend(items)
        await gate.wait()
        return items

    group: GroupCommit[str, str] = GroupCommit(flush=flush, keys=lambda item: [item], weight=lambda item: 1)
    first = asyncio.ensure_future(group.submit("a"))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    dropped = asyncio.ensure_future(group.submit("b"))
    kept = asyncio.ensure_future(group.submit("c"))
    await asyncio.sleep(0)
    dropped.cancel()
    gate.set()
    assert await first == "a" and await kept == "c"
    assert sent == ["a", "c"]


async def test_group_commit_with_two_runners_never_flushes_a_key_twice_at_once() -> None:
    running: set[str] = set()
    overlaps: list[str] = []
    flushed: list[list[str]] = []

    async def flush(items: list[str]) -> list[str]:
        keys = {item[0] for item in items}
        overlaps.extend(keys & running)
        running.update(keys)
        flushed.append(items)
        await asyncio.sleep(0.01)
        running.difference_update(keys)
        return items

    group: GroupCommit[str, str] = GroupCommit(
        flush=flush, keys=lambda item: [item[0]], weight=lambda item: 1, runners=2
    )
    first = asyncio.ensure_future(group.submit("a0"))
    await asyncio.sleep(0)
    await asyncio.sleep(0)  # "a0" is being flushed
    rest = [asyncio.ensure_future(group.submit(item)) for item in ("a1", "b1", "a2", "c1")]
    assert await asyncio.gather(first, *rest) == ["a0", "a1", "b1", "a2", "c1"]
    assert overlaps == []
    # the second runner took what "a0"'s keys did not hold; task a's requests kept their order
    assert flushed[0] == ["a0"] and flushed[1] == ["b1", "c1"]
    assert [i for f in flushed for i in f if i.startswith("a")] == ["a0", "a1", "a2"]
