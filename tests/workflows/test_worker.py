"""The production worker (`workflows.worker.build_worker`) runs every workflow loregate schedules, and serves
its circular-fix activities to the orchestrator workflows of its users.

The nightly Schedule starts `RetentionWorkflow` on the settings' task queue, where only this worker
polls: if it did not register the workflow and its activities, the schedule would fire into the void.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Worker

from activities.approaches import ApproachVerdict, CheckApproachInput, RecordApproachInput
from governance.retention import RetentionPolicy
from tests.utils.factories import new_tenant
from tests.utils.lifecycle_factories import insert_memory, new_place
from tests.utils.promotion_factories import Entry, make_task
from workflows.retention import RetentionInput, RetentionResult, RetentionWorkflow


async def test_worker_runs_retention_dry_run_to_completion(
    ts_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str
) -> None:
    place = new_place()
    now = datetime.now(UTC)
    async with engine.begin() as conn:
        await insert_memory(
            conn, place, memory_type="fact", decay_policy="manual_only", expires_at=now - timedelta(hours=1)
        )
        await insert_memory(
            conn,
            place,
            memory_type="fact",
            decay_policy="recency_bias",
            last_validated_at=now - timedelta(days=60, hours=12),
        )
    snapshot = "SELECT id, confidence, deprecated_at FROM memories WHERE org = :o ORDER BY id"
    async with engine.connect() as conn:
        before = [tuple(r) for r in await conn.execute(text(snapshot), {"o": place.org})]

    client: Client = ts_env.client
    async with make_worker(client, task_queue):
        result: RetentionResult = await client.execute_workflow(
            RetentionWorkflow.run,
            # the time-skipping clock may be a year ahead of the rows: leave the expired fact's age out
            RetentionInput(dry_run=True, orgs=[place.org], policy=RetentionPolicy(max_inactive_age_days=0)),
            id=f"retention-{uuid.uuid4()}",
            task_queue=task_queue,
        )

    assert result.dry_run and (result.decayed, result.expired, result.pruned) == (1, 1, 0)
    async with engine.connect() as conn:
        assert [tuple(r) for r in await conn.execute(text(snapshot), {"o": place.org})] == before


@workflow.defn(sandboxed=False)
class _OrchestratorWorkflow:
    """A user's orchestrator: it records a failed fix, then asks loregate before trying fixes again."""

    @workflow.run
    async def run(self, args: list[str]) -> list[ApproachVerdict]:
        task_id, loregate_queue = args
        timeout = timedelta(seconds=30)
        await workflow.execute_activity(
            "approach_record",
            RecordApproachInput(task_id, "raise the pool size to 50", "failed", "rec-1", "still times out"),
            task_queue=loregate_queue,
            start_to_close_timeout=timeout,
        )
        verdicts = []
        for n, proposal in enumerate(["raise the pool size to 50", "add an index on orders.created_at"]):
            verdicts.append(
                await workflow.execute_activity(
                    "approach_check",
                    CheckApproachInput(task_id, proposal, f"check-{n}"),
                    task_queue=loregate_queue,
                    start_to_close_timeout=timeout,
                    result_type=ApproachVerdict,
                )
            )
        return verdicts


async def test_worker_serves_approach_activities_to_orchestrator_workflows(
    ts_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str
) -> None:
    org, project = new_tenant()
    task = await make_task(engine, org, project, [Entry("thought", "the checkout API is slow")])
    client: Client = ts_env.client
    orchestrator_queue = f"orchestrator-{uuid.uuid4().hex[:8]}"
    async with (
        make_worker(client, task_queue),
        Worker(client, task_queue=orchestrator_queue, workflows=[_OrchestratorWorkflow]),
    ):
        repeat, different = await client.execute_workflow(
            _OrchestratorWorkflow.run,
            [task.task_id, task_queue],
            id=f"orchestrator-{uuid.uuid4()}",
            task_queue=orchestrator_queue,
            result_type=list[ApproachVerdict],
        )
    assert not repeat.valid and repeat.history[0].failure_reasons == ["still times out"]
    assert different.valid
