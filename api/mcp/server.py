"""`loregate mcp`: an MCP server on stdio, so coding agents (Claude Code, Codex …) use loregate directly.

It is a thin adapter over the HTTP gateway through `api.client`: the agent's API key decides, as for any
other caller, what it may read and write. Configuration comes from the environment the agent's MCP config
sets: `LOREGATE_URL` (default http://127.0.0.1:8080), `LOREGATE_API_KEY`, and optionally
`LOREGATE_TASK_ID`, the task the agent works in (then the tools' `task_id` may be left out).

A refusal from the gateway is a tool error whose text is `<error>: <detail>`, so the model can read why
(the MCP SDK puts `Error executing tool <name>: ` before it). Arguments are held to what the gateway holds a
request to (api/mcp/checked_server.py).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, ConfigDict, Field

from api.client import AsyncLoregateClient, LoregateError
from api.mcp.checked_server import CheckedServer
from api.schemas.search import SearchResultPublic
from governance.approaches import ApproachOutcome
from governance.scopes import EntryKind, Scope, ValidationSource

__all__ = ["TOOL_NAMES", "build_server", "main"]

TOOL_NAMES = (
    "search",
    "get_memory",
    "match_bug_pattern",
    "observe_code_rule",
    "code_rules_from_patch",
    "get_context",
    "append_staging",
    "check_approach",
    "record_approach",
    "validate_memory",
    "memory_feedback",
    "start_promotion",
    "get_promotion",
    "get_promotion_plan",
    "verify_promotion",
    "list_task_promotions",
    "close_task",
    "lift_memories",
    "search_index",
    "get_memories",
    "file_history",
    "get_working_memory",
    "update_working_memory",
)

# progressive disclosure: how many memories `get_memories` opens at once, how long an index line is
MAX_OPENED = 20
INDEX_LINE_CHARS = 120


class HypothesisArg(BaseModel):
    """A hypothesis as a tool argument."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(description="What you believe")
    confidence: float = Field(ge=0.0, le=1.0, description="How firmly, 0..1 (0.9 or more: a decision)")
    evidence_ids: list[int] = Field(default_factory=list, description="Ids of staging entries supporting it")


# an empty task_id is refused, as gRPC refuses it: only one left out falls back to the environment
TaskId = Annotated[
    str | None,
    Field(
        min_length=1, description="The task you work in; defaults to LOREGATE_TASK_ID from the environment"
    ),
]

_INSTRUCTIONS = (
    "loregate is the governed shared memory of the agents on this project. At the start of a task call "
    "get_context; cite memories as [mem:<citation>] and open one with get_memory. Record what you do, decide "
    "and learn with append_staging (it is reviewed before it becomes shared memory). Before retrying a fix, "
    "call check_approach: it tells you if that approach already failed on this task; afterwards say how it "
    "went with record_approach. Rate a memory you used with memory_feedback. Orchestrators start a task's "
    "promotion into shared memory with start_promotion, give its evidence with verify_promotion and follow "
    "it with get_promotion and get_promotion_plan; knowledge that holds more widely than where it was "
    "published is lifted with lift_memories (a human approves where the wider scope needs it). To save "
    "context, search_index lists memories in one line each; open the ones you need with get_memories. "
    "Before editing a file, file_history tells what happened around it. Keep your hypotheses and the files "
    "you work on with update_working_memory and read them back with get_working_memory."
)


def _task(task_id: str | None) -> str:
    chosen = task_id or os.environ.get("LOREGATE_TASK_ID")
    if not chosen:
        raise ToolError("task_id is required (or set LOREGATE_TASK_ID in the MCP server's environment)")
    return chosen


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= INDEX_LINE_CHARS else flat[: INDEX_LINE_CHARS - 1].rstrip() + "…"


def _citation(ref: str) -> str:
    """A memory reference as the HTTP path takes it (`mem:` marks are accepted as the reader gives them)."""
    return ref.removeprefix("mem:")


async def _answer(call: Awaitable[BaseModel]) -> dict[str, Any]:
    """The gateway's answer as the JSON it sent, or a tool error the model can read."""
    try:
        answer = await call
    except LoregateError as exc:
        raise ToolError(f"{exc.error}: {exc.detail}{_setup_hint(exc)}") from exc
    return answer.model_dump(mode="json")


def _setup_hint(exc: LoregateError) -> str:
    """What to fix in the MCP server's environment when the refusal is about its setup, not the call:
    the gateway's own words ("send `Authorization: Bearer …`") name a header an MCP user never writes."""
    if exc.error == "unauthenticated" and not os.environ.get("LOREGATE_API_KEY"):
        return " (no API key: set LOREGATE_API_KEY in the MCP server's environment)"
    return ""


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
    server = CheckedServer(
        name="loregate", instructions=_INSTRUCTIONS, version="0.1.0", lifespan=lifespan, log_level="WARNING"
    )

    @server.tool()
    async def search(
        query: Annotated[str, Field(description="What you want to know, in plain words")],
        task_id: TaskId = None,
        k: Annotated[int, Field(ge=1, le=100, description="How many memories")] = 10,
        types: Annotated[list[str] | None, Field(description="Only these memory types")] = None,
        compact: Annotated[bool, Field(description="Only citation, title, type and score")] = False,
        files: Annotated[list[str] | None, Field(description="Files it is about (a boost)")] = None,
        symbols: Annotated[list[str] | None, Field(description="Functions or classes (a boost)")] = None,
    ) -> dict[str, Any]:
        """Search the shared memory your task can see; each result has a citation, its score and why."""
        answer = gateway().search(
            query, task_id=_task(task_id), k=k, types=types, compact=compact, files=files, symbols=symbols
        )
        return await _answer(answer)

    @server.tool()
    async def search_index(
        query: Annotated[str, Field(description="What you want to know, in plain words")],
        task_id: TaskId = None,
        k: Annotated[int, Field(ge=1, le=100, description="How many memories")] = 20,
        files: Annotated[list[str] | None, Field(description="Files it is about (a boost)")] = None,
        symbols: Annotated[list[str] | None, Field(description="Functions or classes (a boost)")] = None,
    ) -> dict[str, Any]:
        """A compact index of the memories your task can see: id, title, type, trust and one line each.
        Open the ones you need with get_memories."""
        try:
            found = await gateway().search(query, task_id=_task(task_id), k=k, files=files, symbols=symbols)
        except LoregateError as exc:
            raise ToolError(f"{exc.error}: {exc.detail}") from exc
        index = [
            {
                "id": r.citation,
                "title": r.title,
                "type": r.type,
                "trust": round(r.confidence, 2),
                "line": _one_line(r.content),
            }
            for r in found.results
            if isinstance(r, SearchResultPublic)
        ]
        return {"query": query, "results": index}

    @server.tool()
    async def get_memories(
        ids: Annotated[
            list[str],
            Field(min_length=1, max_length=MAX_OPENED, description="`mem:abc123`, `abc123`, or memory ids"),
        ],
    ) -> dict[str, Any]:
        """Memories in full by id (from search_index), each with its source entries and history; one you may
        not read, or that does not exist, is listed under `missing` with the reason."""
        opened: list[dict[str, Any]] = []
        missing: list[dict[str, str]] = []
        for ref in dict.fromkeys(ids):
            try:
                memory = await gateway().memory(_citation(ref))
            except LoregateError as exc:
                if exc.status_code >= 500 or exc.status_code in (401, 429):
                    raise ToolError(f"{exc.error}: {exc.detail}") from exc
                missing.append({"id": ref, "error": f"{exc.error}: {exc.detail}"})
                continue
            opened.append(memory.model_dump(mode="json"))
        return {"memories": opened, "missing": missing}

    @server.tool()
    async def file_history(
        path: Annotated[str, Field(description="The file, as the repository names it (`src/app/auth.py`)")],
        task_id: TaskId = None,
        limit: Annotated[int, Field(ge=1, le=100, description="How many memories")] = 20,
    ) -> dict[str, Any]:
        """What happened around a file: episodes, bug patterns, rules and decisions of tasks that touched
        it, newest first, each cited."""
        return await _answer(gateway().file_history(path, task_id=_task(task_id), limit=limit))

    @server.tool()
    async def get_working_memory(task_id: TaskId = None) -> dict[str, Any]:
        """Your task's working memory: hypotheses, files and symbols, latest errors, decisions and tool
        calls, and counts."""
        return await _answer(gateway().working_memory(_task(task_id)))

    @server.tool()
    async def update_working_memory(
        task_id: TaskId = None,
        hypotheses: Annotated[
            list[HypothesisArg] | None,
            Field(description="What you believe, how firmly (0..1), and the staging entry ids supporting it"),
        ] = None,
        files: Annotated[list[str] | None, Field(description="Files you are working on")] = None,
        symbols: Annotated[
            list[str] | None, Field(description="Functions or classes you are working on")
        ] = None,
    ) -> dict[str, Any]:
        """Keep hypotheses and the files and symbols you work on; a hypothesis held at 0.9 or more is
        recorded once as a decision."""
        call = gateway().update_working_memory(
            _task(task_id),
            hypotheses=[h.model_dump() for h in hypotheses or []],
            files=files or [],
            symbols=symbols or [],
        )
        return await _answer(call)

    @server.tool()
    async def match_bug_pattern(
        error: Annotated[str, Field(description="The error message or traceback you met")],
        task_id: TaskId = None,
        stack: Annotated[str | None, Field(description="The stack trace, if apart from the error")] = None,
        k: Annotated[int, Field(ge=1, le=50, description="How many patterns")] = 5,
    ) -> dict[str, Any]:
        """Bug patterns seen before for this error (same signature first), with their best fixes first."""
        return await _answer(gateway().match_bug_pattern(error, task_id=_task(task_id), stack=stack, k=k))

    @server.tool()
    async def observe_code_rule(
        memory: Annotated[str, Field(description="The code rule: `mem:abc123`, `abc123`, or its id")],
        outcome: Annotated[
            Literal["followed_passed", "violated", "rejected_by_human"],
            Field(description="Followed and the work passed, violated, or rejected by a human"),
        ],
        note: Annotated[str | None, Field(description="Why, for the audit trail")] = None,
    ) -> dict[str, Any]:
        """Report how a code rule fared (orchestrators and humans); its confidence moves by EMA (α 0.2)."""
        return await _answer(gateway().observe_rule(_citation(memory), outcome, note=note))

    @server.tool()
    async def code_rules_from_patch(
        diff: Annotated[str, Field(description="A unified diff (`git diff`)")],
        outcome: Annotated[
            Literal["success", "failure"], Field(description="How the change fared")
        ] = "success",
        task_id: TaskId = None,
        message: Annotated[str | None, Field(description="The commit message or a note")] = None,
    ) -> dict[str, Any]:
        """Stage the code patterns a diff shows (guard clause, error handling, rename...) as rule proposals of
        your task; they reach memory only through its promotion."""
        chosen = task_id or os.environ.get("LOREGATE_TASK_ID")  # none: a task is opened for the patch
        return await _answer(gateway().code_rules_from_patch(diff, outcome, task_id=chosen, message=message))

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
        files: Annotated[
            list[str] | None, Field(description="Files you are about to change (a boost)")
        ] = None,
    ) -> dict[str, Any]:
        """A ready-to-paste [MEMORY CONTEXT] block of relevant memories, each marked [mem:<citation>]; it ends
        with your task's own latest decisions and errors."""
        block = gateway().context(query, task_id=_task(task_id), max_tokens=max_tokens, files=files)
        return await _answer(block)

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
        """Record a log, thought, decision, error, result or insight in your task's staging log. An error
        another task of the project already got past comes back with that task's fix in `hints` (unreviewed:
        another agent's word, not published memory)."""
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
        """Whether this approach already failed on this task, with its failure history and a suggestion;
        `elsewhere` names other tasks of the project where it failed (unreviewed; it never refuses)."""
        return await _answer(gateway().check_approach(_task(task_id), approach, subtask=subtask))

    @server.tool()
    async def record_approach(
        approach: Annotated[str, Field(description="The fix or approach you tried")],
        outcome: Annotated[ApproachOutcome, Field(description="How it ended")],
        task_id: TaskId = None,
        reason: Annotated[str | None, Field(description="Why it failed (kept in its history)")] = None,
        subtask: Annotated[str | None, Field(description="The subtask, if the task has several")] = None,
        idempotency_key: Annotated[
            str | None, Field(description="Repeat it when retrying, so the attempt is counted once")
        ] = None,
    ) -> dict[str, Any]:
        """Record an approach you tried and how it ended, so nobody retries a failed one unknowingly."""
        call = gateway().record_approach(
            _task(task_id),
            approach,
            outcome.value,
            reason=reason,
            subtask=subtask,
            idempotency_key=idempotency_key,
        )
        return await _answer(call)

    @server.tool()
    async def validate_memory(
        citation: Annotated[str, Field(description="`mem:abc123`, `abc123`, or a memory id")],
        source: Annotated[ValidationSource, Field(description="The evidence that the memory is right")],
        reason: Annotated[str | None, Field(description="What showed it")] = None,
        idempotency_key: Annotated[str | None, Field(description="Repeat it when retrying")] = None,
    ) -> dict[str, Any]:
        """Raise a memory's confidence with evidence (counted once per caller and source)."""
        call = gateway().validate(
            _citation(citation), source.value, reason=reason, idempotency_key=idempotency_key
        )
        return await _answer(call)

    @server.tool()
    async def memory_feedback(
        citation: Annotated[str, Field(description="`mem:abc123`, `abc123`, or a memory id")],
        helpful: Annotated[bool, Field(description="Whether the memory helped you")],
        idempotency_key: Annotated[str | None, Field(description="Repeat it when retrying")] = None,
    ) -> dict[str, Any]:
        """Say whether a memory helped (one vote per caller; the latest counts)."""
        call = gateway().feedback(_citation(citation), helpful, idempotency_key=idempotency_key)
        return await _answer(call)

    @server.tool()
    async def start_promotion(
        target_scope: Annotated[Scope, Field(description="Where the task's knowledge should be published")],
        task_id: TaskId = None,
        verification_source: Annotated[
            ValidationSource | None,
            Field(description="Evidence already at hand (else verify_promotion later)"),
        ] = None,
        verification_success: Annotated[bool, Field(description="Whether that evidence is a success")] = True,
    ) -> dict[str, Any]:
        """Start the task's promotion into shared memory (a second start returns the running one)."""
        verification = (
            {"source": verification_source.value, "success": verification_success}
            if verification_source is not None
            else None
        )
        call = gateway().start_promotion(_task(task_id), target_scope.value, verification)
        return await _answer(call)

    @server.tool()
    async def get_promotion(
        task_id: TaskId = None,
        number: Annotated[
            int | None, Field(ge=1, description="Which of the task's promotions (default: the latest)")
        ] = None,
    ) -> dict[str, Any]:
        """Where the task's promotion stands: its state, the first page of its plan, what it published."""
        return await _answer(gateway().promotion(_task(task_id), number))

    @server.tool()
    async def list_task_promotions(task_id: TaskId = None) -> dict[str, Any]:
        """Every promotion of the task, by number, and the promotion entries appended now belong to."""
        return await _answer(gateway().task_promotions(_task(task_id)))

    @server.tool()
    async def close_task(task_id: TaskId = None) -> dict[str, Any]:
        """Close the task: it takes no more entries and no more promotions (orchestrators, humans)."""
        return await _answer(gateway().close_task(_task(task_id)))

    @server.tool()
    async def get_promotion_plan(
        task_id: TaskId = None,
        offset: Annotated[int, Field(ge=0, description="Plan entries to skip")] = 0,
        limit: Annotated[int | None, Field(ge=1, description="Plan entries at most")] = None,
    ) -> dict[str, Any]:
        """A page of the promotion's plan with full contents (`next_offset` continues)."""
        return await _answer(gateway().promotion_plan(_task(task_id), offset, limit))

    @server.tool()
    async def verify_promotion(
        source: Annotated[ValidationSource, Field(description="The evidence: tests passed, PR merged …")],
        task_id: TaskId = None,
        success: Annotated[bool, Field(description="Whether the evidence is a success")] = True,
    ) -> dict[str, Any]:
        """Give the verification evidence the task's promotion waits for (once)."""
        return await _answer(gateway().verify(_task(task_id), source.value, success))

    @server.tool()
    async def lift_memories(
        memories: Annotated[
            list[str],
            Field(min_length=1, max_length=100, description="`mem:abc123`, `abc123`, or memory ids"),
        ],
        target_scope: Annotated[
            Literal["worktree", "project", "org"],
            Field(description="The wider scope they hold in (task → worktree → project → org)"),
        ],
        reason: Annotated[str, Field(description="Why they hold more widely")],
        idempotency_key: Annotated[str | None, Field(description="Repeat it when retrying")] = None,
    ) -> dict[str, Any]:
        """Lift memories to a wider scope: `state` "applied" (done: each item's outcome and new citation) or
        "awaiting_approval" (a change request a human must approve)."""
        lifted = gateway().lift_memories(
            [_citation(m) for m in memories], target_scope, reason=reason, idempotency_key=idempotency_key
        )
        return await _answer(lifted)

    return server


def main() -> None:
    """Serve on stdin/stdout until the client closes them."""
    build_server().run("stdio")


if __name__ == "__main__":
    main()
