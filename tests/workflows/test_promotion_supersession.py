"""Supersession inside one promotion: a memory of another type never deprecates a decision's fact.

Regression: the skill generated for a repeatable task quotes its key decisions as numbered steps
("1. db.driver: psycopg 3 ..."); the rule-based judge read the step number as a changed value, the skill
superseded the `db.driver` fact published a moment earlier in the same transaction, and inherited its
canonical key — the project's answer to "which db driver?" became a how-to.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client

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


async def test_promotion_generated_skill_keeps_decision_fact_as_key_head(
    ts_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str
) -> None:
    org, project = new_tenant()
    entries = [
        Entry("decision", "db.driver: psycopg 3 with the async API", {"key": "db.driver"}),
        Entry("result", "Switched the import to psycopg; all tests pass.", {"repeatable": True}),
    ]
    task = await make_task(engine, org, project, entries, description="pick the async db driver")
    client: Client = ts_env.client
    async with make_worker(client, task_queue):
        result: PromotionResult = await client.execute_workflow(
            PromotionWorkflow.run,
            PromotionInput(
                task.task_id,
                "task",
                requested_by=task.requested_by,
                verification=Verification("tests_passed", True),
            ),
            id=workflow_id_for(task.task_id),
            task_queue=task_queue,
        )
    assert result.state == PromotionState.PUBLISHED
    active = {m.memory_type: m for m in await active_memories(engine, task_id=task.task_id)}
    assert set(active) == {"fact", "skill", "episode"}
    assert active["fact"].canonical_key == "db.driver"
    assert active["skill"].canonical_key is None and "db.driver: psycopg 3" in active["skill"].content
    assert not [e for e in await events_of(engine, task.task_id) if e.event_type == "SUPERSEDED"]
