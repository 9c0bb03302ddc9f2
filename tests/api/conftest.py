"""A real gateway on loopback for the API tests, sharing the session database.

The promotion tests also get, per module, a gateway wired to the Temporal dev server and a worker running
the real activities on a task queue of their own (`promo_settings`, `gateway`, `worker`, `http`, `team`).
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
