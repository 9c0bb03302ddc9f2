"""A real gateway on loopback for the API tests, sharing the session database.

The promotion tests also get, per module, a gateway wired to the Temporal dev server and a worker running
the real activities on a task queue of their own (`promo_settings`, `gateway`, `worker`, `http`, `team`),
and the same in `approval_mode=authenticated`, where a Temporal UI decision needs an approval token
(`auth_settings`, `auth_gateway`, `auth_worker`, `auth_http`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client

from governance.config import Settings
from governance.scopes import ActorType
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.gateway import running_gateway
from tests.utils.promotion_gateway import running_worker, temporal_settings


@pytest.fixture(scope="session")
def gateway_url(settings: Settings) -> Iterator[str]:
    with running_gateway(settings) as url:
        yield url


@pytest.fixture(scope="module")
def temporal(local_env: Any) -> Client:
    client: Client = local_env.client
    return client


@pytest.fixture(scope="module")
def promo_settings(settings: Settings, temporal: Client) -> Settings:
    return temporal_settings(settings, temporal)


@pytest.fixture(scope="module")
def gateway(promo_settings: Settings) -> Iterator[str]:
    with running_gateway(promo_settings) as url:
        yield url


@pytest.fixture(scope="module")
async def worker(temporal: Client, promo_settings: Settings) -> AsyncIterator[None]:
    async with running_worker(temporal, promo_settings):
        yield


@pytest.fixture
async def http(gateway: str, worker: None) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=gateway, timeout=90) as client:
        yield client


@pytest.fixture(scope="module")
def auth_settings(promo_settings: Settings) -> Settings:
    """`promo_settings` in `approval_mode=authenticated`, on a task queue of their own."""
    return promo_settings.model_copy(
        update={"task_queue": f"{promo_settings.task_queue}-authenticated", "approval_mode": "authenticated"}
    )


@pytest.fixture(scope="module")
async def auth_worker(temporal: Client, auth_settings: Settings) -> AsyncIterator[None]:
    async with running_worker(temporal, auth_settings):
        yield


@pytest.fixture(scope="module")
def auth_gateway(auth_settings: Settings) -> Iterator[str]:
    with running_gateway(auth_settings) as url:
        yield url


@pytest.fixture
async def auth_http(auth_gateway: str, auth_worker: None) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=auth_gateway, timeout=90) as client:
        yield client


@pytest.fixture
async def team(engine: AsyncEngine) -> dict[str, Actor]:
    """An orchestrator, an agent and a human of one fresh tenant, and a human of another."""
    org, project = new_tenant()
    return {
        "orchestrator": await make_actor(engine, ActorType.ORCHESTRATOR, org, project),
        "agent": await make_actor(engine, ActorType.AGENT, org, project),
        "human": await make_actor(engine, ActorType.HUMAN, org, project),
        "outsider": await make_actor(engine, ActorType.HUMAN, *new_tenant()),
    }
