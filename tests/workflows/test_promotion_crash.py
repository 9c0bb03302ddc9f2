"""Crash safety of the promotion gate: a worker dies mid-promotion, a new one finishes it, nothing twice.

The first worker is a separate process (tests/workflows/crash_worker.py: the production worker plus an
interceptor) that SIGKILLs itself right after one activity's body has returned — for `publish`, after
its transaction committed but before its completion could be reported. `collect_staging` and `publish`
are local activities: the lost result never reaches the history, and the second, ordinary worker
(`make_worker`) replays the history and runs the activity again. `cognify` is a regular activity that
runs once collect_staging's result is in the history: the server retries it on the second worker once
its heartbeats stop. On the dev server, with a short workflow-task timeout so the server hands the dead
worker's task on quickly. A big task's `plan` is also killed in its middle, after two committed chunks: the
retry resumes after them.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from activities.promotion import PLAN_CHUNK, PlanResult
from governance.config import Settings
from governance.storage.plans import PlanKey, latest_plan, planned_count
from tests.conftest import repo_root
from tests.utils.factories import new_tenant
from tests.utils.promotion_factories import Entry, active_memories, events_of, make_large_task, make_task
from tests.workflows.crash_worker import REACHED
from tests.workflows.test_promotion_big import assert_published_once, big_entries
from workflows.promotion import PromotionWorkflow
from workflows.promotion_contract import (
    PromotionInput,
    PromotionResult,
    PromotionState,
    Verification,
    workflow_id_for,
)

ENTRIES = [
    Entry("decision", "db.driver: psycopg 3 with the async API", {"key": "db.driver"}),
    Entry("fact", "The CI runners have two CPU cores and 7 GB of memory."),
    Entry("preference", "Prefer small pull requests with one behaviour each."),
    Entry("error", "ImportError: no module named psycopg2"),
    Entry("result", "Switched the import to psycopg; all tests pass.", {"repeatable": True}),
]


async def _crashing_worker(client: Client, settings: Settings, task_queue: str, crash_in: str) -> Any:
    """Start the self-killing worker process and wait until it polls."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.workflows.crash_worker",
        client.service_client.config.target_host,
        client.namespace,
        task_queue,
        crash_in,
        cwd=repo_root(),
        stdout=asyncio.subprocess.PIPE,
        env={
            **os.environ,
            "LOREGATE_DATABASE_URL": str(settings.database_url),
            "LOREGATE_DATA_DIR": str(settings.data_dir),
        },
    )
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), timeout=120)
    assert line.strip() == b"worker-running", line
    return proc


async def _count_per_memory(engine: AsyncEngine, task_id: str) -> Counter[str]:
    return Counter(str(e.memory_id) for e in await events_of(engine, task_id) if e.event_type == "PROMOTED")


@pytest.mark.parametrize("crash_in", ["collect_staging", "cognify", "publish"])
async def test_promotion_worker_crash_resumes_and_publishes_once(
    crash_in: str,
    local_env: Any,
    engine: AsyncEngine,
    settings: Settings,
    make_worker: Any,
    task_queue: str,
) -> None:
    org, project = new_tenant()
    task = await make_task(engine, org, project, ENTRIES, description="pick the async db driver")
    client: Client = local_env.client
    proc = await _crashing_worker(client, settings, task_queue, crash_in)
    try:
        handle = await client.start_workflow(
            PromotionWorkflow.run,
            PromotionInput(
                task.task_id,
                "task",
                requested_by=task.requested_by,
                verification=Verification("tests_passed", True),
            ),
            id=workflow_id_for(task.task_id),
            task_queue=task_queue,
            # how long the server waits for the dead worker's workflow task before handing it on
            task_timeout=timedelta(seconds=2),
        )
        out, _ = await asyncio.wait_for(proc.communicate(), timeout=120)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert REACHED in out.decode() and proc.returncode == -9
    if crash_in == "publish":
        # the dead attempt's transaction is committed although its completion was never reported
        assert await active_memories(engine, task_id=task.task_id)
    else:
        assert await active_memories(engine, task_id=task.task_id) == []

    async with make_worker(client, task_queue):
        result: PromotionResult = await asyncio.wait_for(handle.result(), timeout=120)

    assert result.state == PromotionState.PUBLISHED
    published = await active_memories(engine, task_id=task.task_id)
    assert {m.memory_type for m in published} == {"fact", "preference", "bug_pattern", "episode", "skill"}
    # one memory per candidate, one PROMOTED event per memory, one summary for the promotion
    assert len(published) == len(result.published) == 6
    assert {str(m.id) for m in published} == {p.memory_id for p in result.published}
    promoted = await _count_per_memory(engine, task.task_id)
    assert set(promoted) == {str(m.id) for m in published} and set(promoted.values()) == {1}
    summaries = [e for e in await events_of(engine, task.task_id) if e.event_type == "PROMOTION"]
    assert len(summaries) == 1
    # after a crash inside publish, the second attempt found every row already written and wrote nothing
    assert all(p.replayed for p in result.published) is (crash_in == "publish")


async def test_promotion_worker_crash_mid_plan_resumes_after_committed_chunks(
    local_env: Any, engine: AsyncEngine, settings: Settings, make_worker: Any, task_queue: str
) -> None:
    """SIGKILL in the middle of a big task's plan: the next attempt skips the chunks already committed."""
    org, project = new_tenant()
    task = await make_large_task(engine, org, project, big_entries(300, 300, uuid.uuid4().hex[:6]))
    client: Client = local_env.client
    proc = await _crashing_worker(client, settings, task_queue, f"plan@{PLAN_CHUNK}")
    try:
        handle = await client.start_workflow(
            PromotionWorkflow.run,
            PromotionInput(
                task.task_id,
                "task",
                verification=Verification("tests_passed", True),
                requested_by=task.requested_by,
            ),
            id=workflow_id_for(task.task_id),
            task_queue=task_queue,
            task_timeout=timedelta(seconds=2),
        )
        out, _ = await asyncio.wait_for(proc.communicate(), timeout=300)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert REACHED in out.decode() and proc.returncode == -9
    async with engine.connect() as conn:
        header = await latest_plan(conn, workflow_id_for(task.task_id))
        assert header is not None and header.plan_total is None  # the plan was not finished
        committed = await planned_count(conn, PlanKey(header.workflow_id, header.run_id))
    assert committed >= PLAN_CHUNK and committed % PLAN_CHUNK == 0
    assert await active_memories(engine, task_id=task.task_id) == []

    async with make_worker(client, task_queue):
        result: PromotionResult = await asyncio.wait_for(handle.result(), timeout=300)
    assert result.state == PromotionState.PUBLISHED
    planned = await _plan_result(client, handle)
    # the second attempt started after the committed chunks and only embedded what they did not hold
    assert planned.resumed_from == committed
    assert planned.embedded + planned.cached == planned.total - committed
    assert result.published_total == planned.total
    await assert_published_once(engine, task.task_id, planned.total)  # one publish event per plan item


async def _plan_result(client: Client, handle: Any) -> PlanResult:
    """The plan activity's result, as the workflow history recorded it."""
    history = await handle.fetch_history()
    scheduled = {
        e.event_id
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name == "plan"
    }
    (completed,) = [
        e.activity_task_completed_event_attributes
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
        and e.activity_task_completed_event_attributes.scheduled_event_id in scheduled
    ]
    (planned,) = await client.data_converter.decode(completed.result.payloads, [PlanResult])
    assert isinstance(planned, PlanResult)
    return planned
