"""Appends to a closed task: 409 naming why, on HTTP, gRPC and MCP, nothing written; appends after an ended
promotion: accepted, answering the promotion they belong to (docs/promotions.md).

The task is closed (`close_task`, as `POST /v1/tasks/{id}/close` and a task's erasure close it) after the
gateway has cached the task from an earlier append, so a stale cache would show. An ended promotion no
longer closes its task: what is appended afterwards belongs to its next promotion.
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
from governance.promotions import CLOSE_REASONS
from governance.scopes import ActorType
from governance.storage.promotions import add_promotion, close_task, end_promotion, record_snapshot
from governance.storage.staging import ENDED_STATUSES, set_task_status
from tests.conftest import repo_root
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.grpc_gateway import bearer, grpc_gateway, pb2, refusal
from tests.utils.staging import assert_refused, count_entries, open_task_http
from tests.utils.tenancy import task_key_of

# a task's status when its promotion ended → the promotion's recorded outcome
_OUTCOMES = {"promoted": "published", "unverified": "unverified", "rejected": "rejected", "failed": "failed"}


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
    """Promotion 1 of the task took its one entry and ended as `status` says (as its activities record it)."""
    key = task_key_of(task_id)
    workflow_id = f"promote-{key}"
    async with engine.begin() as conn:
        await add_promotion(
            conn,
            task_id=key,
            number=1,
            workflow_id=workflow_id,
            after_seq=0,
            target_scope="task",
            requested_by=None,
        )
        await record_snapshot(conn, workflow_id, 1)
        await set_task_status(conn, key, status)
        await end_promotion(conn, workflow_id, _OUTCOMES[status])


async def _close(engine: AsyncEngine, task_id: str, reason: str) -> None:
    async with engine.begin() as conn:
        assert await close_task(conn, task_key_of(task_id), reason=reason, by=None)


_WHY = {"closed": "was closed", "erased": "was erased"}


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


@pytest.mark.parametrize("reason", sorted(CLOSE_REASONS))
async def test_staging_append_to_a_closed_task_is_409_naming_why(
    client: httpx.AsyncClient, engine: AsyncEngine, team: dict[str, Actor], reason: str
) -> None:
    task_id = await _open_with_an_entry(client, team, f"k-{uuid.uuid4().hex}")
    await _close(engine, task_id, reason)
    answer = await _append(client, team["agent"], task_id, _entry("too late"), _entry("also too late"))
    assert_refused(answer, 409, "conflict", rf"task '{task_id}' is closed: it {_WHY[reason]}")
    assert await count_entries(engine, task_id) == 1
    shown = await client.get(f"/v1/tasks/{task_id}", headers=team["agent"].headers)
    assert shown.status_code == 200, shown.text
    assert (shown.json()["status"], shown.json()["closed_reason"]) == (reason, reason)


@pytest.mark.parametrize("status", sorted(ENDED_STATUSES))
async def test_staging_append_after_the_promotion_ended_goes_to_the_next_promotion(
    client: httpx.AsyncClient, engine: AsyncEngine, team: dict[str, Actor], status: str
) -> None:
    task_id = await _open_with_an_entry(client, team, f"k-{uuid.uuid4().hex}")
    await _end_promotion(engine, task_id, status)
    answer = await _append(client, team["agent"], task_id, _entry("learnt afterwards"))
    assert answer.status_code == 201, answer.text
    assert answer.json()["entries"][0]["seq"] == 2
    # a failed promotion runs again under its number (and snapshots anew); an ended one has a successor
    assert answer.json()["promotion"] == (1 if status == "failed" else 2)


async def test_staging_replay_of_an_entry_from_before_closing_returns_its_first_result(
    client: httpx.AsyncClient, engine: AsyncEngine, team: dict[str, Actor]
) -> None:
    key = f"k-{uuid.uuid4().hex}"
    task_id = await _open_with_an_entry(client, team, key)
    await _close(engine, task_id, "closed")
    again = await _append(client, team["agent"], task_id, _entry("the CI cache lives in S3", key))
    assert again.status_code == 201, again.text
    assert again.json()["entries"][0] == {"id": again.json()["entries"][0]["id"], "seq": 1, "replayed": True}
    # a replay batched with a new entry writes nothing: the batch is all or nothing
    mixed = await _append(
        client, team["agent"], task_id, _entry("the CI cache lives in S3", key), _entry("new")
    )
    assert_refused(mixed, 409, "conflict", "is closed")
    assert await count_entries(engine, task_id) == 1


async def test_staging_append_over_grpc_to_a_closed_task_is_already_exists(
    settings: Settings, engine: AsyncEngine, team: dict[str, Actor], client: httpx.AsyncClient
) -> None:
    task_id = await _open_with_an_entry(client, team, f"k-{uuid.uuid4().hex}")
    async with grpc_gateway(settings) as stub:
        agent_key = bearer(team["agent"].key)
        first = pb2.AppendRequest(task_id=task_id, entries=[pb2.Entry(kind="log", content="still open")])
        reply = await stub.AppendEntries(iter([first]), metadata=agent_key)
        assert (reply.entries[0].seq, reply.promotion) == (2, 1)
        await _close(engine, task_id, "closed")
        late = pb2.AppendRequest(task_id=task_id, entries=[pb2.Entry(kind="log", content="too late")])
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.AppendEntries(iter([late]), metadata=agent_key)
    assert caught.value.code() == grpc.StatusCode.ALREADY_EXISTS
    body = refusal(caught.value)
    assert body["error"] == "conflict" and f"task '{task_id}' is closed: it was closed" in body["detail"]
    assert await count_entries(engine, task_id) == 2


async def test_staging_append_over_mcp_to_an_erased_task_is_a_tool_error(
    gateway_url: str, engine: AsyncEngine, team: dict[str, Actor], client: httpx.AsyncClient
) -> None:
    task_id = await _open_with_an_entry(client, team, f"k-{uuid.uuid4().hex}")
    await _close(engine, task_id, "erased")
    env = {"LOREGATE_URL": gateway_url, "LOREGATE_API_KEY": team["agent"].key, "LOREGATE_TASK_ID": task_id}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "api.cli", "mcp"], env=env, cwd=str(repo_root())
    )
    async with Client(params, read_timeout_seconds=120) as mcp:
        result = await mcp.call_tool("append_staging", {"kind": "fact", "content": "too late"})
    assert result.is_error
    text = result.content[0].text
    assert "conflict" in text and f"task '{task_id}' is closed: it was erased" in text
    assert await count_entries(engine, task_id) == 1
