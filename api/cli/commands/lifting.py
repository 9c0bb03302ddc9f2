"""`loregate lift MEMORY... --to SCOPE --reason R`: lift published memories to a wider scope.

Like `loregate changes`, it talks to a running gateway (`LOREGATE_URL`) with `LOREGATE_API_KEY`, as the
key's owner (POST /v1/memories/lift). Where the wider scope needs an approval the key's owner cannot give,
the answer is a change request (decide it with `loregate changes approve ID`); otherwise the lift is applied
at once and each memory's outcome is printed. `--json` prints the gateway's answer unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.markup import escape
from rich.table import Table

from api.cli.commands._common import api_client as _client
from api.cli.commands._common import console
from api.cli.commands._common import print_json as _print_json

if TYPE_CHECKING:
    from api.schemas.change_requests import ChangeRequestPublic

__all__ = ["register", "lift", "print_lift_items"]

TargetScope = Literal["worktree", "project", "org"]


def print_lift_items(answer: ChangeRequestPublic) -> None:
    """A lift's memories: what each was, and once applied, what it became at the target scope."""
    table = Table("memory", "title", "outcome", "at the target")
    for item in answer.items:
        table.add_row(
            escape(f"mem:{item.citation}" if item.citation else item.memory_id),
            escape(item.title),
            item.outcome or "—",
            escape(f"mem:{item.result_citation}" if item.result_citation else "—"),
        )
    console.print(table)


def lift(
    memories: Annotated[list[str], typer.Argument(help="Citations (mem:abc123) or ids of the memories.")],
    to: Annotated[TargetScope, typer.Option("--to", help="The wider scope: worktree, project or org.")],
    reason: Annotated[str, typer.Option("--reason", "-r", help="Why they hold more widely.")],
    idempotency_key: Annotated[
        str | None, typer.Option("--idempotency-key", help="Repeat it when retrying.")
    ] = None,
    url: Annotated[str | None, typer.Option("--url", help="Gateway URL (LOREGATE_URL).")] = None,
    api_key: Annotated[
        str | None, typer.Option("--api-key", help="API key (LOREGATE_API_KEY).", envvar="LOREGATE_API_KEY")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the gateway's JSON answer.")] = False,
) -> None:
    """Lift memories to a wider scope: applied at once, or a change request awaiting a human's approval."""
    with _client(url, api_key) as client:
        answer = client.lift_memories(memories, to, reason=reason, idempotency_key=idempotency_key)
    if as_json:
        _print_json(answer)
        return
    target = escape(answer.target_scope_key or to)
    if answer.state == "awaiting_approval":
        console.print(
            f"lift to [bold]{target}[/] awaits approval: change request [bold]{escape(answer.id)}[/] "
            f"(`loregate changes approve {escape(answer.id)}` by a human allowed to approve {to} scope)",
            highlight=False,
        )
    else:
        console.print(f"lifted to [bold]{target}[/] ({answer.state})", highlight=False)
    print_lift_items(answer)


def register(app: typer.Typer) -> None:
    app.command("lift")(lift)
