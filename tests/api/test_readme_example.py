"""The README's Python examples run as written against a real gateway (only the tenant is made unique)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import re
import uuid
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from api.client import AsyncLoregateClient
from api.grpc.server import running_grpc_server
from governance.config import Settings
from governance.scopes import ActorType
from tests.utils.factories import make_actor
from tests.utils.settings_table import README


def _python_examples() -> tuple[str, str]:
    """The agents section's blocking example and its asyncio one."""
    section = README.read_text().split("## Using it from agents and orchestrators", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)\n```", section, flags=re.S)
    blocks = [b for b in blocks if "pb2_grpc" not in b]
    assert len(blocks) == 2, "the README's agents section should hold a blocking and an asyncio example"
    blocking, asyncio_ = blocks
    assert "LoregateClient(" in blocking and "AsyncLoregateClient(" in asyncio_
    return blocking, asyncio_


def _run(example: str, gateway_url: str, org: str, namespace: dict[str, Any]) -> str:
    """Run an example (in a thread: off the event loop the gateway's test server shares); what it printed."""
    code = example.replace('"http://127.0.0.1:8080"', repr(gateway_url)).replace('"acme"', repr(org))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102
    return out.getvalue()


async def _entries(gateway_url: str, headers: dict[str, str], task_id: str) -> list[tuple[str, str]]:
    async with httpx.AsyncClient(base_url=gateway_url, headers=headers) as client:
        entries = (await client.get(f"/v1/tasks/{task_id}/entries")).json()["entries"]
    return [(e["kind"], e["content"]) for e in entries]


async def test_readme_python_example_opens_a_task_writes_and_reads_context(
    engine: AsyncEngine, gateway_url: str
) -> None:
    org, project = f"acme-{uuid.uuid4().hex[:8]}", "shop"
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    namespace: dict[str, Any] = {"api_key": orchestrator.key}
    printed = await asyncio.to_thread(_run, _python_examples()[0], gateway_url, org, namespace)
    task_id = namespace["task"].task_id
    assert await _entries(gateway_url, orchestrator.headers, task_id) == [
        ("decision", "auth.session: cookies, not JWT")
    ]
    # a fresh tenant has no published memory yet: the block holds the task's own short-term section only
    assert "### This task so far\n- decision (seq 1): auth.session: cookies, not JWT\n" in printed
    assert "[mem:" not in printed.replace("[mem:<id>]", "")


async def test_readme_async_example_checks_records_searches_and_reads_back(
    engine: AsyncEngine, gateway_url: str
) -> None:
    org, project = f"acme-{uuid.uuid4().hex[:8]}", "shop"
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    async with AsyncLoregateClient(gateway_url, orchestrator.key) as lore:
        task = await lore.open_task(org=org, project=project, worktree="main", description="login loop")
    namespace: dict[str, Any] = {"api_key": agent.key, "task_id": task.task_id}
    printed = await asyncio.to_thread(_run, _python_examples()[1], gateway_url, org, namespace)
    said = "login loop: the cookie is dropped on redirect"
    assert await _entries(gateway_url, agent.headers, task.task_id) == [("error", said)]
    # nothing published in a fresh tenant yet: no search hits; the entry read back; the refusal typed
    assert printed.splitlines() == [f"1 error {said}", "404 not_found"]


def _grpc_example() -> str:
    """The agents section's gRPC example."""
    section = README.read_text().split("## Using it from agents and orchestrators", 1)[1].split("\n## ", 1)[0]
    (block,) = [b for b in re.findall(r"```python\n(.*?)\n```", section, flags=re.S) if "pb2_grpc" in b]
    return block


async def test_readme_grpc_example_lists_a_task_s_promotions(
    engine: AsyncEngine, gateway_url: str, settings: Settings
) -> None:
    org, project = f"acme-{uuid.uuid4().hex[:8]}", "shop"
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    async with AsyncLoregateClient(gateway_url, orchestrator.key) as lore:
        await lore.open_task(org=org, project=project, worktree="main", description="x", task_id="t-1")
    async with running_grpc_server(settings, host="127.0.0.1", port=0) as port:
        code = _grpc_example().replace('"127.0.0.1:50051"', repr(f"127.0.0.1:{port}"))
        namespace: dict[str, Any] = {"key": orchestrator.key}
        printed = await asyncio.to_thread(_exec_printing, code, namespace)
    answer = json.loads(printed)
    assert answer["task_id"] == "t-1" and answer["promotions"] == []


def _exec_printing(code: str, namespace: dict[str, Any]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102
    return out.getvalue()
