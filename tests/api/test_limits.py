"""Rate limits (per API key and per tenant) and staging quotas, over HTTP, gRPC and MCP, on real gateways.

Each gateway here runs with tight limits of its own; the session's gateway keeps the generous defaults.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import grpc
import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from api.grpc.server import RETRY_AFTER_METADATA
from governance.config import Settings
from governance.scopes import ActorType
from tests.conftest import repo_root
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.gateway import running_gateway
from tests.utils.grpc_gateway import bearer, grpc_gateway, pb2, refusal
from tests.utils.memory_factories import new_task

# a bucket that does not refill within a test: what is spent stays spent
_SLOW = 0.001
_RATES = {
    "rate_limit_principal_per_second": _SLOW,
    "rate_limit_principal_burst": 4,
    "rate_limit_tenant_per_second": _SLOW,
    "rate_limit_tenant_burst": 6,
    "search_rate_principal_per_second": _SLOW,
    "search_rate_principal_burst": 2,
    "search_rate_tenant_per_second": 0,  # off: the search tests meet the key's bucket alone
}
_QUOTAS = {
    "rate_limit_principal_per_second": 0,
    "rate_limit_tenant_per_second": 0,
    "staging_max_task_entries": 4,
    "staging_max_task_bytes": 3000,
    "staging_max_tenant_entries_per_day": 6,
    "staging_max_tenant_bytes_per_day": 5000,
}


@pytest.fixture(scope="module")
def limited(settings: Settings) -> Settings:
    return settings.model_copy(update=_RATES)


@pytest.fixture(scope="module")
def limited_url(limited: Settings) -> Iterator[str]:
    with running_gateway(limited) as url:
        yield url


@pytest.fixture(scope="module")
def quota_url(settings: Settings) -> Iterator[str]:
    with running_gateway(settings.model_copy(update=_QUOTAS)) as url:
        yield url


@pytest.fixture(scope="module")
def task_quota_url(settings: Settings) -> Iterator[str]:
    """Task quotas alone: an append is then one autocommitted statement that checks them itself."""
    no_daily = {"staging_max_tenant_entries_per_day": 0, "staging_max_tenant_bytes_per_day": 0}
    with running_gateway(settings.model_copy(update={**_QUOTAS, **no_daily})) as url:
        yield url


# the task's quotas are checked with the tenant's day (a transaction) and without it (one statement)
_TASK_QUOTA_GATEWAYS = pytest.mark.parametrize("gateway", ["quota_url", "task_quota_url"])


async def _agent(engine: AsyncEngine, org: str, project: str) -> Actor:
    return await make_actor(engine, ActorType.AGENT, org, project)


async def _task(engine: AsyncEngine, org: str, project: str) -> str:
    async with engine.begin() as conn:
        return (await new_task(conn, org=org, project=project)).task_id


def _assert_429(response: httpx.Response, error: str = "rate_limited") -> dict[str, Any]:
    assert response.status_code == 429, response.text
    assert int(response.headers["retry-after"]) >= 1
    body = response.json()
    assert set(body) == {"error", "detail"} and body["error"] == error
    return dict(body)


async def test_http_key_over_its_rate_is_429_with_retry_after(engine: AsyncEngine, limited_url: str) -> None:
    org, project = new_tenant()
    agent = await _agent(engine, org, project)
    task_id = await _task(engine, org, project)
    async with httpx.AsyncClient(base_url=limited_url, headers=agent.headers) as http:
        statuses = [(await http.get(f"/v1/tasks/{task_id}")).status_code for _ in range(4)]
        refused = await http.get(f"/v1/tasks/{task_id}")
    body = _assert_429(refused)
    assert statuses == [200] * 4
    assert "this API key" in body["detail"] and "retry after" in body["detail"]
    # one token refills in 1/_SLOW seconds: the header says so, in whole seconds
    assert 990 <= int(refused.headers["retry-after"]) <= 1000


async def test_http_tenant_bucket_is_shared_by_its_keys(engine: AsyncEngine, limited_url: str) -> None:
    org, project = new_tenant()
    first, second = await _agent(engine, org, project), await _agent(engine, org, project)
    stranger = await _agent(engine, *new_tenant())
    task_id = await _task(engine, org, project)
    async with httpx.AsyncClient(base_url=limited_url) as http:
        for _ in range(4):
            assert (await http.get(f"/v1/tasks/{task_id}", headers=first.headers)).status_code == 200
        for _ in range(2):
            assert (await http.get(f"/v1/tasks/{task_id}", headers=second.headers)).status_code == 200
        body = _assert_429(await http.get(f"/v1/tasks/{task_id}", headers=second.headers))
        # another tenant's key is untouched by this tenant's flood
        other = await http.get(f"/v1/tasks/{task_id}", headers=stranger.headers)
    assert f"tenant {org!r}" in body["detail"]
    assert other.status_code == 404


async def test_http_searches_have_a_budget_of_their_own(engine: AsyncEngine, limited_url: str) -> None:
    org, project = new_tenant()
    agent = await _agent(engine, org, project)
    task_id = await _task(engine, org, project)
    async with httpx.AsyncClient(base_url=limited_url, headers=agent.headers, timeout=60) as http:
        for query in ("first", "second"):
            found = await http.post("/v1/search", json={"task_id": task_id, "query": query})
            assert found.status_code == 200, found.text
        body = _assert_429(await http.post("/v1/search", json={"task_id": task_id, "query": "third"}))
        # the key's request budget still has a token: reads that do not embed go on
        assert (await http.get(f"/v1/tasks/{task_id}")).status_code == 200
    assert "rate limit of search" in body["detail"]


async def test_grpc_key_over_its_rate_is_resource_exhausted(engine: AsyncEngine, limited: Settings) -> None:
    org, project = new_tenant()
    agent = await _agent(engine, org, project)
    task_id = await _task(engine, org, project)
    request = pb2.JsonRequest(json=json.dumps({"task_id": task_id, "query": "anything"}))
    async with grpc_gateway(limited) as stub:
        for _ in range(2):
            await stub.Search(request, metadata=bearer(agent.key))
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.Search(request, metadata=bearer(agent.key))
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert refusal(refused.value)["error"] == "rate_limited"
    trailers = dict(refused.value.trailing_metadata() or ())
    assert int(trailers[RETRY_AFTER_METADATA]) >= 1


async def test_mcp_tool_over_the_rate_is_a_readable_error(engine: AsyncEngine, limited_url: str) -> None:
    org, project = new_tenant()
    agent = await _agent(engine, org, project)
    task_id = await _task(engine, org, project)
    env = {"LOREGATE_URL": limited_url, "LOREGATE_API_KEY": agent.key, "LOREGATE_TASK_ID": task_id}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "api.cli", "mcp"], env=env, cwd=str(repo_root())
    )
    async with Client(params, read_timeout_seconds=120) as client:
        for query in ("first", "second"):
            assert not (await client.call_tool("search", {"query": query})).is_error
        result = await client.call_tool("search", {"query": "third"})
    assert result.is_error
    assert "rate_limited: rate limit of search for this API key" in result.content[0].text


async def _count(engine: AsyncEngine, task_id: str) -> int:
    async with engine.connect() as conn:
        found = await conn.execute(
            text("SELECT count(*) FROM staging_entries WHERE task_id = :t"), {"t": task_id}
        )
        return int(found.scalar_one())


def _entries(n: int, size: int = 10) -> dict[str, Any]:
    return {"entries": [{"kind": "fact", "content": "x" * size} for _ in range(n)]}


@_TASK_QUOTA_GATEWAYS
async def test_task_entry_quota_refuses_the_whole_batch(
    engine: AsyncEngine, gateway: str, request: pytest.FixtureRequest
) -> None:
    quota_url = request.getfixturevalue(gateway)
    org, project = new_tenant()
    agent = await _agent(engine, org, project)
    task_id = await _task(engine, org, project)
    async with httpx.AsyncClient(base_url=quota_url, headers=agent.headers) as http:
        assert (await http.post(f"/v1/tasks/{task_id}/entries", json=_entries(3))).status_code == 201
        refused = await http.post(f"/v1/tasks/{task_id}/entries", json=_entries(2))
        fits = await http.post(f"/v1/tasks/{task_id}/entries", json=_entries(1))
    assert refused.status_code == 413, refused.text
    assert refused.json()["error"] == "quota_exceeded"
    assert "LOREGATE_STAGING_MAX_TASK_ENTRIES" in refused.json()["detail"]
    assert fits.status_code == 201
    assert await _count(engine, task_id) == 4


@_TASK_QUOTA_GATEWAYS
async def test_task_byte_quota_counts_content(
    engine: AsyncEngine, gateway: str, request: pytest.FixtureRequest
) -> None:
    quota_url = request.getfixturevalue(gateway)
    org, project = new_tenant()
    agent = await _agent(engine, org, project)
    task_id = await _task(engine, org, project)
    async with httpx.AsyncClient(base_url=quota_url, headers=agent.headers) as http:
        assert (await http.post(f"/v1/tasks/{task_id}/entries", json=_entries(1, 2000))).status_code == 201
        refused = await http.post(f"/v1/tasks/{task_id}/entries", json=_entries(1, 1500))
        # the refused batch was not counted either: 2,000 + 900 bytes fit the 3,000
        fits = await http.post(f"/v1/tasks/{task_id}/entries", json=_entries(1, 900))
    assert refused.status_code == 413
    assert "LOREGATE_STAGING_MAX_TASK_BYTES" in refused.json()["detail"]
    assert fits.status_code == 201, fits.text
    assert await _count(engine, task_id) == 2


async def test_tenant_daily_quota_is_429_until_midnight(engine: AsyncEngine, quota_url: str) -> None:
    org, project = new_tenant()
    agent = await _agent(engine, org, project)
    tasks = [await _task(engine, org, project) for _ in range(3)]
    async with httpx.AsyncClient(base_url=quota_url, headers=agent.headers) as http:
        for task_id in tasks[:2]:
            assert (await http.post(f"/v1/tasks/{task_id}/entries", json=_entries(3))).status_code == 201
        refused = await http.post(f"/v1/tasks/{tasks[2]}/entries", json=_entries(1))
    body = _assert_429(refused, "quota_exceeded")
    assert f"tenant {org!r} appended 6 staging entries today" in body["detail"]
    assert 1 <= int(refused.headers["retry-after"]) <= 86400
    assert await _count(engine, tasks[2]) == 0


async def test_tenant_daily_byte_quota_over_grpc(engine: AsyncEngine, settings: Settings) -> None:
    org, project = new_tenant()
    agent = await _agent(engine, org, project)
    first, second = await _task(engine, org, project), await _task(engine, org, project)

    def batch(task_id: str, size: int) -> Any:
        return pb2.AppendRequest(task_id=task_id, entries=[pb2.Entry(kind="fact", content="y" * size)])

    async with grpc_gateway(settings.model_copy(update=_QUOTAS)) as stub:
        await stub.AppendEntries(iter([batch(first, 2900)]), metadata=bearer(agent.key))
        await stub.AppendEntries(iter([batch(second, 2000)]), metadata=bearer(agent.key))
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.AppendEntries(iter([batch(second, 200)]), metadata=bearer(agent.key))
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "LOREGATE_STAGING_MAX_TENANT_BYTES_PER_DAY" in refusal(refused.value)["detail"]
    assert await _count(engine, second) == 1
