"""Lifting over gRPC (`LiftMemories`) and MCP (`lift_memories`): the HTTP route's use case and refusals.

A human approver's lift of a project fact into org scope needs no workflow, so these run against gateways
without Temporal: the answer is the applied change request, the refusals are the HTTP ones (403, 404, 422)
with their gRPC codes, or the MCP tool errors reading `<error>: <detail>`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.config import Settings
from governance.scopes import ActorType
from tests.conftest import repo_root
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.grpc_gateway import bearer, grpc_gateway, pb2, refusal
from tests.utils.lifecycle_factories import Place, insert_memory


@pytest.fixture(scope="module")
async def stub(settings: Settings) -> AsyncIterator[Any]:
    async with grpc_gateway(settings) as s:
        yield s


@pytest.fixture
async def people(engine: AsyncEngine) -> dict[str, Actor]:
    org, project = new_tenant()
    return {
        "human": await make_actor(engine, ActorType.HUMAN, org, project),
        "agent": await make_actor(engine, ActorType.AGENT, org, project),
        "outsider": await make_actor(engine, ActorType.HUMAN, *new_tenant()),
    }


async def _project_fact(engine: AsyncEngine, actor: Actor, content: str = "cache.ttl: 300 seconds") -> str:
    org, project = actor.principal.org, actor.principal.project or ""
    place = Place(org, project, "main", f"task-{project}")
    async with engine.begin() as conn:
        return await insert_memory(conn, place, memory_type="fact", content=content)


def _body(memory_id: str, scope: str = "org") -> str:
    return json.dumps({"memory_ids": [memory_id], "target_scope": {"scope": scope}, "reason": "org-wide"})


async def test_grpc_lift_memories_applies_a_human_approvers_lift(
    stub: Any, people: dict[str, Actor], engine: AsyncEngine
) -> None:
    human = people["human"]
    memory_id = await _project_fact(engine, human)
    reply = await stub.LiftMemories(pb2.JsonRequest(json=_body(memory_id)), metadata=bearer(human.key))
    answer = json.loads(reply.json)
    assert answer["state"] == "applied" and answer["target_scope_key"] == f"org:{human.principal.org}"
    assert [i["outcome"] for i in answer["items"]] == ["lifted"]


@pytest.mark.parametrize(
    ("who", "body", "code", "error"),
    [
        ("agent", "org", grpc.StatusCode.PERMISSION_DENIED, "forbidden"),
        ("outsider", "org", grpc.StatusCode.NOT_FOUND, "not_found"),
        ("human", "worktree", grpc.StatusCode.INVALID_ARGUMENT, "invalid_input"),
        ("human", "not json", grpc.StatusCode.INVALID_ARGUMENT, "invalid_input"),
        ("human", "galaxy", grpc.StatusCode.INVALID_ARGUMENT, "validation_error"),
    ],
)
async def test_grpc_lift_memories_refusals_match_http(
    who: str,
    body: str,
    code: grpc.StatusCode,
    error: str,
    stub: Any,
    people: dict[str, Actor],
    engine: AsyncEngine,
) -> None:
    memory_id = await _project_fact(engine, people["human"])
    sent = "{not json" if body == "not json" else _body(memory_id, body)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.LiftMemories(pb2.JsonRequest(json=sent), metadata=bearer(people[who].key))
    assert caught.value.code() == code and refusal(caught.value)["error"] == error


async def test_mcp_lift_memories_tool_lifts_and_reports_refusals(
    gateway_url: str, people: dict[str, Actor], engine: AsyncEngine
) -> None:
    human = people["human"]
    memory_id = await _project_fact(engine, human, "queue.retries: 5 with backoff")
    env = {"LOREGATE_URL": gateway_url, "LOREGATE_API_KEY": human.key}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "api.cli", "mcp"], env=env, cwd=str(repo_root())
    )
    async with Client(params, read_timeout_seconds=120) as client:
        arguments = {"memories": [memory_id], "target_scope": "org", "reason": "org-wide"}
        result = await client.call_tool("lift_memories", arguments)
        assert not result.is_error, result.content
        answer = result.structured_content or json.loads(result.content[0].text)
        assert answer["state"] == "applied" and answer["items"][0]["outcome"] == "lifted"
        again = await client.call_tool("lift_memories", arguments)
        assert again.is_error and "conflict: memory" in again.content[0].text
        narrower = await client.call_tool("lift_memories", {**arguments, "target_scope": "worktree"})
        assert narrower.is_error and "invalid_input" in narrower.content[0].text
