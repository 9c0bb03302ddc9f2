"""`loregate review`, `loregate confirm` and `loregate events`: keeping memory true, through the client.

`review` lists the stale memories you may read (a memory they build on was superseded or retired since);
`confirm` is a human's word that one still holds. To rewrite one, supersede it; to drop it, retire it.
`events` reads the audit trail: a memory's (`--memory`) or your tenant's, filtered by type, actor and time,
newest first, a page at a time (`--cursor` takes the `next` the previous page printed).
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

if TYPE_CHECKING:
    from api.schemas.events import EventPublic

__all__ = ["register", "review", "confirm", "events"]


def review(
    scope: Annotated[str | None, typer.Option("--scope", help="Only this scope key.")] = None,
    url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Stale memories you may read: confirm (`loregate confirm`), supersede or retire each."""
    with _client(url, api_key) as client:
        answer = client.review(scope=scope)
    if as_json:
        _print_json(answer)
        return
    stale = answer.memories
    if not stale:
        console.print("nothing to review: no stale memories you may read")
        return
    table = Table(title=f"{len(stale)} stale memories")
    for name in ("citation", "type", "scope", "title", "builds on", "why stale"):
        table.add_column(name, overflow="fold", no_wrap=name == "citation")
    for m in stale:
        table.add_row(
            f"mem:{m.citation}",
            m.type,
            escape(m.scope_key),
            escape(m.title),
            ", ".join(f"mem:{c}" for c in m.derived_from),
            escape(m.stale_reason or ""),
        )
    console.print(table)


def confirm(
    memory: Annotated[str, typer.Argument(help="The stale memory's citation or id.")],
    note: Annotated[str | None, typer.Option("--note", help="Why it still holds.")] = None,
    url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Confirm a stale memory still holds (a human's key): its stale mark is cleared."""
    with _client(url, api_key) as client:
        answer = client.confirm(memory, note=note)
    if as_json:
        _print_json(answer)
        return
    console.print(f"confirmed mem:{answer.citation} (was stale: {escape(answer.was_stale or '')})")


def _row(event: EventPublic) -> tuple[str, ...]:
    subject = f"mem:{event.citation}" if event.citation else (event.task_id or "")
    return (
        str(event.id),
        event.created_at.isoformat()[:19],
        event.type,
        escape(subject),
        escape(f"{event.actor_type or ''} {event.actor_id or ''}".strip()),
        escape(event.reason or ""),
    )


def events(
    memory: Annotated[str | None, typer.Option("--memory", "-m", help="Only this memory's events.")] = None,
    event_type: Annotated[str | None, typer.Option("--type", help="Only this event type.")] = None,
    actor: Annotated[str | None, typer.Option("--actor", help="Only this principal's events.")] = None,
    since: Annotated[str | None, typer.Option("--since", help="At or after (ISO 8601).")] = None,
    until: Annotated[str | None, typer.Option("--until", help="Before (ISO 8601).")] = None,
    org: Annotated[str | None, typer.Option("--org", help="Another tenant's org you may read.")] = None,
    project: Annotated[str | None, typer.Option("--project", help="One project of that org.")] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, max=200, help="Events per page.")] = None,
    cursor: Annotated[str | None, typer.Option("--cursor", help="The `next` of the last page.")] = None,
    url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """The audit trail: a memory's events (oldest first) or a tenant's, yours by default (newest first)."""
    with _client(url, api_key) as client:
        if memory is not None:
            answer = client.memory_events(memory, cursor=cursor, limit=limit)
        else:
            answer = client.events(
                event_type=event_type,
                actor=actor,
                since=since,
                until=until,
                cursor=cursor,
                limit=limit,
                org=org,
                project=project,
            )
    if as_json:
        _print_json(answer)
        return
    table = Table(title=f"events of mem {escape(memory)}" if memory else "events")
    for name in ("id", "when", "type", "about", "actor", "reason"):
        table.add_column(name, overflow="fold", no_wrap=name in ("id", "type", "about"))
    for event in answer.events:
        table.add_row(*_row(event))
    console.print(table)
    if answer.next_cursor:
        console.print(f"next: --cursor {answer.next_cursor}", style="dim", highlight=False)


_COMMANDS: tuple[tuple[str, Callable[..., None]], ...] = (
    ("review", review),
    ("confirm", confirm),
    ("events", events),
)


def register(app: typer.Typer) -> None:
    for name, command in _COMMANDS:
        app.command(name)(command)
