"""Twenty promotions into one project at once (parallel agents): no duplicates, no forked heads.

Every task stages the same shared fact, one of two values for each of two canonical keys, and facts of
its own. All twenty wait for approval, then a human approves them all at the same moment, so the
publishes race for the same scope on one worker. Afterwards the project holds one active memory per
canonical key, the shared fact once (with everyone's provenance), and each key's versions form one
linear supersession chain.
"""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client, WorkflowHandle

from governance.scopes import ActorType
from governance.storage.tables import memories, memory_events
from tests.utils.factories import make_actor, new_tenant
from tests.utils.promotion_factories import Entry, make_task
from workflows.promotion import PromotionWorkflow
from workflows.promotion_contract import (
    ApprovalRequest,
    PromotionInput,
    PromotionResult,
    PromotionState,
    PromotionStatus,
    Verification,
    workflow_id_for,
)

TASKS = 20
SHARED_FACT = "The CI runners have two CPU cores and 7 GB of memory."
DRIVERS = ["db.driver: psycopg 3 with the async API", "db.driver: asyncpg for the hot read path"]
CACHES = ["cache.backend: Redis 7 with one replica", "cache.backend: Valkey 8 in cluster mode"]


def _entries(i: int) -> list[Entry]:
    return [
        Entry("decision", DRIVERS[i % 2], {"key": "db.driver"}),
        Entry("decision", CACHES[(i // 3) % 2], {"key": "cache.backend"}),
        Entry("fact", SHARED_FACT),
        Entry("fact", f"Module storage_part_{i} now reads its settings from the environment only."),
        Entry("result", f"Part {i} of the storage rework is merged."),
    ]


async def _awaiting_approval(handle: WorkflowHandle[Any, Any]) -> None:
    for _ in range(1200):
        status: PromotionStatus = await handle.query(PromotionWorkflow.state)
        if status.state == PromotionState.AWAITING_APPROVAL:
            return
        assert status.state not in (PromotionState.FAILED, PromotionState.REJECTED), status
        await asyncio.sleep(0.1)
    raise AssertionError("promotion never reached awaiting_approval")


async def test_promotion_parallel_into_one_project_merges_and_keeps_linear_chains(
    local_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str
) -> None:
    org, project = new_tenant()
    scope_key = f"project:{org}/{project}"
    human = await make_actor(engine, ActorType.HUMAN, org, project)
    tasks = [
        await make_task(engine, org, project, _entries(i), description=f"storage rework part {i}")
        for i in range(TASKS)
    ]
    client: Client = local_env.client
    async with make_worker(client, task_queue):
        handles = [
            await client.start_workflow(
                PromotionWorkflow.run,
                PromotionInput(
                    t.task_id,
                    "project",
                    requested_by=t.requested_by,
                    verification=Verification("tests_passed", True),
                ),
                id=workflow_id_for(t.task_id),
                task_queue=task_queue,
            )
            for t in tasks
        ]
        await asyncio.gather(*(_awaiting_approval(h) for h in handles))
        approval = ApprovalRequest(approver=human.principal.id, note="all parts reviewed")
        await asyncio.gather(*(h.signal("approve", approval) for h in handles))
        results: list[PromotionResult] = await asyncio.wait_for(
            asyncio.gather(*(h.result() for h in handles)), timeout=240
        )
    assert [r.state for r in results] == [PromotionState.PUBLISHED] * TASKS

    async with engine.connect() as conn:
        rows = list(await conn.execute(select(memories).where(memories.c.scope_key == scope_key)))
        events = list(
            await conn.execute(
                select(memory_events).where(memory_events.c.task_id.in_([t.task_id for t in tasks]))
            )
        )
    active = [m for m in rows if m.deprecated_at is None]

    # one active head per canonical key
    heads = Counter(m.canonical_key for m in active if m.canonical_key is not None)
    assert heads == {"db.driver": 1, "cache.backend": 1}
    # the shared fact exists once, reinforced by every other task, and cites all twenty
    (shared,) = [m for m in rows if m.content == SHARED_FACT]
    assert shared.deprecated_at is None and set(shared.source_task_ids) == {t.task_id for t in tasks}
    merges = Counter(str(e.memory_id) for e in events if e.event_type == "MERGED")
    assert merges[str(shared.id)] == TASKS - 1
    # no two active memories say the same thing
    assert len({m.content_hash for m in active}) == len(active)

    # each key's versions form one chain: head -> ... -> version 1, nothing forked or orphaned
    by_key: dict[str, list[Any]] = defaultdict(list)
    for m in rows:
        if m.canonical_key is not None:
            by_key[m.canonical_key].append(m)
    # both values of each key were published, so each key was superseded at least once
    assert all(len(versions) >= 2 for versions in by_key.values())
    for key, versions in by_key.items():
        by_id = {str(m.id): m for m in versions}
        assert len({m.supersedes_id for m in versions}) == len(versions), f"{key}: a version superseded twice"
        (head,) = [m for m in versions if m.deprecated_at is None]
        chain, node = [], head
        while node is not None:
            chain.append(node)
            node = by_id.get(str(node.supersedes_id)) if node.supersedes_id is not None else None
        assert len(chain) == len(versions), f"{key}: versions outside the chain"
        assert [m.version for m in chain] == list(range(len(chain), 0, -1))
        assert all(m.deprecated_at is not None for m in chain[1:])

    # every candidate of every task was published exactly once: as new, merged or superseding
    outcomes = Counter(e.task_id for e in events if e.event_type in ("PROMOTED", "MERGED", "SUPERSEDED"))
    assert outcomes == {t.task_id: len(r.published) for t, r in zip(tasks, results, strict=True)}
    assert {e.idempotency_key for e in events if e.event_type in ("PROMOTED", "MERGED", "SUPERSEDED")} == {
        f"{workflow_id_for(t.task_id)}:publish:{i}"
        for t, r in zip(tasks, results, strict=True)
        for i in range(len(r.published))
    }
