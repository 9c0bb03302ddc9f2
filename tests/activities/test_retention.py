"""The prune activity against concurrent change: a batch waits for the scope's lock, then checks again."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.testing import ActivityEnvironment

from activities.retention import PruneInput, RetentionActivities
from governance.retention import RetentionPolicy
from governance.scopes import Scope
from tests.utils.lifecycle_factories import insert_memory, new_place


async def _waiting_on_a_lock(engine: AsyncEngine) -> bool:
    async with engine.connect() as conn:
        found = await conn.execute(
            text(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND wait_event = 'advisory' AND datname = current_database()"
            )
        )
        return int(found.scalar_one()) > 0


async def test_prune_spares_a_memory_found_useful_while_its_batch_waited(engine: AsyncEngine) -> None:
    place = new_place()
    now = datetime.now(UTC)
    async with engine.begin() as conn:
        old = [
            await insert_memory(
                conn, place, created_at=now - timedelta(days=200 + i), decay_policy="manual_only"
            )
            for i in range(3)
        ]
    acts = RetentionActivities(engine)
    step = PruneInput(now=now, dry_run=False, policy=RetentionPolicy(keep_per_group=0), orgs=[place.org])

    # a publication holds the project scope; the prune reads, chooses all three, then waits for it
    publisher = await engine.connect()
    tx = await publisher.begin()
    await publisher.execute(
        text("SELECT pg_advisory_xact_lock(hashtextextended(:k, 0))"), {"k": place.key(Scope.PROJECT)}
    )
    running = asyncio.create_task(ActivityEnvironment().run(acts.prune, step))
    try:
        for _ in range(200):
            if await _waiting_on_a_lock(engine):
                break
            await asyncio.sleep(0.05)
        assert not running.done()
        # meanwhile a reader retrieves one and a principal says it helped
        async with engine.begin() as conn:
            await conn.execute(
                text(
                    "UPDATE memories SET retrieval_count = 1, usefulness = 0.65 WHERE id = CAST(:i AS uuid)"
                ),
                {"i": old[0]},
            )
    finally:
        await tx.commit()
        await publisher.close()
    result = await running
    assert set(result.ids) == set(old[1:]) and result.by_rule == {"episode_age": 2}
    async with engine.connect() as conn:
        left = await conn.execute(text("SELECT id::text FROM memories WHERE org = :o"), {"o": place.org})
        assert {r[0] for r in left} == {old[0]}
