"""Deciding several promotions or change requests in one action (`loregate approve T1 T2`, `loregate changes
approve ID1 ID2`): one `POST /v1/decisions`, each item checked on its own by the gateway, a line for each.

The command ends with exit code 1 when any item was refused, after printing every item's outcome, so a
script sees that something is left while the decided items stay decided.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import typer
from rich.markup import escape
from rich.table import Table

from api.cli.commands._common import api_client, console, err_console, print_json

if TYPE_CHECKING:
    from api.schemas.decisions import BatchDecisionPublic, BatchItemPublic

__all__ = ["decide_batch"]

_DONE = {"approve": "approved", "reject": "rejected"}


def _state(answer: BatchDecisionPublic, item: BatchItemPublic) -> str:
    """Where an accepted item stands: a promotion answers while still waiting, then publishes or closes."""
    if item.state == "awaiting_approval":
        return "publishing" if answer.decision == "approve" else "closing"
    return item.state or ""


def _show(answer: BatchDecisionPublic) -> None:
    # the heading says what happened: "0 of 2 approved as …" when every item was refused
    title = f"{answer.accepted} of {len(answer.items)} {_DONE[answer.decision]} as {escape(answer.approver)}"
    table = Table(title=title, title_justify="left")
    for name in ("kind", "id", "outcome", "state", "why"):
        table.add_column(name)
    for item in answer.items:
        kind = "promotion" if item.kind == "promotion" else "change"
        if item.accepted:
            table.add_row(
                kind, escape(item.id), f"[green]{_DONE[answer.decision]}[/]", _state(answer, item), ""
            )
        else:
            why = f"{item.error}: {item.detail}" if item.error else ""
            table.add_row(kind, escape(item.id), "[red]refused[/]", "", escape(why))
    console.print(table)
    console.print(f"{answer.accepted} decided, {answer.refused} refused", highlight=False)


def decide_batch(
    decision: str,
    *,
    promotions: Sequence[str] = (),
    change_requests: Sequence[str] = (),
    note: str | None,
    url: str | None,
    api_key: str | None,
    as_json: bool,
) -> None:
    """Decide every item in one request and print each outcome; exit 1 when any was refused."""
    with api_client(url, api_key) as client:
        answer = client.decide_batch(
            decision, promotions=promotions, change_requests=change_requests, note=note
        )
    if as_json:
        print_json(answer)
    else:
        _show(answer)
    if answer.refused:
        if not as_json:
            err_console.print(f"[bold red]error:[/] {answer.refused} of {len(answer.items)} refused")
        raise typer.Exit(code=1)
