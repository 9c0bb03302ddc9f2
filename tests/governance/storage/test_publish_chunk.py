"""A plan's chunk published set-based (`publish_chunk`) does what publishing its items one by one does.

Two fresh tenants get the same memory before, then the same sequence of candidates: one tenant item by item
through `publish_candidate`, the other as chunks through `publish_chunk`. Their outcomes (action per item)
and the memories they leave (contents, canonical keys, heads, trust, validation counts, sources) must match,
including candidates that duplicate, supersede or merely resemble items earlier in the same chunk.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.operations.chunk_decisions import ChunkItem
from governance.operations.publishing import lock_for_publication, publish_chunk
from governance.scopes import Scope
from governance.storage.memory_rows import NewMemory, PublishOutcome
from tests.governance.storage.test_lifecycle import mem, near, publish, scalar, unit
from tests.utils.lifecycle_factories import Place, new_place


def _sequence(place: Place) -> list[NewMemory]:
    """Candidates of one plan, in plan order: repeats, a paraphrase-close vector with another number, a
    canonical key whose value changes twice, a measurement of one service that keeps changing (each
    supersedes the one before; alike measurements of *other* services would all stay), and a supersession
    of a memory published before the plan."""
    base = unit(7)
    alike = [
        mem(
            place,
            f"observation: service kappa answered in {i} ms under load {i % 13}",
            embedding=near(base, 0.97, 100 + i),
        )
        for i in range(12)
    ]
    return [
        mem(place, "The CI runners have 2 cores.", embedding=list(unit(1))),
        mem(place, "The CI runners have 2 cores.", embedding=list(unit(1))),
        mem(place, "Timeouts are 30 s on the gateway.", embedding=list(unit(2))),
        mem(place, "Timeouts are 60 s on the gateway.", embedding=near(unit(2), 0.97, 3)),
        mem(place, "db.driver: psycopg 3", key="db.driver", embedding=list(unit(4))),
        mem(place, "db.driver: psycopg 3", key="db.driver", embedding=list(unit(4))),
        mem(place, "db.driver: asyncpg", key="db.driver", embedding=near(unit(4), 0.9, 5)),
        *alike[:6],
        mem(place, "http.client: httpx", key="http.client", embedding=list(unit(6))),
        mem(place, "The CI runners have 2 cores.", embedding=list(unit(1))),
        *alike[6:],
        mem(place, "db.driver: psycopg 3.2", key="db.driver", embedding=near(unit(4), 0.95, 8)),
        *alike[:3],
    ]


async def _memories(engine: AsyncEngine, place: Place) -> list[tuple[Any, ...]]:
    async with engine.connect() as conn:
        rows = await conn.execute(
            text(
                """
                SELECT content, canonical_key, deprecated_at IS NULL AS head, version,
                       round(confidence::numeric, 4), validation_count, source_entry_ids, contradiction_note,
                       (supersedes_id IS NULL) AS first
                FROM memories WHERE org = :org ORDER BY content, version
                """
            ),
            {"org": place.org},
        )
        return [tuple(r) for r in rows]


async def _publish_chunks(
    engine: AsyncEngine, place: Place, mems: list[NewMemory], chunk: int, run: str
) -> list[PublishOutcome]:
    outcomes: list[PublishOutcome] = []
    target = place.key(Scope.PROJECT)
    for start in range(0, len(mems), chunk):
        async with engine.begin() as conn:
            await lock_for_publication(conn, Scope.PROJECT.value, target, place.visible)
            outcomes += await publish_chunk(
                conn,
                [
                    ChunkItem(m, idempotency_key=f"{run}:publish:{start + n}")
                    for n, m in enumerate(mems[start : start + chunk])
                ],
                scope=Scope.PROJECT.value,
                target_scope_key=target,
                visible_scope_keys=place.visible,
                actor_id="orch",
                actor_type="orchestrator",
                task_id=place.task_id,
                workflow_id="wf",
                dup_threshold=0.92,
                related_threshold=0.85,
            )
    return outcomes


def _with_entries(mems: list[NewMemory]) -> list[NewMemory]:
    for n, m in enumerate(mems):
        m.source_entry_ids = [n]
    return mems


async def test_a_chunk_publishes_as_its_items_one_by_one_would(engine: AsyncEngine) -> None:
    one, bulk = new_place(), new_place()
    for place in (one, bulk):
        await publish(
            engine, place, mem(place, "http.client: requests", key="http.client", embedding=list(unit(9)))
        )
    singles = [
        await publish(engine, one, m, idempotency_key=f"{one.org}:{n}")
        for n, m in enumerate(_with_entries(_sequence(one)))
    ]
    chunked = await _publish_chunks(
        engine, bulk, _with_entries(_sequence(bulk)), chunk=8, run=uuid.uuid4().hex
    )

    assert [o.action for o in chunked] == [o.action for o in singles]
    assert {"merged", "superseded", "promoted"} <= {o.action for o in chunked}
    assert await _memories(engine, bulk) == await _memories(engine, one)


async def test_a_whole_plan_in_one_chunk_matches_too_and_a_retry_replays_it(engine: AsyncEngine) -> None:
    one, bulk = new_place(), new_place()
    singles = [
        await publish(engine, one, m, idempotency_key=f"{one.org}:{n}")
        for n, m in enumerate(_with_entries(_sequence(one)))
    ]
    run = uuid.uuid4().hex
    mems = _with_entries(_sequence(bulk))
    chunked = await _publish_chunks(engine, bulk, mems, chunk=len(mems), run=run)
    assert [o.action for o in chunked] == [o.action for o in singles]
    assert await _memories(engine, bulk) == await _memories(engine, one)

    again = await _publish_chunks(engine, bulk, _with_entries(_sequence(bulk)), chunk=5, run=run)
    assert all(o.replayed for o in again)
    assert [(o.memory_id, o.action) for o in again] == [(o.memory_id, o.action) for o in chunked]
    assert await _memories(engine, bulk) == await _memories(engine, one)


async def test_supersessions_within_a_chunk_write_their_chains_at_once(engine: AsyncEngine) -> None:
    """Without a memory merged into and then superseded in the same chunk, the chunk's heads are deprecated
    in one statement and chains within it are inserted deprecated already: the same memories."""
    one, bulk = new_place(), new_place()
    for place in (one, bulk):
        await publish(
            engine, place, mem(place, "db.driver: psycopg 2", key="db.driver", embedding=list(unit(4)))
        )
    plan = [m for n, m in enumerate(_sequence(one)) if n != 5]
    singles = [
        await publish(engine, one, m, idempotency_key=f"{one.org}:{n}")
        for n, m in enumerate(_with_entries(plan))
    ]
    mems = _with_entries([m for n, m in enumerate(_sequence(bulk)) if n != 5])
    chunked = await _publish_chunks(engine, bulk, mems, chunk=len(mems), run=uuid.uuid4().hex)
    assert [o.action for o in chunked] == [o.action for o in singles]
    assert sum(o.action == "superseded" for o in chunked) >= 10
    assert await _memories(engine, bulk) == await _memories(engine, one)


async def test_a_merge_in_a_chunk_keeps_the_candidates_wording(engine: AsyncEngine) -> None:
    place = new_place()
    base = unit(7)
    mems = _with_entries(
        [
            mem(place, "Run the tests before pushing.", embedding=list(base)),
            mem(place, "Always run tests prior to a push.", embedding=near(base, 0.96, 8)),
        ]
    )
    outcomes = await _publish_chunks(engine, place, mems, chunk=2, run=uuid.uuid4().hex)
    assert [o.action for o in outcomes] == ["promoted", "merged"]
    payload = await scalar(
        engine,
        "SELECT payload FROM memory_events WHERE event_type = 'MERGED' AND memory_id = CAST(:i AS uuid)",
        i=outcomes[0].memory_id,
    )
    # the merged candidate's own wording is kept with the memory it joined, as one by one
    assert payload["candidate"]["content"] == "Always run tests prior to a push."


async def test_an_item_identical_to_a_memory_superseded_earlier_in_its_chunk_is_decided_as_one_by_one(
    engine: AsyncEngine,
) -> None:
    """An item identical to a published memory skips the nearest lookup (it is that memory's duplicate),
    unless an earlier item of its chunk superseded that memory: then it meets its nearest as one by one."""
    one, bulk = new_place(), new_place()
    for place in (one, bulk):
        await publish(engine, place, mem(place, "Timeouts are 30 s on the gateway.", embedding=list(unit(2))))
        await publish(
            engine, place, mem(place, "Retries back off for 2 s.", embedding=near(unit(2), 0.93, 4))
        )
        await publish(
            engine, place, mem(place, "db.driver: psycopg 3", key="db.driver", embedding=list(unit(4)))
        )

    def plan(place: Place) -> list[NewMemory]:
        return _with_entries(
            [
                mem(place, "Timeouts are 60 s on the gateway.", embedding=near(unit(2), 0.97, 3)),
                mem(place, "Timeouts are 30 s on the gateway.", embedding=list(unit(2))),
                mem(place, "db.driver: asyncpg", key="db.driver", embedding=near(unit(4), 0.9, 5)),
                mem(place, "db.driver: psycopg 3", key="db.driver", embedding=list(unit(4))),
                mem(place, "Retries back off for 2 s.", embedding=near(unit(2), 0.93, 4)),
            ]
        )

    singles = [
        await publish(engine, one, m, idempotency_key=f"{one.org}:{n}") for n, m in enumerate(plan(one))
    ]
    chunked = await _publish_chunks(engine, bulk, plan(bulk), chunk=5, run=uuid.uuid4().hex)
    assert [o.action for o in chunked] == [o.action for o in singles]
    # the second item's identical memory was superseded by the first: it is judged against its nearest
    assert [o.action for o in chunked] == ["superseded", "superseded", "superseded", "superseded", "merged"]
    assert await _memories(engine, bulk) == await _memories(engine, one)
