"""Appends to a task whose promotion ended: 409 naming the promotion, on HTTP, gRPC and MCP, nothing written.

The task's status is set as the promotion's activities set it (`set_task_status`), after the gateway has
cached the task from an earlier append, so a stale cache would show. A `failed` promotion may be started
again: its task stays open.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import AsyncIterator
from typing import Any

import grpc
import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.config import Settings
from governance.scopes import ActorType
from governance.storage.staging import CLOSED_STATUSES, set_task_status
from tests.conftest import repo_root
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.grpc_gateway import bearer, grpc_gateway, pb2, refusal
from tests.utils.staging import assert_refused, count_entries, open_task_http
from tests.utils.tenancy import task_key_of


@pytest.fixture
async def team(engine: AsyncEngine) -> dict[str, Actor]:
    org, project = new_tenant()
    return {
        "orchestrator": await make_actor(engine, ActorType.ORCHESTRATOR, org, project),
        "agent": await make_actor(engine, ActorType.AGENT, org, project),
    }


@pytest.fixture
async def client(gateway_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=gateway_url, timeout=30) as c:
        yield c


async def _end_promotion(engine: AsyncEngine, task_id: str, status: str) -> None:
    async with engine.begin() as conn:
        await set_task_status(conn, task_key_of(task_id), status)


def _entry(content: str, key: str | None = None) -> dict[str, Any]:
    return {"kind": "fact", "content": content, **({"idempotency_key": key} if key else {})}


async def _append(client: httpx.AsyncClient, actor: Actor, task_id: str, *entries: dict[str, Any]) -> Any:
    return await client.post(
        f"/v1/tasks/{task_id}/entries", json={"entries": list(entries)}, headers=actor.headers
    )


async def _open_with_an_entry(client: httpx.AsyncClient, team: dict[str, Actor], key: str) -> str:
    """A task with one keyed entry, appended through the gateway (which now has the task cached)."""
    orchestrator = team["orchestrator"]
    task_id = await open_task_http(
        client, orchestrator, orchestrator.principal.org, orchestrator.principal.project
    )
    first = await _append(client, team["agent"], task_id, _entry("the CI cache lives in S3", key))
    assert first.status_code == 201, first.text
    return task_id


@pytest.mark.parametrize("status", sorted(CLOSED_STATUSES))
async def test_staging_append_after_the_promotion_ended_is_409_naming_it(
    client: httpx.AsyncClient, engine: AsyncEngine, team: dict[str, Actor], status: str
) -> None:
    task_id = await _open_with_an_entry(client, team, f"k-{uuid.uuid4().hex}")
    await _end_promotion(engine, task_id, status)
    answer = await _append(client, team["agent"], task_id, _entry("too late"), _entry("also too late"))
    assert_refused(answer, 409, "conflict", rf"promote-{task_key_of(task_id)} ended \({status}\)")
    assert await count_entries(engine, task_id) == 1


async def test_staging_replay_of_an_entry_from_before_the_end_returns_its_first_result(
    client: httpx.AsyncClient, engine: AsyncEngine, team: dict[str, Actor]
) -> None:
    key = f"k-{uuid.uuid4().hex}"
    task_id = await _open_with_an_entry(client, team, key)
    await _end_promotion(engine, task_id, "promoted")
    again = await _append(client, team["agent"], task_id, _entry("the CI cache lives in S3", key))
    assert again.status_code == 201, again.text
    assert again.json()["entries"][0] == {"id": again.json()["entries"][0]["id"], "seq": 1, "replayed": True}
    # a replay batched with a new entry writes nothing: the batch is all or nothing
    mixed = await _append(
        client, team["agent"], task_id, _entry("the CI cache lives in S3", key), _entry("new")
    )
    assert_refused(mixed, 409, "conflict", "promote-")
    assert await count_entries(engine, task_id) == 1


async def test_staging_append_after_a_failed_promotion_is_accepted(
    client: httpx.AsyncClient, engine: AsyncEngine, team: dict[str, Actor]
) -> None:
    task_id = await _open_with_an_entry(client, team, f"k-{uuid.uuid4().hex}")
    await _end_promotion(engine, task_id, "failed")
    answer = await _append(client, team["agent"], task_id, _entry("retrying the promotion after the fix"))
    assert answer.status_code == 201, answer.text
    assert answer.json()["entries"][0]["seq"] == 2


async def test_staging_append_over_grpc_after_the_promotion_ended_is_already_exists(
    settings: Settings, engine: AsyncEngine, team: dict[str, Actor], client: httpx.AsyncClient
) -> None:
    task_id = await _open_with_an_entry(client, team, f"k-{uuid.uuid4().hex}")
    async with grpc_gateway(settings) as stub:
        agent_key = bearer(team["agent"].key)
        first = pb2.AppendRequest(task_id=task_id, entries=[pb2.Entry(kind="log", content="still open")])
        assert (await stub.AppendEntries(iter([first]), metadata=agent_key)).entries[0].seq == 2
        await _end_promotion(engine, task_id, "rejected")
        late = pb2.AppendRequest(task_id=task_id, entries=[pb2.Entry(kind="log", content="too late")])
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.AppendEntries(iter([late]), metadata=agent_key)
    assert caught.value.code() == grpc.StatusCode.ALREADY_EXISTS
    body = refusal(caught.value)
    assert (
        body["error"] == "conflict" and f"promote-{task_key_of(task_id)} ended (rejected)" in body["detail"]
    )
    assert await count_entries(engine, task_id) == 2


async def test_staging_append_over_mcp_after_the_promotion_ended_is_a_tool_error(
    gateway_url: str, engine: AsyncEngine, team: dict[str, Actor], client: httpx.AsyncClient
) -> None:
    task_id = await _open_with_an_entry(client, team, f"k-{uuid.uuid4().hex}")
    await _end_promotion(engine, task_id, "unverified")
    env = {"LOREGATE_URL": gateway_url, "LOREGATE_API_KEY": team["agent"].key, "LOREGATE_TASK_ID": task_id}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "api.cli", "mcp"], env=env, cwd=str(repo_root())
    )
    async with Client(params, read_timeout_seconds=120) as mcp:
        result = await mcp.call_tool("append_staging", {"kind": "fact", "content": "too late"})
    assert result.is_error
    text = result.content[0].text
    assert "conflict" in text and f"promote-{task_key_of(task_id)} ended (unverified)" in text
    assert await count_entries(engine, task_id) == 1
