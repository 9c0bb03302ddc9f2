"""Workers for the promotion tests: real activities over the session database, fresh task queues."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client
from temporalio.worker import Worker

from governance.config import Settings
from policy.enforcer import Authorizer, make_authorizer
from workflows.worker import build_worker

WorkerFactory = Callable[..., AbstractAsyncContextManager[Worker]]


@pytest.fixture(scope="session")
def authorizer(database_url: str) -> Any:
    """The real Casbin enforcer over the test database (tests call `reload()` after adding principals)."""
    auth = make_authorizer(database_url, watch=False)
    yield auth
    auth.close()


@pytest.fixture
def task_queue() -> str:
    return f"promo-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def make_worker(engine: AsyncEngine, settings: Settings, authorizer: Authorizer) -> WorkerFactory:
    """`async with make_worker(client, task_queue, **setting_overrides)`: a running worker."""

    @asynccontextmanager
    async def factory(client: Client, task_queue: str, **overrides: Any) -> AsyncIterator[Worker]:
        authorizer.reload()
        worker_settings = settings.model_copy(update=overrides) if overrides else settings
        worker = build_worker(
            client, engine=engine, settings=worker_settings, authorizer=authorizer, task_queue=task_queue
        )
        async with worker:
            yield worker

    return factory


@pytest.fixture(scope="session")
async def ts_env(time_skipping_env: Any) -> Any:
    """The time-skipping server with `LoregateState` registered (as `loregate up` does on the dev server)."""
    from temporalio.api.enums.v1 import IndexedValueType
    from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest

    await time_skipping_env.client.operator_service.add_search_attributes(
        AddSearchAttributesRequest(
            namespace=time_skipping_env.client.namespace,
            search_attributes={"LoregateState": IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD},
        )
    )
    return time_skipping_env
