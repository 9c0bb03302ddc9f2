"""Retention in Postgres: decay follows the pure rule idempotently; expiry and pruning write events;
pruning reads votes, retrievals and derivations, relinks survivors, drops embeddings, marks stale."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.operations.retention import prune_memories
from governance.retention import PruneChoice, RetentionPolicy, select_for_pruning
from governance.scopes import Scope
from governance.storage.derivations import record_derivations
from governance.storage.embedding_cache import cache_vectors, cached_vectors, text_digest
from governance.storage.erasure import content_sha256
from governance.storage.retention import (
    active_group_counts,
    decay_confidences,
    expire_due,
    load_retention_rows,
)
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


async def _exists(engine: AsyncEngine, ids: list[str]) -> set[str]:
    async with engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT id::text FROM memories WHERE id = ANY(CAST(:ids AS uuid[]))"), {"ids": ids}
        )
        return {r[0] for r in rows}


async def test_prune_relinks_history_past_pruned_versions(engine: AsyncEngine, place: Place) -> None:
    long_ago = datetime.now(UTC) - timedelta(days=400)
    async with engine.begin() as conn:
        v1 = await insert_memory(conn, place, memory_type="fact", deprecated_at=long_ago)
        v2 = await insert_memory(conn, place, memory_type="fact", deprecated_at=long_ago, supersedes_id=v1)
        v3 = await insert_memory(conn, place, memory_type="fact", supersedes_id=v2, related_ids=[v1])
        outcome = await prune_memories(
            conn, [PruneChoice(v2, "inactive", "inactive_age"), PruneChoice(v1, "inactive", "inactive_age")]
        )
    assert {p.label.id for p in outcome.pruned} == {v1, v2} and outcome.stale_marked == []
    assert await _exists(engine, [v1, v2, v3]) == {v3}
    async with engine.connect() as conn:
        head = (
            await conn.execute(
                text("SELECT supersedes_id, related_ids FROM memories WHERE id = CAST(:i AS uuid)"), {"i": v3}
            )
        ).one()
    assert head.supersedes_id is None and head.related_ids == []


async def test_prune_of_a_middle_version_links_its_successor_to_the_kept_one(
    engine: AsyncEngine, place: Place
) -> None:
    long_ago = datetime.now(UTC) - timedelta(days=400)
    async with engine.begin() as conn:
        v1 = await insert_memory(conn, place, memory_type="fact", deprecated_at=long_ago)
        v2 = await insert_memory(conn, place, memory_type="fact", deprecated_at=long_ago, supersedes_id=v1)
        v3 = await insert_memory(conn, place, memory_type="fact", supersedes_id=v2)
        # v1 kept (e.g. in the next batch): v3's predecessor becomes v1, which v2 pointed at until deleted
        await prune_memories(conn, [PruneChoice(v2, "inactive", "inactive_age")])
        head = (
            await conn.execute(
                text("SELECT supersedes_id::text FROM memories WHERE id = CAST(:i AS uuid)"), {"i": v3}
            )
        ).scalar_one()
    assert head == v1 and await _exists(engine, [v1, v2, v3]) == {v1, v3}


async def test_prune_events_keep_hashes_and_titles_never_content(engine: AsyncEngine, place: Place) -> None:
    secretish = "the exact wording of an old episode 7f3a"
    async with engine.begin() as conn:
        gone = await insert_memory(conn, place, content=secretish, title="Episode: old work")
        await cache_vectors(conn, "test-model", {text_digest(secretish): [0.1] * 384})
        await prune_memories(conn, [PruneChoice(gone, "episode older than 90 days", "episode_age")])
    async with engine.connect() as conn:
        event = (
            await conn.execute(
                text(
                    "SELECT reason, payload, actor_id FROM memory_events WHERE memory_id = CAST(:i AS uuid) "
                    "AND event_type = 'PRUNED'"
                ),
                {"i": gone},
            )
        ).one()
        cached = await cached_vectors(conn, "test-model", [text_digest(secretish)])
    assert event.reason == "episode older than 90 days" and event.actor_id == "system:retention"
    assert event.payload["rule"] == "episode_age" and event.payload["title"] == "Episode: old work"
    assert event.payload["content_sha256"] == content_sha256(secretish)
    assert "7f3a" not in str(event.payload) and cached == {}


async def test_prune_marks_survivors_built_on_a_useless_source_stale(
    engine: AsyncEngine, place: Place
) -> None:
    async with engine.begin() as conn:
        fact = await insert_memory(conn, place, memory_type="fact")
        skill = await insert_memory(conn, place, memory_type="skill")
        also_pruned = await insert_memory(conn, place, memory_type="skill")
        await record_derivations(conn, [(skill, fact), (also_pruned, fact)], task_id=None)
        outcome = await prune_memories(
            conn,
            [
                PruneChoice(fact, "judged useless", "useless"),
                PruneChoice(also_pruned, "x", "skill_success_rate"),
            ],
        )
    assert outcome.stale_marked == [skill]
    async with engine.connect() as conn:
        reason = (
            await conn.execute(
                text("SELECT stale_reason FROM memories WHERE id = CAST(:i AS uuid)"), {"i": skill}
            )
        ).scalar_one()
    assert "was pruned: judged useless" in reason


async def test_prune_of_a_distilled_episode_leaves_its_insight_fresh(
    engine: AsyncEngine, place: Place
) -> None:
    async with engine.begin() as conn:
        episode = await insert_memory(conn, place)
        insight = await insert_memory(conn, place, memory_type="insight")
        await record_derivations(conn, [(insight, episode)], task_id=None)
        outcome = await prune_memories(conn, [PruneChoice(episode, "distilled", "distilled_episode")])
    assert outcome.stale_marked == [] and await _exists(engine, [episode, insight]) == {insight}


async def test_load_reads_votes_retrievals_and_derivations(engine: AsyncEngine, place: Place) -> None:
    now = datetime.now(UTC)
    async with engine.begin() as conn:
        episode = await insert_memory(conn, place, retrieval_count=6, usefulness=0.27, reward=0.8)
        insight = await insert_memory(conn, place, memory_type="insight")
        retired = await insert_memory(conn, place, memory_type="insight", deprecated_at=now)
        await record_derivations(conn, [(insight, episode), (retired, episode)], task_id=None)
        for actor, helpful in (("a", False), ("b", False), ("c", True)):
            await conn.execute(
                text(
                    "INSERT INTO memory_votes (memory_id, actor_id, helpful) "
                    "VALUES (CAST(:m AS uuid), :a, :h)"
                ),
                {"m": episode, "a": actor, "h": helpful},
            )
        rows, labels = await load_retention_rows(conn, now=now, orgs=[place.org])
    by_id = {r.id: r for r in rows}
    got = by_id[episode]
    assert (got.votes, got.helpful_votes, got.retrieval_count) == (3, 1, 6)
    assert got.derived_types == frozenset({"insight"}) and got.inactive_since is None
    assert got.group == (place.org, place.project, "project", "episode")
    assert by_id[retired].inactive_since is not None
    assert labels[episode].scope_key == place.key(Scope.PROJECT)
    # the same rows through the rules: the useless rule wins over the distillation
    chosen = select_for_pruning(rows, RetentionPolicy(keep_per_group=0), now).chosen
    assert {c.id: c.rule for c in chosen} == {episode: "useless"}


async def test_load_pages_through_every_row_and_counts_active_groups(
    engine: AsyncEngine, place: Place
) -> None:
    now = datetime.now(UTC)
    async with engine.begin() as conn:
        ids = {await insert_memory(conn, place) for _ in range(4)}
        ids.add(await insert_memory(conn, place, deprecated_at=now))
        ids.add(await insert_memory(conn, place, expires_at=now - timedelta(minutes=1)))
        rows, _ = await load_retention_rows(conn, now=now, orgs=[place.org], page=2)
        group = (place.org, place.project, "project", "episode")
        counts = await active_group_counts(conn, now=now, groups=[group, (place.org, "", "org", "fact")])
        some, _ = await load_retention_rows(conn, now=now, ids=sorted(ids)[:2])
    assert {r.id for r in rows} == ids and len(rows) == 6
    assert counts == {group: 4, (place.org, "", "org", "fact"): 0}
    assert {r.id for r in some} == set(sorted(ids)[:2])
