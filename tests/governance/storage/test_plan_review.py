"""What an approver reads beside a plan item, from the database (governance/storage/plan_review.py)."""

from __future__ import annotations

import uuid

import numpy as np
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.cognify import Candidate
from governance.storage.events import EventType, record_event
from governance.storage.plan_items import PlanItemToWrite, save_plan_items
from governance.storage.plan_review import nearest_memories, published_targets
from governance.storage.plans import PlanKey, promotion_plan_items, save_candidates
from governance.storage.tables import memories
from tests.utils.lifecycle_factories import Place, insert_memory

DIM = 384


def _unit(rng: np.random.Generator) -> list[float]:
    v = rng.standard_normal(DIM)
    return [float(x) for x in v / np.linalg.norm(v)]


async def _plan(engine: AsyncEngine, vectors: list[list[float]]) -> PlanKey:
    key = PlanKey(f"promote-{uuid.uuid4().hex}", "run")
    async with engine.begin() as conn:
        await save_candidates(
            conn, key, "task", [Candidate("fact", f"t{i}", f"c{i}") for i in range(len(vectors))]
        )
        await save_plan_items(
            conn,
            key,
            [PlanItemToWrite(i, i, "new", None, None, "new", f"{i:064x}", v) for i, v in enumerate(vectors)],
        )
    return key


async def test_nearest_memories_are_the_same_exactly_and_through_the_index(
    engine: AsyncEngine, place: Place
) -> None:
    rng = np.random.default_rng(3)
    scope = place.key(place_scope := __import__("governance.scopes", fromlist=["Scope"]).Scope.PROJECT)
    assert place_scope.value == "project"
    stored = [_unit(rng) for _ in range(12)]
    async with engine.begin() as conn:
        ids = [await insert_memory(conn, place, memory_type="fact", embedding=v) for v in stored]
        gone = await insert_memory(conn, place, memory_type="fact", embedding=stored[0])
        await conn.execute(
            update(memories).where(memories.c.id == gone).values(deprecated_at=memories.c.created_at)
        )
    key = await _plan(engine, [stored[0], stored[5]])
    async with engine.connect() as conn:
        exact = await nearest_memories(conn, key, [0, 1], scope)
        indexed = await nearest_memories(conn, key, [0, 1], scope, exact_limit=0)
        other = await nearest_memories(conn, key, [0, 1], "project:nobody/none")
    assert [n.id for n in exact[0]][0] == ids[0] and exact[0][0].similarity > 0.999
    assert [n.id for n in exact[1]][0] == ids[5]
    assert all(len(found) == 3 for found in exact.values()) and gone not in {n.id for n in exact[0]}
    assert {i: [n.id for n in found] for i, found in indexed.items()} == {
        i: [n.id for n in found] for i, found in exact.items()
    }
    assert other == {}

    # once this plan published item 0 as that memory, the memory is no longer its own nearest
    async with engine.begin() as conn:
        await conn.execute(
            update(promotion_plan_items)
            .where(promotion_plan_items.c.workflow_id == key.workflow_id, promotion_plan_items.c.idx == 0)
            .values(memory_id=ids[0])
        )
    async with engine.connect() as conn:
        after = await nearest_memories(conn, key, [0], scope)
    assert ids[0] not in {n.id for n in after[0]}


async def test_published_targets_name_the_approver_of_their_promotion(
    engine: AsyncEngine, place: Place
) -> None:
    async with engine.begin() as conn:
        approved = await insert_memory(conn, place, memory_type="fact")
        unapproved = await insert_memory(conn, place, memory_type="fact")
        for memory_id, workflow in ((approved, "promote-a"), (unapproved, "promote-b")):
            await record_event(
                conn,
                event_type=EventType.PROMOTED,
                actor_id="system",
                actor_type="system",
                memory_id=memory_id,
                workflow_id=f"{workflow}-{place.task_id}",
            )
        await record_event(
            conn,
            event_type=EventType.APPROVED,
            actor_id="human-alice",
            actor_type="human",
            workflow_id=f"promote-a-{place.task_id}",
            reason="looks right",
            payload={"memory_ids": [approved]},
            idempotency_key=f"promote-a-{place.task_id}:approved",
        )
        found = await published_targets(conn, [approved, unapproved, "not-a-uuid", str(uuid.uuid4())])
    assert set(found) == {approved, unapproved}
    assert (found[approved].approved_by, found[approved].approval_note) == ("human-alice", "looks right")
    assert found[approved].published_by == "system" and found[approved].active
    assert found[unapproved].approved_by is None and found[unapproved].published_by == "system"
