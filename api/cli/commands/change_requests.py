"""`loregate changes list|show|approve|reject`: change requests to validated memory, for people.

A supersede or retire of a memory at a scope that requires validation, asked by anyone but a human allowed
to approve that scope, waits as a change request. Like `loregate approve`, these commands talk to a running
gateway (`LOREGATE_URL`) with `LOREGATE_API_KEY`: the approver is whoever owns that key. `--json` prints the
gateway's answer unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from api.cli.commands._common import JsonOption, KeyOption, UrlOption, console, facts_table
from api.cli.commands._common import api_client as _client
from api.cli.commands._common import print_json as _print_json
from api.cli.commands.batch import decide_batch
from api.cli.commands.lifting import print_lift_items

if TYPE_CHECKING:
    from api.schemas.change_requests import ChangeDecisionPublic

__all__ = ["register", "list_changes", "show", "approve", "reject"]

RequestArgument = Annotated[str, typer.Argument(help="The change request's id.")]
RequestsArgument = Annotated[
    list[str], typer.Argument(help="The change request's id; several decide each on its own.")
]
NoteOption = Annotated[str | None, typer.Option("--note", "-n", help="Why; kept with the decision.")]

changes_app = typer.Typer(help="Change requests: supersede, retire and lift waiting for an approval.")


@changes_app.command("list")
def list_changes(
    state: Annotated[
        str | None, typer.Option("--state", help="Only requests in this state (e.g. awaiting_approval).")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000)] = 100,
    ids: Annotated[
        bool, typer.Option("--ids", help="Only the ids, one a line (e.g. for `changes approve $(…)`).")
    ] = False,
    url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Change requests of memories this key may read, newest first."""
    with _client(url, api_key) as client:
        answer = client.change_requests(state=state, limit=limit)
    if as_json:
        _print_json(answer)
        return
    if ids:
        for request in answer.change_requests:
            print(request.id)
        return
    table = Table("id", "operation", "memory", "state", "requested by", "proposed title")
    for request in answer.change_requests:
        table.add_row(
            escape(request.id),
            request.operation,
            escape(request.memory_id),
            request.state,
            escape(request.requested_by),
            escape(
                f"lift to {request.target_scope_key}" if request.operation == "lift" else request.title or "—"
            ),
        )
    console.print(table)


def _side(label: str, title: str | None, content: str | None) -> None:
    console.print(f"[bold]{label}[/] {escape(title or '')}", highlight=False)
    console.print(escape(content or ""), highlight=False)


@changes_app.command("show")
def show(
    request_id: RequestArgument, url: UrlOption = None, api_key: KeyOption = None, as_json: JsonOption = False
) -> None:
    """A change request: the memory as it is now and the proposed change, side by side."""
    with _client(url, api_key) as client:
        answer = client.change_request(request_id)
    if as_json:
        _print_json(answer)
        return
    facts = facts_table(
        (
            ("operation", f"{answer.operation} memory {answer.memory_id} ({answer.scope} scope)"),
            ("state", answer.state),
            ("workflow", answer.workflow_id),
            ("requested by", answer.requested_by),
            ("reason", answer.reason),
            ("decided by", answer.decided_by),
            ("note", answer.decision_note),
            ("result", answer.result_memory_id),
        )
    )
    console.print(facts)
    if answer.operation == "lift":
        console.print(f"[bold]lift to:[/] {escape(answer.target_scope_key or '')}", highlight=False)
        print_lift_items(answer)
        return
    old = answer.old
    _side("now:", old.title if old else None, old.content if old else None)
    if answer.operation == "retire":
        console.print("[bold]after:[/] retired, without a successor")
    else:
        _side("after:", answer.title, answer.content)


def _decided(answer: ChangeDecisionPublic) -> None:
    console.print(
        f"{answer.decision} of change request [bold]{escape(answer.id)}[/] accepted "
        f"(approver {escape(answer.approver)}); it is now {answer.state}",
        highlight=False,
    )


def _decide(
    decision: str,
    request_ids: list[str],
    note: str | None,
    url: str | None,
    api_key: str | None,
    as_json: bool,
) -> None:
    """One request decided through its own call, several in one batch (exit code 1 if any was refused)."""
    if len(request_ids) > 1:
        decide_batch(
            decision, change_requests=request_ids, note=note, url=url, api_key=api_key, as_json=as_json
        )
        return
    with _client(url, api_key) as client:
        decide = client.approve_change if decision == "approve" else client.reject_change
        answer = decide(request_ids[0], note)
    if as_json:
        _print_json(answer)
        return
    _decided(answer)


@changes_app.command("approve")
def approve(
    request_ids: RequestsArgument,
    note: NoteOption = None,
    url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Approve change requests as this key's principal; each change is then applied.

    Several are decided in one action, each checked on its own (exit code 1 if any was refused).
    """
    _decide("approve", request_ids, note, url, api_key, as_json)


@changes_app.command("reject")
def reject(
    request_ids: RequestsArgument,
    note: NoteOption = None,
    url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Reject change requests as this key's principal; nothing changes.

    Several are decided in one action, each checked on its own (exit code 1 if any was refused).
    """
    _decide("reject", request_ids, note, url, api_key, as_json)


def register(app: typer.Typer) -> None:
    app.add_typer(changes_app, name="changes")
