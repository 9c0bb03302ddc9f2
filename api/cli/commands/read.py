"""`loregate search`, `loregate show` and `loregate context`: the read path for people, through the client.

They talk to a running gateway (`LOREGATE_URL`, default http://127.0.0.1:8080) with `LOREGATE_API_KEY`,
exactly as an agent would, so what a person sees is what the agent gets. `--json` prints the gateway's
answer unchanged, for scripts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from api.cli.commands._common import JsonOption, KeyOption, UrlOption, console
from api.cli.commands._common import api_client as _client
from api.cli.commands._common import print_json as _print_json

if TYPE_CHECKING:
    from api.schemas.search import CompactResultPublic, MemoryDetailPublic, SearchResultPublic

__all__ = ["register", "search", "show", "context"]


def _score(value: Any) -> str:
    return f"{float(value):.3f}" if value is not None else "–"


def search(
    query: Annotated[str, typer.Argument(help="What to look for, in plain words.")],
    task: Annotated[str, typer.Option("--task", "-t", help="The reader's task (fixes what it can see).")],
    k: Annotated[int | None, typer.Option("--k", "-k", min=1, help="How many results.")] = None,
    types: Annotated[
        list[str] | None, typer.Option("--type", help="Only this memory type (repeatable).")
    ] = None,
    intent: Annotated[str | None, typer.Option(help="Use this intent instead of detecting it.")] = None,
    history: Annotated[
        bool, typer.Option("--history", help="Include superseded and expired memories.")
    ] = False,
    url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Search published memory from inside a task; shows each score and its three parts."""
    with _client(url, api_key) as client:
        answer = client.search(query, task_id=task, k=k, types=types, intent=intent, include_history=history)
    if as_json:
        _print_json(answer)
        return
    routed = ", ".join(answer.types or []) or "all types"
    preferred = ", ".join(answer.preferred_types or [])
    weighted = f", weighting {preferred}" if preferred else ""
    table = Table(title=f"{escape(query)}  [dim](intent {answer.intent}: {routed}{weighted})[/]")
    for name, justify in (
        ("#", "right"),
        ("citation", "left"),
        ("type", "left"),
        ("scope", "left"),
        ("title", "left"),
        ("score", "right"),
        ("sim", "right"),
        ("rec", "right"),
        ("imp", "right"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    from api.schemas.search import SearchResultPublic

    results: Sequence[SearchResultPublic | CompactResultPublic] = answer.results
    for rank, hit in enumerate(results, start=1):
        # a compact result has no scope and no score parts
        parts = hit.score_parts if isinstance(hit, SearchResultPublic) else None
        table.add_row(
            str(rank),
            f"mem:{hit.citation}",
            hit.type,
            hit.scope if isinstance(hit, SearchResultPublic) else "",
            escape(hit.title),
            _score(hit.score),
            _score(parts.similarity if parts else None),
            _score(parts.recency if parts else None),
            _score(parts.importance if parts else None),
        )
    if not answer.results:
        console.print("no memories match", style="yellow")
        return
    console.print(table)
    console.print("open one with [bold]loregate show mem:<citation>[/]", style="dim")


def _memory_panel(memory: MemoryDetailPublic) -> Panel:
    shown = memory.model_dump(mode="json")  # values as the gateway's JSON spells them
    facts = Table.grid(padding=(0, 2))
    facts.add_column(style="dim")
    facts.add_column()
    for label, key in (
        ("type", "memory_type"),
        ("scope", "scope_key"),
        ("canonical key", "canonical_key"),
        ("confidence", "confidence"),
        ("importance", "importance"),
        ("validated by", "validation_source"),
        ("version", "version"),
        ("created", "created_at"),
        ("updated", "updated_at"),
        ("deprecated", "deprecated_at"),
        ("expires", "expires_at"),
        ("retrievals", "retrieval_count"),
    ):
        value = shown.get(key)
        if value is not None:
            facts.add_row(label, escape(str(value)))
    body = Table.grid()
    body.add_row(escape(memory.content))
    body.add_row("")
    body.add_row(facts)
    return Panel(body, title=f"[bold]mem:{memory.citation}[/]  {escape(memory.title)}", title_align="left")


def show(
    citation: Annotated[str, typer.Argument(help="`mem:abc123`, `abc123` or a memory id.")],
    url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """A memory in full, the staging entries it came from, and what it superseded."""
    with _client(url, api_key) as client:
        answer = client.memory(citation)
    if as_json:
        _print_json(answer)
        return
    console.print(_memory_panel(answer.memory))
    if answer.episode is not None:
        console.print(_episode_table(answer.episode))
    provenance = answer.provenance
    if provenance:
        table = Table(title="provenance (staging entries)", title_justify="left")
        for name in ("task", "seq", "kind", "actor", "content"):
            table.add_column(name)
        for entry in provenance:
            table.add_row(
                escape(entry.task_id),
                str(entry.seq),
                entry.kind,
                escape(entry.actor_id),
                escape(entry.content),
            )
        console.print(table)
    history = answer.history
    if len(history) > 1:
        table = Table(title="supersession history (oldest first)", title_justify="left")
        for name in ("citation", "version", "title", "deprecated"):
            table.add_column(name)
        for version in history:
            deprecated = version.model_dump(mode="json")["deprecated_at"]
            table.add_row(
                f"mem:{version.citation}", str(version.version), escape(version.title), deprecated or ""
            )
        console.print(table)


def _episode_table(episode: Any) -> Table:
    """An episode's structured fields, one row each (docs/episodes.md)."""
    table = Table(title="episode", title_justify="left", show_header=False)
    table.add_column("field")
    table.add_column("value")
    tests = episode.tests
    rows = [
        ("task type", f"{episode.task_type} ({episode.task_type_source})"),
        ("outcome", episode.outcome),
        (
            "tests",
            f"{tests.passed} passed, {tests.failed} failed of {tests.run} ({tests.framework or '?'}), "
            f"{episode.test_runs} run(s)"
            if tests
            else "none reported",
        ),
        ("lines", f"+{episode.lines_added} -{episode.lines_removed}"),
        ("tokens", "—" if episode.tokens is None else str(episode.tokens)),
        ("duration", "—" if episode.duration_ms is None else f"{episode.duration_ms} ms"),
        ("tools", ", ".join(f"{t.tool} x{t.calls}" for t in episode.tools) or "—"),
        ("error types", ", ".join(f"{e.error_type} x{e.count}" for e in episode.error_types) or "—"),
        (
            "files",
            "\n".join(
                f"{f.path} (+{f.lines_added} -{f.lines_removed}{', tracked' if f.tracked else ''})"
                for f in episode.files
            )
            or "—",
        ),
        ("symbols", ", ".join(episode.symbols) or "—"),
        ("pivots", "\n".join(f"{p.from_} -> {p.to} ({p.why})" for p in episode.pivots) or "—"),
        ("decided hypotheses", "\n".join(episode.decided_hypotheses) or "—"),
    ]
    for name, value in rows:
        table.add_row(name, escape(value))
    return table


def context(
    query: Annotated[str, typer.Argument(help="What the agent is about to work on.")],
    task: Annotated[str, typer.Option("--task", "-t", help="The reader's task.")],
    max_tokens: Annotated[int | None, typer.Option(min=1, help="Budget of the block.")] = None,
    raw: Annotated[bool, typer.Option("--raw", help="Only the block, to paste or pipe.")] = False,
    url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """The `[MEMORY CONTEXT]` block an agent would get, with its citations and token count."""
    with _client(url, api_key) as client:
        answer = client.context(query, task_id=task, max_tokens=max_tokens)
    if as_json:
        _print_json(answer)
        return
    if raw:
        console.print(answer.context, markup=False, highlight=False, soft_wrap=True)
        return
    subtitle = f"{answer.tokens}/{answer.max_tokens} tokens · intent {answer.intent}"
    block = Panel(escape(answer.context), title="memory context", subtitle=subtitle, title_align="left")
    console.print(block)
    cited = ", ".join(f"mem:{c}" for c in answer.citations) or "none"
    console.print(f"citations: {cited}", style="dim", highlight=False)


_COMMANDS: tuple[tuple[str, Callable[..., None]], ...] = (
    ("search", search),
    ("show", show),
    ("context", context),
)


def register(app: typer.Typer) -> None:
    for name, command in _COMMANDS:
        app.command(name)(command)
