"""`loregate mcp`: an MCP server on stdio, so coding agents (Claude Code, Codex …) use loregate directly.

It is a thin adapter over the HTTP gateway through `api.client`: the agent's API key decides, as for any
other caller, what it may read and write. Configuration comes from the environment the agent's MCP config
sets: `LOREGATE_URL` (default http://127.0.0.1:8080), `LOREGATE_API_KEY`, and optionally
`LOREGATE_TASK_ID`, the task the agent works in (then the tools' `task_id` may be left out).

A refusal from the gateway is a tool error whose text is `<error>: <detail>`, so the model can read why.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from api.client import AsyncLoregateClient, LoregateError
from governance.scopes import EntryKind

__all__ = ["TOOL_NAMES", "build_server", "main"]

TOOL_NAMES = ("search", "get_memory", "get_context", "append_staging", "check_approach")

TaskId = Annotated[
    str | None, Field(description="The task you work in; defaults to LOREGATE_TASK_ID from the environment")
]

_INSTRUCTIONS = (
    "loregate is the governed shared memory of the agents on this project. At the start of a task call "
    "get_context; cite memories as [mem:<citation>] and open one with get_memory. Record what you do, decide "
    "and learn with append_staging (it is reviewed before it becomes shared memory). Before retrying a fix, "
    "call check_approach: it tells you if that approach already failed on this task."
)


def _task(task_id: str | None) -> str:
    chosen = task_id or os.environ.get("LOREGATE_TASK_ID")
    if not chosen:
        raise ToolError("task_id is required (or set LOREGATE_TASK_ID in the MCP server's environment)")
    return chosen


async def _answer(call: Awaitable[dict[str, Any]]) -> dict[str, Any]:
    """The gateway's answer, or a tool error the model can read."""
    try:
        return await call
    except LoregateError as exc:
        raise ToolError(f"{exc.error}: {exc.detail}") from exc


def build_server(client: AsyncLoregateClient | None = None) -> MCPServer:
    """The MCP server with loregate's tools, over `client` (default: one configured from the environment)."""
    made: dict[str, AsyncLoregateClient] = {}  # the client this server built (and so must close)

    def gateway() -> AsyncLoregateClient:
        if client is not None:
            return client
        if "client" not in made:
            made["client"] = AsyncLoregateClient()  # LOREGATE_URL and LOREGATE_API_KEY
        return made["client"]

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if "client" in made:
                await made.pop("client").aclose()

    # stderr is the agent's log: warnings only, not a line per HTTP request
    server = MCPServer(
        name="loregate", instructions=_INSTRUCTIONS, version="0.1.0", lifespan=lifespan, log_level="WARNING"
    )

    @server.tool()
    async def search(
        query: Annotated[str, Field(description="What you want to know, in plain words")],
        task_id: TaskId = None,
        k: Annotated[int, Field(ge=1, le=100, description="How many memories")] = 10,
        types: Annotated[list[str] | None, Field(description="Only these memory types")] = None,
        compact: Annotated[bool, Field(description="Only citation, title, type and score")] = False,
    ) -> dict[str, Any]:
        """Search the shared memory your task can see; each result has a citation, its score and why."""
        answer = gateway().search(query, task_id=_task(task_id), k=k, types=types, compact=compact)
        return await _answer(answer)

    @server.tool()
    async def get_memory(
        citation: Annotated[str, Field(description="`mem:abc123`, `abc123`, or a memory id")],
    ) -> dict[str, Any]:
        """One memory in full, with the staging entries it came from and its supersession history."""
        return await _answer(gateway().memory(citation))

    @server.tool()
    async def get_context(
        query: Annotated[str, Field(description="What you are about to work on")],
        task_id: TaskId = None,
        max_tokens: Annotated[int | None, Field(ge=1, description="Budget of the block")] = None,
    ) -> dict[str, Any]:
        """A ready-to-paste [MEMORY CONTEXT] block of relevant memories, each marked [mem:<citation>]."""
        return await _answer(gateway().context(query, task_id=_task(task_id), max_tokens=max_tokens))

    @server.tool()
    async def append_staging(
        kind: Annotated[EntryKind, Field(description="What this entry is")],
        content: Annotated[str, Field(description="The text to record")],
        task_id: TaskId = None,
        payload: Annotated[dict[str, Any] | None, Field(description="Structured details (JSON)")] = None,
        idempotency_key: Annotated[
            str | None, Field(description="Repeat it when retrying, so the entry is stored once")
        ] = None,
    ) -> dict[str, Any]:
        """Record a log, thought, decision, error, result or insight in your task's staging log."""
        entry: dict[str, Any] = {"kind": kind.value, "content": content}
        if payload is not None:
            entry["payload"] = payload
        if idempotency_key is not None:
            entry["idempotency_key"] = idempotency_key
        return await _answer(gateway().append(_task(task_id), entry))

    @server.tool()
    async def check_approach(
        approach: Annotated[str, Field(description="The fix or approach you are about to try")],
        task_id: TaskId = None,
        subtask: Annotated[str | None, Field(description="The subtask, if the task has several")] = None,
    ) -> dict[str, Any]:
        """Whether this approach already failed on this task, with its failure history and a suggestion."""
        return await _answer(gateway().check_approach(_task(task_id), approach, subtask=subtask))

    return server


def main() -> None:
    """Serve on stdin/stdout until the client closes them."""
    build_server().run("stdio")


if __name__ == "__main__":
    main()
