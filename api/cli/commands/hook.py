"""`loregate hook`: wire a coding agent's session into loregate through its CLI's hooks.

Register it for the agent's hook events (docs/agent-hooks.md has settings to paste); each run reads one
event's JSON on stdin (api/client/agent_hooks.py says what each event writes and prints). The session writes
into `--task` (`LOREGATE_TASK_ID`, opened by an orchestrator), or into `session-<session id>`, opened at the
first event when `--org` and `--project` are given and the key may open tasks. At `SessionEnd`, `--promote
SCOPE` (`LOREGATE_HOOK_PROMOTE`) asks for the task's promotion. A hook never breaks the agent's session: a
refusal or an unreachable gateway is one line on stderr and exit code 0.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from api.cli.commands._common import KeyOption, UrlOption

__all__ = ["register", "hook"]


def _say(message: str) -> None:
    print(f"loregate hook: {message}", file=sys.stderr)


def hook(
    event: Annotated[
        str | None, typer.Option("--event", help="The event's name when stdin lacks `hook_event_name`.")
    ] = None,
    task: Annotated[
        str | None,
        typer.Option("--task", envvar="LOREGATE_TASK_ID", help="The task the session writes into."),
    ] = None,
    org: Annotated[
        str | None, typer.Option("--org", envvar="LOREGATE_ORG", help="Org of a session's own task.")
    ] = None,
    project: Annotated[
        str | None,
        typer.Option("--project", envvar="LOREGATE_PROJECT", help="Project of a session's own task."),
    ] = None,
    worktree: Annotated[
        str, typer.Option("--worktree", envvar="LOREGATE_WORKTREE", help="Worktree of a session's own task.")
    ] = "main",
    promote: Annotated[
        str | None,
        typer.Option(
            "--promote", envvar="LOREGATE_HOOK_PROMOTE", help="Scope to promote into at SessionEnd."
        ),
    ] = None,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=64, max=8000)] = 1200,
    url: UrlOption = None,
    api_key: KeyOption = None,
) -> None:
    """Record one coding-agent hook event (JSON on stdin); print context for the agent where it asks."""
    from api.client import LoregateClient, LoregateError, NotFoundError
    from api.client.agent_hooks import HookEvent, context_output, plan_hook, session_task_id

    try:
        parsed = HookEvent.parse(sys.stdin.read(), event)
    except ValueError as err:
        _say(f"stdin is not a hook's JSON object ({err}); nothing recorded")
        return
    plan = plan_hook(parsed)
    task_id = task or session_task_id(parsed.session_id)
    try:
        with LoregateClient(url, api_key) as client:

            def open_own_task() -> bool:
                if task is not None or org is None or project is None:
                    return False
                description = (
                    f"coding-agent session {parsed.session_id} in {parsed.cwd or 'an unknown directory'}"
                )
                try:
                    client.open_task(
                        org=org, project=project, worktree=worktree, description=description, task_id=task_id
                    )
                except LoregateError as err:
                    if err.status_code != 409:  # opened meanwhile by another hook of the session
                        raise
                return True

            if plan.entries:
                try:
                    client.append(task_id, plan.entries)
                except NotFoundError:
                    if not open_own_task():
                        raise
                    client.append(task_id, plan.entries)
            if plan.context_query is not None:
                try:
                    block = client.context(plan.context_query, task_id=task_id, max_tokens=max_tokens)
                except NotFoundError:
                    if not open_own_task():
                        raise
                    block = client.context(plan.context_query, task_id=task_id, max_tokens=max_tokens)
                if block.context:  # nothing published matches: nothing to add
                    print(context_output(parsed.name, block.context))
            if plan.session_ended and promote:
                started = client.start_promotion(task_id, target_scope=promote)
                _say(f"promotion {started.workflow_id} requested into {promote} scope")
    except LoregateError as err:
        _say(f"{err.error}: {err.detail} (task {task_id}); the session goes on")


def register(app: typer.Typer) -> None:
    app.command("hook")(hook)
