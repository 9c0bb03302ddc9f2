"""Live warnings over gRPC and MCP answer as over HTTP: the fix of an error another task got past comes back
with the append, a failed approach of another task with the check; a reader who may not read the other
task's staging gets neither."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.config import Settings
from tests.conftest import repo_root
from tests.utils.factories import Actor
from tests.utils.grpc_gateway import bearer, grpc_gateway, pb2
from tests.utils.live_warnings import (
    APPROACH,
    ERROR_B,
    FIX,
    blind_reader,
    fixed_and_failed,
    open_task,
    until_denied,
)
from tests.utils.live_warnings import client as client  # noqa: F401  (the fixture)
from tests.utils.live_warnings import project as project  # noqa: F401  (the fixture)


@pytest.fixture(scope="module")
async def stub(settings: Settings) -> AsyncIterator[Any]:
    async with grpc_gateway(settings) as s:
        yield s


async def _grpc_append_error(stub: Any, reader: Actor, task_id: str) -> Any:
    def messages() -> Any:
        yield pb2.AppendRequest(task_id=task_id, entries=[pb2.Entry(kind="log", content="migrating")])
        yield pb2.AppendRequest(entries=[pb2.Entry(kind="error", content=ERROR_B)])

    return await stub.AppendEntries(messages(), metadata=bearer(reader.key))


async def _grpc_check(stub: Any, reader: Actor, task_id: str) -> dict[str, Any]:
    reply = await stub.CheckApproach(
        pb2.TaskJsonRequest(task_id=task_id, json=json.dumps({"approach": APPROACH})),
        metadata=bearer(reader.key),
    )
    answer: dict[str, Any] = json.loads(reply.json)
    return answer


async def test_grpc_append_and_check_carry_other_tasks_warnings(
    stub: Any, client: httpx.AsyncClient, project: dict[str, Actor]
) -> None:
    first = await fixed_and_failed(client, project)
    mine = await open_task(client, project["orchestrator"])

    reply = await _grpc_append_error(stub, project["second"], mine)
    checked = await _grpc_check(stub, project["second"], mine)

    [hint] = reply.hints
    assert hint.entry_index == 1 and hint.seq == reply.entries[1].seq  # counted across the stream
    assert hint.task_id == first and hint.agent == project["first"].principal.id
    assert hint.detail == FIX and hint.standing == "unreviewed" and hint.at
    assert checked["valid"] is True
    assert [(w["task_id"], w["standing"]) for w in checked["elsewhere"]] == [(first, "unreviewed")]


async def test_grpc_reader_who_may_not_read_staging_gets_nothing(
    engine: AsyncEngine, stub: Any, client: httpx.AsyncClient, project: dict[str, Actor]
) -> None:
    await fixed_and_failed(client, project)
    blind = await blind_reader(engine, client, project)
    mine = await open_task(client, project["orchestrator"])
    await until_denied(client, blind, mine)

    reply = await _grpc_append_error(stub, blind, mine)
    checked = await _grpc_check(stub, blind, mine)

    assert len(reply.entries) == 2 and list(reply.hints) == []
    assert checked["elsewhere"] == []


def _body(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return dict(result.structured_content)
    return dict(json.loads(result.content[0].text))


async def test_mcp_append_and_check_carry_other_tasks_warnings(
    gateway_url: str, client: httpx.AsyncClient, project: dict[str, Actor]
) -> None:
    first = await fixed_and_failed(client, project)
    mine = await open_task(client, project["orchestrator"])
    env = {"LOREGATE_URL": gateway_url, "LOREGATE_API_KEY": project["second"].key, "LOREGATE_TASK_ID": mine}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "api.cli", "mcp"], env=env, cwd=str(repo_root())
    )
    async with Client(params, read_timeout_seconds=120) as session:
        appended = _body(await session.call_tool("append_staging", {"kind": "error", "content": ERROR_B}))
        checked = _body(await session.call_tool("check_approach", {"approach": APPROACH}))

    [hint] = appended["hints"]
    assert hint["task_id"] == first and hint["detail"] == FIX and hint["standing"] == "unreviewed"
    assert [w["task_id"] for w in checked["elsewhere"]] == [first]
