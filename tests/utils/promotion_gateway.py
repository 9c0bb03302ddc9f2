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
from workflows.worker import build_worker

__all__ = ["temporal_settings", "running_worker", "wait_promotion_state"]


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
