"""The MCP progressive-disclosure pair and the working-memory tools through the real `loregate mcp` server.

`search_index` lists memories in one compact line each; `get_memories` opens the chosen ones in full, each
through the gateway's own read check, so a memory of another tenant is listed as missing, never shown.
"""

from __future__ import annotations

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType, Scope
from tests.api.test_mcp import _body, mcp_session
from tests.utils.factories import make_actor, new_tenant
from tests.utils.memory_factories import add_memory, new_task

LONG = "The alembic migration test is flaky when pgserver starts slowly; " + "wait for readiness. " * 20


@pytest.fixture(scope="module")
async def world(engine: AsyncEngine, gateway_url: str) -> dict[str, str]:
    """An agent, its task, a memory it can see, and one of another tenant."""
    org, project = new_tenant()
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    async with engine.begin() as conn:
        task = await new_task(conn, org=org, project=project)
        seen = await add_memory(
            conn,
            task,
            title="Flaky migration test",
            content=LONG,
            embedding=None,
            memory_type="bug_pattern",
            scope=Scope.PROJECT,
            confidence=0.8,
        )
        elsewhere = await new_task(conn)
        hidden = await add_memory(
            conn,
            elsewhere,
            title="Flaky migration test elsewhere",
            content=LONG,
            embedding=None,
            scope=Scope.PROJECT,
        )
    return {
        "url": gateway_url,
        "key": agent.key,
        "task_id": task.task_id,
        "citation": seen["citation"],
        "hidden": hidden["citation"],
    }


async def test_mcp_search_index_is_one_compact_line_per_memory(world: dict[str, str]) -> None:
    async with mcp_session(world) as client:
        found = _body(await client.call_tool("search_index", {"query": "flaky alembic migration test"}))
    assert [r["id"] for r in found["results"]] == [world["citation"]]
    [entry] = found["results"]
    assert set(entry) == {"id", "title", "type", "trust", "line"}
    assert entry["type"] == "bug_pattern" and entry["trust"] == 0.8
    assert entry["line"].startswith("The alembic migration test is flaky") and len(entry["line"]) <= 120


async def test_mcp_get_memories_opens_in_full_what_the_caller_may_read_only(world: dict[str, str]) -> None:
    async with mcp_session(world) as client:
        args = {"ids": [f"mem:{world['citation']}", world["hidden"], "mem:nosuch00"]}
        opened = _body(await client.call_tool("get_memories", args))
        too_many = await client.call_tool("get_memories", {"ids": [world["citation"]] * 21})
    assert [m["memory"]["citation"] for m in opened["memories"]] == [world["citation"]]
    assert opened["memories"][0]["memory"]["content"] == LONG  # in full
    assert [m["id"] for m in opened["missing"]] == [world["hidden"], "mem:nosuch00"]
    assert all(m["error"].startswith("not_found") for m in opened["missing"])
    assert too_many.is_error


async def test_mcp_working_memory_tools_keep_hypotheses_and_files(world: dict[str, str]) -> None:
    async with mcp_session(world) as client:
        args = {
            "hypotheses": [{"text": "pgserver starts slowly on CI", "confidence": 0.5}],
            "files": ["tests/test_migrations.py"],
        }
        kept = _body(await client.call_tool("update_working_memory", args))
        read = _body(await client.call_tool("get_working_memory", {}))
        history = _body(await client.call_tool("file_history", {"path": "tests/test_migrations.py"}))
        block = _body(
            await client.call_tool(
                "get_context", {"query": "anything", "files": ["tests/test_migrations.py"]}
            )
        )
    assert [h["text"] for h in kept["hypotheses"]] == ["pgserver starts slowly on CI"]
    assert [f["value"] for f in read["files"]] == ["tests/test_migrations.py"]
    # the memory this very task published now belongs to the file's history
    assert [(i["citation"], i["via"]) for i in history["items"]] == [(world["citation"], "task")]
    # the file leads to that memory although the query names nothing of it
    assert world["citation"] in block["citations"]


async def test_mcp_code_rules_from_patch_stages_into_the_task(world: dict[str, str]) -> None:
    diff = "--- a/jobs/run.py\n+++ b/jobs/run.py\n@@ -1,2 +1,3 @@\n def run(job):\n"
    diff += '+    logger.info("job %s", job.id)\n     job.start()\n'
    async with mcp_session(world) as client:
        made = _body(await client.call_tool("code_rules_from_patch", {"diff": diff, "message": "log jobs"}))
        refused = await client.call_tool("code_rules_from_patch", {"diff": "no diff at all"})
    assert made["task_id"] == world["task_id"] and made["opened"] is False
    assert [(p["category"], p["kind"]) for p in made["proposals"]] == [("logging", "rule")]
    assert refused.is_error
