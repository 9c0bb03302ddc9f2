"""`loregate mcp` holds tool arguments to what the gateway holds a request to, through the real server.

An argument a tool does not take is refused before anything is done (ignored, a misspelt `idempotency_key`
stores a retry twice); an invalid one is refused in one line, `validation_error: <field>: <why>`, without the
value sent; an empty `task_id` is refused, not replaced by the environment's.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType
from tests.api.test_mcp import mcp_session
from tests.utils.factories import make_actor, new_tenant
from tests.utils.memory_factories import new_task


@pytest.fixture(scope="module")
async def world(engine: AsyncEngine, gateway_url: str) -> dict[str, str]:
    """An agent's key and the task its MCP server works in."""
    org, project = new_tenant()
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    async with engine.begin() as conn:
        task = await new_task(conn, org=org, project=project)
    return {"url": gateway_url, "key": agent.key, "task_id": task.task_id}


async def _entries(engine: AsyncEngine, task_id: str) -> int:
    async with engine.connect() as conn:
        found = await conn.execute(
            text("SELECT count(*) FROM staging_entries WHERE task_id = :t"), {"t": task_id}
        )
        return int(found.scalar_one())


def _refusal(result: Any, tool: str) -> str:
    """The refusal's text after the SDK's `Error executing tool <name>: `, checked to be one line."""
    assert result.is_error, result.content
    text_ = str(result.content[0].text)
    assert "\n" not in text_ and "errors.pydantic.dev" not in text_ and "input_value" not in text_
    prefix = f"Error executing tool {tool}: "
    assert text_.startswith(prefix), text_
    return text_.removeprefix(prefix)


async def test_mcp_unknown_argument_is_refused_and_nothing_written(
    world: dict[str, str], engine: AsyncEngine
) -> None:
    before = await _entries(engine, world["task_id"])
    async with mcp_session(world) as client:
        args = {"kind": "log", "content": "retry-me", "idempotencyKey": "X"}
        first = await client.call_tool("append_staging", args)
        again = await client.call_tool("append_staging", args)
    assert _refusal(first, "append_staging") == (
        "validation_error: idempotencyKey: unknown argument; "
        "append_staging takes kind, content, task_id, payload, idempotency_key"
    )
    assert _refusal(again, "append_staging") == _refusal(first, "append_staging")
    assert await _entries(engine, world["task_id"]) == before


@pytest.mark.parametrize(
    ("tool", "args", "unknown"),
    [
        ("search", {"query": "stripe", "task": "other"}, "task"),
        ("get_promotion_plan", {"limt": 1}, "limt"),
    ],
)
async def test_mcp_unknown_argument_is_named_with_the_arguments_taken(
    world: dict[str, str], tool: str, args: dict[str, Any], unknown: str
) -> None:
    async with mcp_session(world) as client:
        result = await client.call_tool(tool, args)
        listed = {t.name: t for t in (await client.list_tools()).tools}
    takes = ", ".join(listed[tool].input_schema["properties"])
    assert _refusal(result, tool) == f"validation_error: {unknown}: unknown argument; {tool} takes {takes}"


async def test_mcp_invalid_argument_is_one_line_without_the_value(world: dict[str, str]) -> None:
    secret = "sk-live-4f9a8b7c6d5e"
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("append_staging", {"kind": secret, "content": "x"}, "kind: Input should be 'log', 'thought'"),
        ("append_staging", {"kind": "log", "content": "x", "payload": secret}, "payload: "),
        ("search", {"query": secret, "k": 0}, "k: Input should be greater than or equal to 1"),
        ("get_promotion", {"number": 0}, "number: Input should be greater than or equal to 1"),
        (
            "update_working_memory",
            {"hypotheses": [{"text": secret, "confidence": 0.5, "evidnce_ids": [1]}]},
            "hypotheses.0.evidnce_ids: Extra inputs are not permitted",
        ),
    ]
    async with mcp_session(world) as client:
        for tool, args, starts in cases:
            refusal = _refusal(await client.call_tool(tool, args), tool)
            assert refusal.startswith(f"validation_error: {starts}"), refusal
            assert secret not in refusal


async def test_mcp_empty_task_id_is_refused(world: dict[str, str], engine: AsyncEngine) -> None:
    before = await _entries(engine, world["task_id"])
    async with mcp_session(world) as client:
        result = await client.call_tool("append_staging", {"kind": "log", "content": "x", "task_id": ""})
    assert _refusal(result, "append_staging").startswith("validation_error: task_id: ")
    assert await _entries(engine, world["task_id"]) == before


async def test_mcp_input_schemas_take_no_other_argument(world: dict[str, str]) -> None:
    """Closed schemas: a client that validates before calling refuses what the server refuses."""
    async with mcp_session(world) as client:
        listed = (await client.list_tools()).tools
    assert [t.name for t in listed if t.input_schema.get("additionalProperties") is not False] == []
