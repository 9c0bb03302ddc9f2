"""Crash safety of the promotion gate: a worker dies mid-promotion, a new one finishes it, nothing twice.

The first worker is a separate process (tests/workflows/crash_worker.py: the production worker plus an
interceptor) that SIGKILLs itself right after one activity's body has returned — for `publish`, after
its transaction committed but before its completion could be reported. `collect_staging` and `publish`
are local activities: the lost result never reaches the history, and the second, ordinary worker
(`make_worker`) replays the history and runs the activity again. `cognify` is a regular activity that
runs once collect_staging's result is in the history: the server retries it on the second worker once
its heartbeats stop. On the dev server, with a short workflow-task timeout so the server hands the dead
worker's task on quickly.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client

from governance.config import Settings
from tests.conftest import repo_root
from tests.utils.factories import new_tenant
from tests.utils.promotion_factories import Entry, active_memories, events_of, make_task
from tests.workflows.crash_worker import REACHED
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
