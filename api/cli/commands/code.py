"""`loregate history PATH`, `loregate working-memory TASK` and `loregate stats`: recall by file, a task's
working memory, and the project in numbers.

Both talk to a running gateway through the client (`LOREGATE_URL`, `LOREGATE_API_KEY`), as an agent would;
`--json` prints the gateway's answer unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from api.cli.commands._common import JsonOption, KeyOption, UrlOption, console
from api.cli.commands._common import api_client as _client
from api.cli.commands._common import print_json as _print_json

if TYPE_CHECKING:  # the help stays light: the schema loads with the command that shows it
    from api.schemas.working_memory import WorkingMemoryPublic

__all__ = ["register", "history", "working_memory", "stats", "knowledge"]


def history(
    path: Annotated[str, typer.Argument(help="The file, as the repository names it (src/app/auth.py).")],
    task: Annotated[str, typer.Option("--task", "-t", help="The reader's task (fixes what it can see).")],
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=100, help="How many memories.")] = 20,
    url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """What happened around a file: episodes, bug patterns, rules and decisions, newest first, cited."""
    with _client(url, api_key) as client:
        answer = client.file_history(path, task_id=task, limit=limit)
    if as_json:
        _print_json(answer)
        return
    if not answer.items:
        console.print(f"nothing recorded around {escape(answer.path)}", highlight=False)
        return
    table = Table(title=f"around {escape(answer.path)} (newest first)", title_justify="left")
    for name in ("date", "citation", "type", "outcome", "task type", "errors", "via", "title"):
        table.add_column(name)
    for item in answer.items:
        outcome = "" if item.success is None else ("succeeded" if item.success else "failed")
        table.add_row(
            item.created_at.date().isoformat(),
            f"mem:{item.citation}",
            item.type,
            outcome,
            item.task_type or "",
            escape(", ".join(item.error_types)),
            item.via,
            escape(item.title),
        )
    console.print(table)


def _show(memory: WorkingMemoryPublic) -> None:
    stats = memory.statistics
    kinds = ", ".join(f"{k} {n}" for k, n in stats.by_kind.items()) or "none"
    console.print(
        f"[bold]{escape(memory.task_id)}[/]: {stats.entries} entries ({escape(kinds)}), "
        f"{stats.tool_calls} tool calls, {stats.files} files, {stats.symbols} symbols",
        highlight=False,
    )
    for h in memory.hypotheses:
        decided = f" → decision #{h.decision_entry_id}" if h.decision_entry_id else ""
        console.print(f"  hypothesis {h.confidence:.2f}: {escape(h.text)}{decided}", highlight=False)
    for label, rows in (("file", memory.files), ("symbol", memory.symbols)):
        for loc in rows:
            mark = "tracked, " if loc.tracked else ""
            console.print(
                f"  {label} {escape(loc.value)} ({mark}{loc.touches} touches, {loc.error_touches} in errors)",
                highlight=False,
            )
    for label, entries in (
        ("error", memory.recent_errors),
        ("decision", memory.recent_decisions),
        ("tool", memory.recent_tool_calls),
    ):
        for e in entries:
            line = " ".join(e.content.split())[:120]
            console.print(f"  {label} #{e.seq}: {escape(line)}", highlight=False)


def working_memory(
    task: Annotated[str, typer.Argument(help="The task.")],
    hypothesis: Annotated[
        str | None, typer.Option("--hypothesis", help="Set a hypothesis (with --confidence).")
    ] = None,
    confidence: Annotated[
        float, typer.Option("--confidence", min=0.0, max=1.0, help="How firmly (0.9 or more: a decision).")
    ] = 0.5,
    evidence: Annotated[
        list[int] | None, typer.Option("--evidence", help="A staging entry id supporting it (repeatable).")
    ] = None,
    files: Annotated[list[str] | None, typer.Option("--file", help="Track a file (repeatable).")] = None,
    symbols: Annotated[
        list[str] | None, typer.Option("--symbol", help="Track a symbol (repeatable).")
    ] = None,
    url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """A task's working memory; with options, set a hypothesis or track files and symbols first."""
    with _client(url, api_key) as client:
        if hypothesis is not None or files or symbols:
            hypotheses = (
                [{"text": hypothesis, "confidence": confidence, "evidence_ids": evidence or []}]
                if hypothesis is not None
                else []
            )
            answer = client.update_working_memory(
                task, hypotheses=hypotheses, files=files or [], symbols=symbols or []
            )
        else:
            answer = client.working_memory(task)
    if as_json:
        _print_json(answer)
        return
    _show(answer)


def knowledge(
    project: Annotated[str, typer.Argument(help="A project of your org.")],
    url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """The project's hotspots and statistics as the scheduled workflow last computed them."""
    with _client(url, api_key) as client:
        answer = client.project_knowledge(project)
    if as_json:
        _print_json(answer)
        return
    rate = "–" if answer.success_rate is None else f"{answer.success_rate:.0%}"
    computed = answer.model_dump(mode="json")["computed_at"]
    console.print(
        f"[bold]{escape(answer.org)}/{escape(answer.project)}[/] (computed {computed}): "
        f"{answer.tasks} tasks, {answer.episodes} episodes, {answer.succeeded} succeeded, "
        f"success rate {rate}",
        highlight=False,
    )
    types = ", ".join(f"{t.task_type} {t.succeeded}/{t.episodes}" for t in answer.task_types)
    console.print(f"task types: {escape(types) or '–'}", highlight=False)
    hot = Table(title="hotspots", title_justify="left")
    for name in ("file", "failed episodes", "episodes", "errors", "lines changed"):
        hot.add_column(name)
    for h in answer.hotspots:
        hot.add_row(
            escape(h.path), str(h.failed_episodes), str(h.episodes), str(h.errors), str(h.lines_changed)
        )
    console.print(hot)
    for title, rows in (("churn", answer.churn), ("most touched", answer.most_touched)):
        table = Table(title=title, title_justify="left")
        for name in ("file", "episodes", "lines changed"):
            table.add_column(name)
        for f in rows:
            table.add_row(escape(f.path), str(f.episodes), str(f.lines_changed))
        console.print(table)
    errors = Table(title="most common errors", title_justify="left")
    for name in ("error type", "count"):
        errors.add_column(name)
    for e in answer.common_errors:
        errors.add_row(escape(e.error_type), str(e.count))
    console.print(errors)
    bugs = Table(title="bug patterns", title_justify="left")
    for name in ("citation", "title", "occurrences"):
        bugs.add_column(name)
    for b in answer.bug_patterns:
        bugs.add_row(f"mem:{b.citation}", escape(b.title), str(b.occurrences))
    console.print(bugs)


def stats(
    task: Annotated[str, typer.Option("--task", "-t", help="A task of the project (fixes what it can see).")],
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=100, help="Rows per list.")] = 10,
    url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """The project in numbers: tasks, success rate, most-touched files, hotspots, most common errors."""
    with _client(url, api_key) as client:
        answer = client.project_stats(task_id=task, limit=limit)
    if as_json:
        _print_json(answer)
        return
    rate = "–" if answer.success_rate is None else f"{answer.success_rate:.0%}"
    console.print(
        f"[bold]{escape(answer.org)}/{escape(answer.project)}[/]: {answer.tasks} tasks, "
        f"{answer.episodes} episodes, success rate {rate}",
        highlight=False,
    )
    for title, rows in (("most touched", answer.most_touched), ("hotspots", answer.hotspots)):
        table = Table(title=title, title_justify="left")
        for name in ("file", "tasks", "failed", "errors"):
            table.add_column(name)
        for f in rows:
            table.add_row(escape(f.path), str(f.tasks), str(f.failed_tasks), str(f.error_touches))
        console.print(table)
    for e in answer.common_errors:
        console.print(f"  mem:{e.citation} ×{e.occurrences} {escape(e.signature)}", highlight=False)


_COMMANDS: tuple[tuple[str, Callable[..., None]], ...] = (
    ("history", history),
    ("stats", stats),
    ("knowledge", knowledge),
    ("working-memory", working_memory),
)


def register(app: typer.Typer) -> None:
    for name, command in _COMMANDS:
        app.command(name)(command)
