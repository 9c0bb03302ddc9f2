"""Coding-agent hooks: what one hook event of an agent session becomes in loregate.

Coding-agent CLIs run a command at fixed points of a session and hand it one JSON object on stdin
(`hook_event_name`, `session_id`, `cwd`, and per event `prompt`, `tool_name`, `tool_input`, `tool_response`,
`tool_use_id`, `source`, `reason`). `loregate hook` (api/cli/commands/hook.py) reads it and lets this module
decide, without I/O:

| event | written to the task's staging | printed for the agent |
|---|---|---|
| `SessionStart` | — | the context block for the session's task |
| `UserPromptSubmit` | the prompt (`log`, role user) | the context block for the prompt |
| `PreToolUse` | — | — |
| `PostToolUse` | the tool's use (`tool_output`; `error` when it failed), the files it touched | — |
| `PostToolUseFailure` | the failure (`error`) | — |
| `Stop` / `SubagentStop` | — | — |
| `SessionEnd` | the end (`result`, with its reason) | — |

Every entry carries an idempotency key made from the session and the event (the tool use's id where there is
one), so a hook the agent runs twice writes once. Contents are cut to `MAX_CONTENT` characters; secrets and
`<private>` spans are the gate's business (staging keeps them for audit, nothing private is promoted).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["HookEvent", "HookPlan", "plan_hook", "session_task_id", "MAX_CONTENT", "context_output"]

MAX_CONTENT = 8_000
_TASK_ID_CHARS = re.compile(r"[^A-Za-z0-9._:-]")
# tool_input fields naming a file (Write, Edit, MultiEdit, Read, NotebookEdit …)
_FILE_FIELDS = ("file_path", "notebook_path", "path")


@dataclass(frozen=True)
class HookEvent:
    """The fields of a hook's stdin this module reads (the rest is ignored)."""

    name: str
    session_id: str
    cwd: str = ""
    prompt: str = ""
    tool_name: str = ""
    tool_input: dict[str, Any] = field(default_factory=dict)
    tool_response: Any = None
    tool_use_id: str = ""
    source: str = ""
    reason: str = ""
    error: str = ""

    @classmethod
    def parse(cls, raw: str, name: str | None = None) -> HookEvent:
        """Read a hook's stdin (`name` overrides `hook_event_name`); ValueError when not a JSON object."""
        try:
            data = json.loads(raw or "{}")
        except RecursionError as err:  # the parser recurses per level; a hook's input is a few deep
            raise ValueError("nested too deeply to parse") from err
        if not isinstance(data, dict):
            raise ValueError("a hook's input is one JSON object")
        tool_input = data.get("tool_input")
        return cls(
            name=str(name or data.get("hook_event_name") or ""),
            session_id=str(data.get("session_id") or ""),
            cwd=str(data.get("cwd") or ""),
            prompt=str(data.get("prompt") or ""),
            tool_name=str(data.get("tool_name") or ""),
            tool_input=tool_input if isinstance(tool_input, dict) else {},
            tool_response=data.get("tool_response"),
            tool_use_id=str(data.get("tool_use_id") or ""),
            source=str(data.get("source") or ""),
            reason=str(data.get("reason") or ""),
            error=str(data.get("error") or ""),
        )


@dataclass(frozen=True)
class HookPlan:
    """What to do for one event: entries to append, and a query whose context block the agent gets."""

    entries: list[dict[str, Any]] = field(default_factory=list)
    context_query: str | None = None
    session_ended: bool = False


def session_task_id(session_id: str) -> str:
    """The task a session writes into when none is given: `session-<id>` in task-id characters."""
    cleaned = _TASK_ID_CHARS.sub("-", session_id)[:100].strip("-.:") or "unknown"
    return f"session-{cleaned}"


def _cut(text: str) -> str:
    return text if len(text) <= MAX_CONTENT else text[: MAX_CONTENT - 1] + "…"


def _key(event: HookEvent, *parts: str) -> str:
    digest = hashlib.sha256("\x1f".join([event.session_id, event.name, *parts]).encode()).hexdigest()
    return f"hook-{digest[:40]}"


def _files(tool_input: dict[str, Any]) -> list[str]:
    return [str(tool_input[f]) for f in _FILE_FIELDS if isinstance(tool_input.get(f), str)]


def _failed(response: Any) -> bool:
    """Whether a tool's response says it failed (an error flag, a non-zero exit, an interrupted run)."""
    if not isinstance(response, dict):
        return False
    if response.get("is_error") is True or response.get("success") is False or response.get("interrupted"):
        return True
    code = response.get("exit_code", response.get("exitCode", response.get("returncode")))
    return isinstance(code, int) and code != 0


def _tool_summary(event: HookEvent) -> str:
    """One readable line for a tool's use: the command, or the file, and what came back."""
    tool_input = event.tool_input
    if isinstance(tool_input.get("command"), str):
        head = f"{event.tool_name}: {tool_input['command']}"
    elif _files(tool_input):
        head = f"{event.tool_name} {', '.join(_files(tool_input))}"
    else:
        head = f"{event.tool_name}: {json.dumps(tool_input, ensure_ascii=False, sort_keys=True)[:500]}"
    response = event.tool_response
    if isinstance(response, dict):
        shown = (
            response.get("stderr") if _failed(response) and response.get("stderr") else response.get("stdout")
        )
        if isinstance(shown, str) and shown.strip():
            return f"{head}\n{shown.strip()}"
    elif isinstance(response, str) and response.strip():
        return f"{head}\n{response.strip()}"
    return head


def _tool_payload(event: HookEvent) -> dict[str, Any]:
    payload: dict[str, Any] = {"hook": event.name, "tool": event.tool_name}
    if event.tool_use_id:
        payload["tool_use_id"] = event.tool_use_id
    if _files(event.tool_input):
        payload["files"] = _files(event.tool_input)
    if isinstance(event.tool_input.get("command"), str):
        payload["command"] = _cut(event.tool_input["command"])
    return payload


def plan_hook(event: HookEvent) -> HookPlan:
    """What one hook event writes and asks; unknown events do nothing."""
    name = event.name
    if name == "SessionStart":
        return HookPlan(
            context_query=f"starting work in {event.cwd.rstrip('/').rsplit('/', 1)[-1] or 'this project'}"
        )
    if name == "UserPromptSubmit" and event.prompt.strip():
        entry = {
            "kind": "log",
            "content": _cut(event.prompt),
            "payload": {"hook": name, "role": "user"},
            "idempotency_key": _key(event, event.prompt),
        }
        return HookPlan(entries=[entry], context_query=event.prompt[:2000])
    if name in ("PostToolUse", "PostToolUseFailure") and event.tool_name:
        failed = name == "PostToolUseFailure" or _failed(event.tool_response)
        content = _tool_summary(event)
        if name == "PostToolUseFailure" and event.error:
            content = f"{content}\n{event.error}"
        entry = {
            "kind": "error" if failed else "tool_output",
            "content": _cut(content),
            "payload": _tool_payload(event),
            "idempotency_key": _key(event, event.tool_use_id or content),
        }
        return HookPlan(entries=[entry])
    if name == "SessionEnd":
        entry = {
            "kind": "result",
            "content": f"session ended ({event.reason or 'no reason given'})",
            "payload": {"hook": name, "reason": event.reason},
            "idempotency_key": _key(event),
        }
        return HookPlan(entries=[entry], session_ended=True)
    return HookPlan()


def context_output(event_name: str, block: str) -> str:
    """What the hook prints so the agent's CLI adds `block` to the model's context."""
    return json.dumps({"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": block}})
