"""Publishing, reinforcing, superseding and retiring memories in real Postgres, alone and under races."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import numpy as np
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.errors import Conflict, NotFound
from governance.operations.changes import retire_memory, supersede_memory
from governance.operations.publishing import publish_candidate
from governance.scopes import Scope
from governance.storage.memory_changes import boost_memory, memory_history, record_feedback
from governance.storage.memory_rows import NewMemory, PublishOutcome, resolve_memory_id
from governance.trust import usefulness_from_votes
from tests.utils.lifecycle_factories import Place

DIM = 384


def unit(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIM)
    return v / np.linalg.norm(v)


def near(base: np.ndarray, cos: float, seed: int) -> list[float]:
    """A unit vector with cosine `cos` to `base`."""
    other = unit(seed)
    other = other - other.dot(base) * base
    other /= np.linalg.norm(other)
    return list(cos * base + np.sqrt(1 - cos**2) * other)


def mem(
    place: Place,
    content: str,
    *,
    scope: Scope = Scope.PROJECT,
    key: str | None = None,
    embedding: list[float] | None = None,
    task: str | None = None,
    **kw: Any,
) -> NewMemory:
    return NewMemory(
        memory_type="fact",
        scope=scope.value,
        scope_key=place.key(scope),
        org=place.org,
        project=place.project,
        canonical_key=key,
        title=content[:30],
        content=content,
        embedding=embedding,
        confidence=0.6,
        validation_source="tests_passed",
        source_task_ids=[task or place.task_id],
        source_entry_ids=[1],
        **kw,
    )


async def publish(
    engine: AsyncEngine, place: Place, m: NewMemory, idempotency_key: str | None = None
) -> PublishOutcome:
    async with engine.begin() as conn:
        return await publish_candidate(
            conn,
            m,
            visible_scope_keys=place.visible,
            actor_id="orch",
            actor_type="orchestrator",
            task_id=place.task_id,
            workflow_id="wf",
            idempotency_key=idempotency_key or uuid.uuid4().hex,
            dup_threshold=0.92,
            related_threshold=0.85,
        )


async def scalar(engine: AsyncEngine, sql: str, **params: Any) -> Any:
    async with engine.connect() as conn:
        return (await conn.execute(text(sql), params)).scalar()


async def test_publish_new_memory_writes_promoted_event(engine: AsyncEngine, place: Place) -> None:
    out = await publish(engine, place, mem(place, "Use ruff for linting.", embedding=list(unit(1))))
    assert out.action == "promoted" and len(out.citation) == 10
    assert (
        await scalar(
            engine,
            "SELECT count(*) FROM memory_events WHERE memory_id = CAST(:i AS uuid) "
            "AND event_type = 'PROMOTED'",
            i=out.memory_id,
        )
        == 1
    )
    assert await resolve_memory_id_via(engine, out.citation) == out.memory_id


async def resolve_memory_id_via(engine: AsyncEngine, ref: str) -> str:
    async with engine.connect() as conn:
        return await resolve_memory_id(conn, ref)


async def test_publish_replay_with_same_idempotency_key_writes_nothing(
    engine: AsyncEngine, place: Place
) -> None:
    m = mem(place, "Deploys go through the release branch.")
    first = await publish(engine, place, m, idempotency_key=f"k-{place.task_id}")
    again = await publish(engine, place, m, idempotency_key=f"k-{place.task_id}")
    assert again.replayed and again.memory_id == first.memory_id and again.action == first.action
    assert (
        await scalar(engine, "SELECT count(*) FROM memories WHERE scope_key = :k", k=place.key(Scope.PROJECT))
        == 1
    )


async def test_duplicate_by_hash_reinforces_and_appends_provenance(engine: AsyncEngine, place: Place) -> None:
    first = await publish(engine, place, mem(place, "Use ruff for linting."))
    second = await publish(engine, place, mem(place, "use RUFF  for linting.", task="task-other"))
    assert second.action == "merged" and second.memory_id == first.memory_id
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                text(
                    "SELECT confidence, validation_count, source_task_ids FROM memories "
                    "WHERE id = CAST(:i AS uuid)"
                ),
                {"i": first.memory_id},
            )
        ).one()
    assert row.confidence == pytest.approx(0.75) and row.validation_count == 2
    assert set(row.source_task_ids) == {place.task_id, "task-other"}
    payload = await scalar(
        engine,
        "SELECT payload FROM memory_events WHERE event_type = 'MERGED' AND memory_id = CAST(:i AS uuid)",
        i=first.memory_id,
    )
    assert payload["duplicate_of"] == first.memory_id and payload["candidate"]["source_task_ids"] == [
        "task-other"
    ]


async def test_duplicate_by_embedding_similarity(engine: AsyncEngine, place: Place) -> None:
    base = unit(7)
    first = await publish(engine, place, mem(place, "Run the tests before pushing.", embedding=list(base)))
    second = await publish(
        engine, place, mem(place, "Always run tests prior to a push.", embedding=near(base, 0.96, 8))
    )
    assert second.action == "merged" and second.memory_id == first.memory_id
    # the merged candidate's wording is kept with the memory (its MERGED event), never dropped
    payload = await scalar(
        engine,
        "SELECT payload FROM memory_events WHERE event_type = 'MERGED' AND memory_id = CAST(:i AS uuid)",
        i=first.memory_id,
    )
    assert payload["candidate"]["content"] == "Always run tests prior to a push."


async def test_near_but_not_duplicate_is_new_and_related(engine: AsyncEngine, place: Place) -> None:
    base = unit(9)
    first = await publish(engine, place, mem(place, "Use ruff for linting.", embedding=list(base)))
    second = await publish(
        engine, place, mem(place, "Use mypy for type checks.", embedding=near(base, 0.88, 10))
    )
    assert second.action == "promoted"
    related = await scalar(
        engine, "SELECT related_ids FROM memories WHERE id = CAST(:i AS uuid)", i=second.memory_id
    )
    assert [str(r) for r in related] == [first.memory_id]


async def test_canonical_key_supersession_deprecates_old(engine: AsyncEngine, place: Place) -> None:
    old = await publish(engine, place, mem(place, "The driver is psycopg 3.", key="db.driver"))
    new = await publish(
        engine, place, mem(place, "The driver is asyncpg.", key="db.driver", valid_from_commit="abc")
    )
    assert new.action == "superseded" and new.superseded_id == old.memory_id
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                text(
                    "SELECT deprecated_at, valid_to_commit, contradiction_note FROM memories "
                    "WHERE id = CAST(:i AS uuid)"
                ),
                {"i": old.memory_id},
            )
        ).one()
        chain = await memory_history(conn, old.memory_id)
    assert (
        row.deprecated_at is not None
        and row.valid_to_commit == "abc"
        and "db.driver" in row.contradiction_note
    )
    assert [v.id for v in chain] == [old.memory_id, new.memory_id]
    assert chain[1].supersedes_id == old.memory_id and chain[1].version == 2


async def test_judge_supersedes_contradiction_without_key(engine: AsyncEngine, place: Place) -> None:
    base = unit(11)
    old = await publish(engine, place, mem(place, "The API timeout is 30 seconds.", embedding=list(base)))
    new = await publish(
        engine, place, mem(place, "The API timeout is 60 seconds.", embedding=near(base, 0.97, 12))
    )
    assert new.action == "superseded" and new.superseded_id == old.memory_id
    reason = await scalar(
        engine,
        "SELECT reason FROM memory_events WHERE event_type = 'SUPERSEDED' AND memory_id = CAST(:i AS uuid)",
        i=new.memory_id,
    )
    assert "different values" in reason


async def test_wider_scope_duplicate_is_reinforced_not_copied(engine: AsyncEngine, place: Place) -> None:
    org = await publish(engine, place, mem(place, "Secrets live in the vault.", scope=Scope.ORG))
    proj = await publish(engine, place, mem(place, "Secrets live in the vault."))
    assert proj.action == "merged" and proj.memory_id == org.memory_id


async def test_narrower_scope_copy_does_not_absorb_a_wider_publication(
    engine: AsyncEngine, place: Place
) -> None:
    task = await publish(engine, place, mem(place, "Cache keys include the tenant.", scope=Scope.TASK))
    proj = await publish(engine, place, mem(place, "Cache keys include the tenant."))
    assert proj.action == "promoted" and proj.memory_id != task.memory_id


async def test_boost_is_capped_and_evented(engine: AsyncEngine, place: Place) -> None:
    out = await publish(engine, place, mem(place, "Boost me."))
    async with engine.begin() as conn:
        first = await boost_memory(conn, out.memory_id, "human_approved", actor_id="h", actor_type="human")
        assert first.confidence == 1.0 and first.counted
        second = await boost_memory(conn, out.memory_id, "pr_merged", actor_id="h", actor_type="human")
        assert second.confidence == 1.0 and second.counted
    assert (
        await scalar(
            engine,
            "SELECT count(*) FROM memory_events WHERE event_type = 'BOOSTED' "
            "AND memory_id = CAST(:i AS uuid)",
            i=out.memory_id,
        )
        == 2
    )


async def test_feedback_is_one_vote_per_actor_the_latest_counts(engine: AsyncEngine, place: Place) -> None:
    out = await publish(engine, place, mem(place, "Feedback target."))
    async with engine.begin() as conn:
        # a first vote moves usefulness as one EMA step (alpha 0.3) from 0.5 did
        assert await record_feedback(
            conn, out.memory_id, True, actor_id="a", actor_type="agent"
        ) == pytest.approx(0.65)
        # the same actor again: its latest vote replaces the first, it is not added to it
        assert await record_feedback(
            conn, out.memory_id, False, actor_id="a", actor_type="agent"
        ) == pytest.approx(0.35)
        assert await record_feedback(
            conn, out.memory_id, False, actor_id="a", actor_type="agent"
        ) == pytest.approx(0.35)
        # another actor's vote counts beside it: (7/6 + 1) / (7/3 + 2)
        assert await record_feedback(
            conn, out.memory_id, True, actor_id="b", actor_type="agent"
        ) == pytest.approx(0.5)


async def test_supersede_non_head_is_conflict(engine: AsyncEngine, place: Place) -> None:
    old = await publish(engine, place, mem(place, "Old rule."))
    async with engine.begin() as conn:
        await supersede_memory(
            conn, old.memory_id, content="New rule.", reason="changed", actor_id="h", actor_type="human"
        )
    with pytest.raises(Conflict):
        async with engine.begin() as conn:
            await supersede_memory(
                conn, old.memory_id, content="Newer rule.", reason="x", actor_id="h", actor_type="human"
            )


async def test_retire_deprecates_and_second_retire_conflicts(engine: AsyncEngine, place: Place) -> None:
    out = await publish(engine, place, mem(place, "Retire me."))
    async with engine.begin() as conn:
        await retire_memory(conn, out.memory_id, reason="obsolete", actor_id="h", actor_type="human")
    with pytest.raises(Conflict):
        async with engine.begin() as conn:
            await retire_memory(conn, out.memory_id, reason="again", actor_id="h", actor_type="human")
    with pytest.raises(NotFound):
        async with engine.begin() as conn:
            await retire_memory(conn, str(uuid.uuid4()), reason="x", actor_id="h", actor_type="human")


# ---- races: each publisher in its own connection and transaction, all at once -------------------------


async def test_race_32_publishers_of_one_fact_leave_one_memory(
    wide_engine: AsyncEngine, place: Place
) -> None:
    facts = [
        mem(place, "Migrations run before the app starts.", task=f"t{i}", embedding=list(unit(21)))
        for i in range(32)
    ]
    outcomes = await asyncio.gather(*(publish(wide_engine, place, f) for f in facts))
    assert len({o.memory_id for o in outcomes}) == 1
    assert sorted(o.action for o in outcomes).count("merged") == 31
    key = place.key(Scope.PROJECT)
    assert (
        await scalar(
            wide_engine, "SELECT count(*) FROM memories WHERE scope_key = :k AND deprecated_at IS NULL", k=key
        )
        == 1
    )
    assert (
        await scalar(
            wide_engine,
            "SELECT count(*) FROM memory_events WHERE event_type = 'MERGED' AND memory_id = CAST(:i AS uuid)",
            i=outcomes[0].memory_id,
        )
        == 31
    )
    assert (
        await scalar(
            wide_engine, "SELECT cardinality(source_task_ids) FROM memories WHERE scope_key = :k", k=key
        )
        == 32
    )


async def test_race_32_publishers_of_one_key_form_one_linear_chain(
    wide_engine: AsyncEngine, place: Place
) -> None:
    head = await publish(wide_engine, place, mem(place, "Version 0 of the rule.", key="rule.x"))
    contenders = [
        mem(place, f"Variant {i} of the rule, different text {uuid.uuid4().hex}", key="rule.x")
        for i in range(32)
    ]
    outcomes = await asyncio.gather(*(publish(wide_engine, place, c) for c in contenders))
    assert all(o.action == "superseded" for o in outcomes)
    async with wide_engine.connect() as conn:
        chain = await memory_history(conn, head.memory_id)
        events = (
            await conn.execute(
                text(
                    "SELECT count(*) FROM memory_events e JOIN memories m ON m.id = e.memory_id "
                    "WHERE m.scope_key = :k AND e.event_type = 'SUPERSEDED'"
                ),
                {"k": place.key(Scope.PROJECT)},
            )
        ).scalar()
    assert len(chain) == 33 and [v.version for v in chain] == list(range(1, 34))
    assert [v.deprecated_at is None for v in chain].count(True) == 1 and chain[-1].deprecated_at is None
    assert all(chain[i + 1].supersedes_id == chain[i].id for i in range(32))
    assert events == 32


async def test_race_32_explicit_supersessions_of_one_head(wide_engine: AsyncEngine, place: Place) -> None:
    head = await publish(wide_engine, place, mem(place, "The head.", key="rule.y"))

    async def supersede(i: int) -> str:
        try:
            async with wide_engine.begin() as conn:
                await supersede_memory(
                    conn,
                    head.memory_id,
                    content=f"Replacement {i}",
                    reason=f"r{i}",
                    actor_id=f"h{i}",
                    actor_type="human",
                )
            return "ok"
        except Conflict:
            return "conflict"

    results = await asyncio.gather(*(supersede(i) for i in range(32)))
    assert results.count("ok") == 1 and results.count("conflict") == 31
    async with wide_engine.connect() as conn:
        chain = await memory_history(conn, head.memory_id)
    assert len(chain) == 2 and chain[0].deprecated_at is not None and chain[1].deprecated_at is None
    assert (
        await scalar(
            wide_engine,
            "SELECT count(*) FROM memory_events WHERE event_type = 'SUPERSEDED' AND payload->>'old' = :i",
            i=head.memory_id,
        )
        == 1
    )


async def test_race_concurrent_boosts_sum_to_the_cap(wide_engine: AsyncEngine, place: Place) -> None:
    out = await publish(wide_engine, place, mem(place, "Boosted concurrently."))
    # start at 0.1 so the sum of the boosts (4 x 0.15 = 0.6) stays under the cap, then push past it
    async with wide_engine.begin() as conn:
        await conn.execute(
            text("UPDATE memories SET confidence = 0.1 WHERE id = CAST(:i AS uuid)"), {"i": out.memory_id}
        )

    async def one(source: str, actor: int) -> None:
        async with wide_engine.begin() as conn:
            # one validation per actor and source counts: each boost here is by another actor
            await boost_memory(conn, out.memory_id, source, actor_id=f"o{actor}", actor_type="orchestrator")

    await asyncio.gather(*(one("repeated_success", i) for i in range(4)))
    assert await scalar(
        wide_engine, "SELECT confidence FROM memories WHERE id = CAST(:i AS uuid)", i=out.memory_id
    ) == pytest.approx(0.7)
    await asyncio.gather(*(one("tests_passed", i) for i in range(16)))
    assert await scalar(
        wide_engine, "SELECT confidence FROM memories WHERE id = CAST(:i AS uuid)", i=out.memory_id
    ) == pytest.approx(1.0)
    assert (
        await scalar(
            wide_engine, "SELECT validation_count FROM memories WHERE id = CAST(:i AS uuid)", i=out.memory_id
        )
        == 21
    )


async def test_race_32_voters_all_count_and_repeats_do_not(wide_engine: AsyncEngine, place: Place) -> None:
    """Votes on one memory are serialised by its row lock: the usefulness counts every voter once."""
    out = await publish(wide_engine, place, mem(place, "Voted on concurrently."))

    async def vote(actor: int, helpful: bool) -> None:
        async with wide_engine.begin() as conn:
            await record_feedback(conn, out.memory_id, helpful, actor_id=f"v{actor}", actor_type="agent")

    # 24 voters, 16 of them helpful, each voting twice at once (the repeat must not count)
    await asyncio.gather(*(vote(i % 24, i % 24 < 16) for i in range(48)))
    assert await scalar(
        wide_engine, "SELECT usefulness FROM memories WHERE id = CAST(:i AS uuid)", i=out.memory_id
    ) == pytest.approx(usefulness_from_votes(16, 24))
    assert (
        await scalar(
            wide_engine,
            "SELECT count(*) FROM memory_votes WHERE memory_id = CAST(:i AS uuid)",
            i=out.memory_id,
        )
        == 24
    )


async def test_race_repeated_validation_by_one_actor_counts_once(
    wide_engine: AsyncEngine, place: Place
) -> None:
    out = await publish(wide_engine, place, mem(place, "Validated concurrently by one actor."))
    async with wide_engine.begin() as conn:
        await conn.execute(
            text("UPDATE memories SET confidence = 0.1 WHERE id = CAST(:i AS uuid)"), {"i": out.memory_id}
        )

    async def one() -> bool:
        async with wide_engine.begin() as conn:
            validation = await boost_memory(
                conn, out.memory_id, "repeated_success", actor_id="same", actor_type="orchestrator"
            )
            return validation.counted

    counted = await asyncio.gather(*(one() for _ in range(16)))
    assert sum(counted) == 1
    assert await scalar(
        wide_engine, "SELECT confidence FROM memories WHERE id = CAST(:i AS uuid)", i=out.memory_id
    ) == pytest.approx(0.25)
