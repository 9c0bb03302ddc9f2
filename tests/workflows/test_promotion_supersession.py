"""Supersession inside one promotion: a memory of another type never deprecates a decision's fact.

Regression: the skill generated for a repeatable task quotes its key decisions as numbered steps
("1. db.driver: psycopg 3 ..."); the rule-based judge read the step number as a changed value, the skill
superseded the `db.driver` fact published a moment earlier in the same transaction, and inherited its
canonical key — the project's answer to "which db driver?" became a how-to.

The skill builds on the fact, though: when a later promotion supersedes the fact, the skill stays active
but becomes stale (a STALE event names the cause) until a human confirms or retires it.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client

from governance.storage.tables import memories, memory_events
from tests.utils.factories import new_tenant
from tests.utils.promotion_factories import Entry, active_memories, events_of, make_task
from workflows.promotion import PromotionWorkflow
from workflows.promotion_contract import (
    PromotionInput,
    PromotionResult,
    PromotionState,
    Verification,
    workflow_id_for,
)


async def _promote(ts_env: Any, make_worker: Any, task_queue: str, task: Any, scope: str) -> PromotionResult:
    client: Client = ts_env.client
    async with make_worker(client, task_queue):
        result: PromotionResult = await client.execute_workflow(
            PromotionWorkflow.run,
            PromotionInput(
                task.task_id,
                scope,
                requested_by=task.requested_by,
                verification=Verification("tests_passed", True),
            ),
            id=workflow_id_for(task.task_id),
            task_queue=task_queue,
        )
    return result


async def test_promotion_generated_skill_keeps_decision_fact_as_key_head(
    ts_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str
) -> None:
    org, project = new_tenant()
    entries = [
        Entry("decision", "db.driver: psycopg 3 with the async API", {"key": "db.driver"}),
        Entry("result", "Switched the import to psycopg; all tests pass.", {"repeatable": True}),
    ]
    task = await make_task(engine, org, project, entries, description="pick the async db driver")
    result = await _promote(ts_env, make_worker, task_queue, task, "worktree")
    assert result.state == PromotionState.PUBLISHED
    active = {m.memory_type: m for m in await active_memories(engine, task_id=task.task_id)}
    assert set(active) == {"fact", "skill", "episode"}
    assert active["fact"].canonical_key == "db.driver"
    assert active["skill"].canonical_key is None and "db.driver: psycopg 3" in active["skill"].content
    assert not [e for e in await events_of(engine, task.task_id) if e.event_type == "SUPERSEDED"]
    assert active["skill"].stale_at is None

    # a later task decides otherwise: the fact is superseded, the skill built on it goes stale
    later = await make_task(
        engine,
        org,
        project,
        [Entry("decision", "db.driver: asyncpg for the pool", {"key": "db.driver"})],
        description="switch the driver",
    )
    assert (await _promote(ts_env, make_worker, task_queue, later, "worktree")).state == "published"
    async with engine.connect() as conn:
        skill = (await conn.execute(select(memories).where(memories.c.id == active["skill"].id))).one()
        stale_events = list(
            await conn.execute(
                select(memory_events).where(
                    memory_events.c.memory_id == skill.id, memory_events.c.event_type == "STALE"
                )
            )
        )
    assert skill.deprecated_at is None and skill.stale_at is not None
    assert f"mem:{active['fact'].citation}" in skill.stale_reason and "superseded" in skill.stale_reason
    assert len(stale_events) == 1 and stale_events[0].payload["source"] == str(active["fact"].id)
    assert stale_events[0].task_id == later.task_id
