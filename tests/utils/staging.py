"""Helpers for the staging API tests: open tasks over HTTP, count what the database holds, assert refusals.

Every refusal test checks three things a client would notice: the status, the JSON error body
(`{"error", "detail"}` with a detail that names the problem) and that nothing reached the database.
"""

from __future__ import annotations

import re
import uuid

import httpx
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.storage.tables import staging_entries, tasks
from tests.utils.factories import Actor

__all__ = ["open_task_http", "count_entries", "count_tasks", "count_all_entries", "assert_refused"]


async def open_task_http(client: httpx.AsyncClient, opener: Actor, org: str, project: str) -> str:
    """Open a fresh task through the gateway as `opener` (orchestrator or human); return its id."""
    task_id = f"t-{uuid.uuid4().hex}"
    r = await client.post(
        "/v1/tasks",
        json={
            "org": org,
            "project": project,
            "worktree": "main",
            "description": "test task",
            "task_id": task_id,
        },
        headers=opener.headers,
    )
    assert r.status_code == 201, r.text
    return task_id


async def count_entries(engine: AsyncEngine, task_id: str) -> int:
    """Staging rows of one task (by the id its tenant gave it, or its key)."""
    async with engine.connect() as conn:  # resolved in the engine's own database (some tests start their own)
        keys = (
            (
                await conn.execute(
                    select(tasks.c.id).where(
                        (tasks.c.id == task_id) | (func.coalesce(tasks.c.public_id, tasks.c.id) == task_id)
                    )
                )
            )
            .scalars()
            .all()
        )
        assert len(keys) <= 1, f"task id {task_id!r} names {len(keys)} tasks: use its key"
        key = keys[0] if keys else task_id
        query = select(func.count()).select_from(staging_entries).where(staging_entries.c.task_id == key)
        return int((await conn.execute(query)).scalar_one())


async def count_all_entries(engine: AsyncEngine) -> int:
    """Staging rows of every task (for requests whose task does not exist)."""
    async with engine.connect() as conn:
        return int((await conn.execute(select(func.count()).select_from(staging_entries))).scalar_one())


async def count_tasks(engine: AsyncEngine, org: str) -> int:
    """Task rows of one org (tests use fresh orgs, so this is exactly what a request could have added)."""
    async with engine.connect() as conn:
        return int(
            (
                await conn.execute(select(func.count()).select_from(tasks).where(tasks.c.org == org))
            ).scalar_one()
        )


def assert_refused(response: httpx.Response, status: int, error: str, detail_pattern: str) -> None:
    """The response is the documented refusal: status, `error` type, a detail matching `detail_pattern`."""
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/json"), response.headers
    body = response.json()
    assert body["error"] == error, body
    assert isinstance(body["detail"], str) and body["detail"], body
    assert re.search(detail_pattern, body["detail"]), (detail_pattern, body["detail"])
