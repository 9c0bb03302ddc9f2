"""`loregate mcp` as a coding agent runs it: the MCP SDK's own client launches it over stdio.

The server process gets nothing but the environment an agent's MCP config would set (gateway URL, API key,
task id) and talks to a real gateway on loopback.
"""

from __future__ import annotations

import json
import re
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from sqlalchemy.ext.asyncio import AsyncEngine

from api.mcp.server import TOOL_NAMES
from governance.scopes import ActorType, Scope
from tests.conftest import repo_root
from tests.utils.factories import make_actor, new_tenant
from tests.utils.memory_factories import add_memory, new_task


def _body(result: Any) -> dict[str, Any]:
    """A tool's answer: its structured content, else the JSON in its text."""
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return dict(result.structured_content)
    return dict(json.loads(result.content[0].text))


@pytest.fixture(scope="module")
async def world(engine: AsyncEngine, gateway_url: str) -> dict[str, str]:
    """An agent's key, its task, and a published memory the task can see."""
    org, project = new_tenant()
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    async with engine.begin() as conn:
        task = await new_task(conn, org=org, project=project)
        memory = await add_memory(
            conn,
            task,
            title="Flaky migration test",
            scope=Scope.PROJECT,
            embedding=None,
            memory_type="bug_pattern",
            content="The alembic migration test is flaky when pgserver starts slowly; wait for readiness",
        )
    return {"url": gateway_url, "key": agent.key, "task_id": task.task_id, "citation": memory["citation"]}


@asynccontextmanager
async def mcp_session(world: dict[str, str]) -> AsyncIterator[Client]:
    """`loregate mcp` launched by the SDK's client (entered in the test itself: anyio's scopes must be left
    in the task that entered them, which a pytest fixture's teardown is not)."""
    env = {
        "LOREGATE_URL": world["url"],
        "LOREGATE_API_KEY": world["key"],
        "LOREGATE_TASK_ID": world["task_id"],
    }
    env = {name: value for name, value in env.items() if value}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "api.cli", "mcp"], env=env, cwd=str(repo_root())
    )
    async with Client(params, read_timeout_seconds=120) as client:
        yield client


async def test_mcp_lists_loregate_tools(world: dict[str, str]) -> None:
    async with mcp_session(world) as client:
        listed = await client.list_tools()
        assert {tool.name for tool in listed.tools} == set(TOOL_NAMES)
        assert all(tool.description for tool in listed.tools)


async def test_mcp_append_staging_records_an_entry_once(world: dict[str, str]) -> None:
    async with mcp_session(world) as client:
        args = {
            "kind": "decision",
            "content": "wait for pg readiness",
            "payload": {"retries": 3},
            "idempotency_key": f"mcp-{uuid.uuid4().hex}",
        }
        first = _body(await client.call_tool("append_staging", args))
        again = _body(await client.call_tool("append_staging", args))
        assert first["entries"][0]["replayed"] is False
        assert again["entries"][0] == {**first["entries"][0], "replayed": True}


async def test_mcp_search_finds_published_memory(world: dict[str, str]) -> None:
    async with mcp_session(world) as client:
        found = _body(await client.call_tool("search", {"query": "flaky alembic migration test", "k": 5}))
        assert [r["citation"] for r in found["results"]] == [world["citation"]]
        opened = _body(await client.call_tool("get_memory", {"citation": f"mem:{world['citation']}"}))
        assert opened["memory"]["title"] == "Flaky migration test"


async def test_mcp_refusal_is_a_readable_tool_error(world: dict[str, str]) -> None:
    async with mcp_session(world) as client:
        result = await client.call_tool("search", {"query": "anything", "task_id": "no-such-task"})
        assert result.is_error
        assert "not_found" in result.content[0].text


async def test_mcp_without_an_api_key_says_which_variable_to_set(world: dict[str, str]) -> None:
    async with mcp_session({**world, "key": ""}) as client:
        result = await client.call_tool("search", {"query": "anything"})
    assert result.is_error
    text = result.content[0].text
    assert "unauthenticated: missing Authorization header" in text
    assert text.endswith("(no API key: set LOREGATE_API_KEY in the MCP server's environment)")


async def test_mcp_match_bug_pattern_answers_with_the_signature(world: dict[str, str]) -> None:
    async with mcp_session(world) as client:
        error = "Traceback (most recent call last):\n  File \"/x/y.py\", line 3\nKeyError: 'user_7'"
        found = _body(await client.call_tool("match_bug_pattern", {"error": error}))
        assert found["error_type"] == "KeyError" and found["signature"] == "KeyError: <q>"
        assert isinstance(found["patterns"], list)


async def test_mcp_observe_code_rule_is_refused_to_an_agent(world: dict[str, str]) -> None:
    async with mcp_session(world) as client:
        args = {"memory": f"mem:{world['citation']}", "outcome": "followed_passed"}
        result = await client.call_tool("observe_code_rule", args)
        assert result.is_error
        assert "forbidden" in result.content[0].text


def test_mcp_readme_names_every_tool() -> None:
    """The README's list of MCP tools is the server's: a tool left out there is one nobody finds."""
    readme = (repo_root() / "README.md").read_text(encoding="utf-8")
    start = readme.index("run `loregate mcp` on stdio")
    listed = set(re.findall(r"`([a-z_]+)`", readme[start : readme.index(".mcp.json", start)]))
    assert set(TOOL_NAMES) - listed == set()
