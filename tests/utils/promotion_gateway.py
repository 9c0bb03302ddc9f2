"""A gateway wired to a real Temporal server, and a worker running the real promotion activities.

The gateway (uvicorn in a thread) starts workflows on `settings.task_queue`; the worker runs in the test's
event loop, so tests must call the gateway with async HTTP (a blocking call would starve the worker).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from temporalio.client import Client
from temporalio.worker import Worker

from governance.config import Settings
from governance.storage.engine import make_engine
from policy.enforcer import make_authorizer
from tests.utils.factories import Actor
from workflows.worker import build_worker

__all__ = [
    "temporal_settings",
    "running_worker",
    "wait_promotion_state",
    "open_task",
    "stage",
    "start_promotion",
    "staged_promotion",
    "awaiting_approval",
    "approve_and_publish",
]


def temporal_settings(settings: Settings, client: Client, **overrides: Any) -> Settings:
    """`settings` pointing at the Temporal server of `client`, on a task queue of their own."""
    return settings.model_copy(
        update={
            "temporal_address": client.service_client.config.target_host,
            "temporal_namespace": client.namespace,
            "task_queue": f"promo-api-{uuid.uuid4().hex[:8]}",
            **overrides,
        }
    )


@asynccontextmanager
async def running_worker(client: Client, settings: Settings, **overrides: Any) -> AsyncIterator[Worker]:
    """A worker on `settings.task_queue` running every workflow and the real activities."""
    worker_settings = settings.model_copy(update=overrides) if overrides else settings
    authorizer = make_authorizer(worker_settings.sqlalchemy_url(), watch=False)
    engine = make_engine(worker_settings)
    try:
        worker = build_worker(client, engine=engine, settings=worker_settings, authorizer=authorizer)
        async with worker:
            yield worker
    finally:
        authorizer.close()
        await engine.dispose()


async def wait_promotion_state(
    http: httpx.AsyncClient, headers: dict[str, str], task_id: str, state: str, timeout: float = 90.0
) -> dict[str, Any]:
    """Poll `GET /v1/promotions/{task_id}` until the promotion is in `state`; its last answer."""
    deadline = asyncio.get_running_loop().time() + timeout
    answer: dict[str, Any] = {}
    while asyncio.get_running_loop().time() < deadline:
        response = await http.get(f"/v1/promotions/{task_id}", headers=headers)
        answer = response.json()
        if response.status_code == 200 and answer["state"] == state:
            return answer
        await asyncio.sleep(0.2)
    raise AssertionError(f"promotion of {task_id} never reached {state}; last answer {answer}")


async def open_task(
    http: httpx.AsyncClient, opener: Actor, description: str, *, worktree: str = "main"
) -> str:
    """`POST /v1/tasks` in the opener's tenant (an orchestrator, as the policy asks); the new task's id."""
    opened = await http.post(
        "/v1/tasks",
        headers=opener.headers,
        json={
            "org": opener.principal.org,
            "project": opener.principal.project,
            "worktree": worktree,
            "description": description,
        },
    )
    assert opened.status_code == 201, opened.text
    task_id: str = opened.json()["task_id"]
    return task_id


async def stage(http: httpx.AsyncClient, writer: Actor, task_id: str, entries: list[dict[str, Any]]) -> None:
    """`POST /v1/tasks/{task_id}/entries`: the entries are acknowledged."""
    written = await http.post(
        f"/v1/tasks/{task_id}/entries", headers=writer.headers, json={"entries": entries}
    )
    assert written.status_code == 201, written.text


async def start_promotion(
    http: httpx.AsyncClient,
    starter: Actor,
    task_id: str,
    target_scope: str = "project",
    *,
    success: bool = True,
    source: str = "tests_passed",
) -> None:
    """`POST /v1/tasks/{task_id}/promotion` with its verification evidence: accepted (202)."""
    started = await http.post(
        f"/v1/tasks/{task_id}/promotion",
        headers=starter.headers,
        json={"target_scope": target_scope, "verification": {"source": source, "success": success}},
    )
    assert started.status_code == 202, started.text


async def staged_promotion(
    http: httpx.AsyncClient,
    team: dict[str, Actor],
    description: str,
    entries: list[dict[str, Any]],
    target_scope: str = "project",
    *,
    success: bool = True,
) -> str:
    """A task of the team (opened by its orchestrator, written by its agent) whose promotion has started."""
    task_id = await open_task(http, team["orchestrator"], description)
    await stage(http, team["agent"], task_id, entries)
    await start_promotion(http, team["orchestrator"], task_id, target_scope, success=success)
    return task_id


async def awaiting_approval(
    http: httpx.AsyncClient,
    team: dict[str, Actor],
    entries: list[dict[str, Any]],
    description: str = "pick the async db driver",
    target_scope: str = "project",
) -> tuple[str, dict[str, Any]]:
    """A team's task whose promotion, started with passing tests, awaits a human's approval: its id and the
    promotion's status as the team's human reads it."""
    task_id = await staged_promotion(http, team, description, entries, target_scope)
    return task_id, await wait_promotion_state(http, team["human"].headers, task_id, "awaiting_approval")


async def approve_and_publish(http: httpx.AsyncClient, approver: Actor, task_id: str) -> dict[str, Any]:
    """`POST /v1/promotions/{task_id}/approve` without a note, accepted; the status once published."""
    approved = await http.post(f"/v1/promotions/{task_id}/approve", headers=approver.headers, json={})
    assert approved.status_code == 200, approved.text
    return await wait_promotion_state(http, approver.headers, task_id, "published")
