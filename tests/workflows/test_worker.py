"""The production worker (`workflows.worker.build_worker`) runs every workflow loregate schedules.

The nightly Schedule starts `RetentionWorkflow` on the settings' task queue, where only this worker
polls: if it did not register the workflow and its activities, the schedule would fire into the void.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client

from tests.utils.lifecycle_factories import insert_memory, new_place
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
            RetentionInput(dry_run=True, orgs=[place.org]),
            id=f"retention-{uuid.uuid4()}",
            task_queue=task_queue,
        )

    assert result.dry_run and (result.decayed, result.expired, result.pruned) == (1, 1, 0)
    async with engine.connect() as conn:
        assert [tuple(r) for r in await conn.execute(text(snapshot), {"o": place.org})] == before
