"""Retention writes in Postgres: decay follows the pure rule idempotently; expiry and pruning write events."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.retention import PruneChoice
from governance.storage.retention import decay_confidences, expire_due, prune_memories
from governance.trust import decayed
from tests.utils.lifecycle_factories import Place, insert_memory


async def _confidence(engine: AsyncEngine, memory_id: str) -> float:
    async with engine.connect() as conn:
        return float(
            (
                await conn.execute(
                    text("SELECT confidence FROM memories WHERE id = CAST(:i AS uuid)"), {"i": memory_id}
                )
            ).scalar_one()
        )


async def _events(engine: AsyncEngine, memory_id: str, kind: str) -> int:
    async with engine.connect() as conn:
        return int(
            (
                await conn.execute(
                    text(
                        "SELECT count(*) FROM memory_events WHERE memory_id = CAST(:i AS uuid) "
                        "AND event_type = :k"
                    ),
                    {"i": memory_id, "k": kind},
                )
            ).scalar_one()
        )


@pytest.mark.parametrize(("policy", "days"), [("recency_bias", 45), ("stable", 200), ("manual_only", 900)])
async def test_decay_matches_pure_rule_and_twice_same_day_is_noop(
    engine: AsyncEngine, place: Place, policy: str, days: int
) -> None:
    now = datetime.now(UTC)
    validated = now - timedelta(days=days, hours=3)
    async with engine.begin() as conn:
        mid = await insert_memory(
            conn,
            place,
            memory_type="fact",
            confidence=0.8,
            base_confidence=0.8,
            decay_policy=policy,
            last_validated_at=validated,
        )
    for later in (0, 3600):
        async with engine.begin() as conn:
            await decay_confidences(conn, now=now + timedelta(seconds=later), dry_run=False, orgs=[place.org])
        assert await _confidence(engine, mid) == pytest.approx(decayed(0.8, policy, validated, now))
    assert await _events(engine, mid, "DECAYED") == (0 if policy == "manual_only" else 1)


async def test_decay_dry_run_counts_without_writing(engine: AsyncEngine, place: Place) -> None:
    now = datetime.now(UTC)
    async with engine.begin() as conn:
        mid = await insert_memory(
            conn,
            place,
            memory_type="fact",
            confidence=0.8,
            decay_policy="recency_bias",
            last_validated_at=now - timedelta(days=60),
        )
        assert await decay_confidences(conn, now=now, dry_run=True, orgs=[place.org]) == 1
    assert await _confidence(engine, mid) == 0.8 and await _events(engine, mid, "DECAYED") == 0


async def test_expire_deprecates_past_due_with_event(engine: AsyncEngine, place: Place) -> None:
    now = datetime.now(UTC)
    async with engine.begin() as conn:
        due = await insert_memory(conn, place, memory_type="fact", expires_at=now - timedelta(minutes=1))
        later = await insert_memory(conn, place, memory_type="fact", expires_at=now + timedelta(days=1))
        assert await expire_due(conn, now=now, dry_run=False, orgs=[place.org]) == 1
        assert await expire_due(conn, now=now, dry_run=False, orgs=[place.org]) == 0
    assert await _events(engine, due, "EXPIRED") == 1 and await _events(engine, later, "EXPIRED") == 0


async def test_prune_deletes_with_reason_and_spares_superseded_history(
    engine: AsyncEngine, place: Place
) -> None:
    async with engine.begin() as conn:
        gone = await insert_memory(conn, place)
        old = await insert_memory(conn, place, deprecated_at=datetime.now(UTC))
        await insert_memory(conn, place, supersedes_id=old)
        n = await prune_memories(
            conn, [PruneChoice(gone, "episode older than 90 days"), PruneChoice(old, "x")]
        )
    assert n == 1
    async with engine.connect() as conn:
        reason = (
            await conn.execute(
                text(
                    "SELECT reason FROM memory_events WHERE memory_id = CAST(:i AS uuid) "
                    "AND event_type = 'PRUNED'"
                ),
                {"i": gone},
            )
        ).scalar_one()
        left = (
            await conn.execute(
                text("SELECT count(*) FROM memories WHERE id = ANY(CAST(:ids AS uuid[]))"),
                {"ids": [gone, old]},
            )
        ).scalar_one()
    assert reason == "episode older than 90 days" and left == 1
