"""`loregate webhooks add|list|remove|deliveries`: notifications for a tenant (admins).

A webhook hears of promotions waiting for approval, change requests pending, subtasks stuck and promotions
failed, within a minute, HMAC-signed (`X-Loregate-Signature`); its secret is printed once, at `add`. These
commands talk to a running gateway (`LOREGATE_URL`) with an admin's `LOREGATE_API_KEY`.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from api.cli.commands._common import JsonOption, KeyOption, UrlOption, console
from api.cli.commands._common import api_client as _client
from api.cli.commands._common import print_json as _print_json

__all__ = ["register", "add", "list_webhooks", "remove", "deliveries"]

webhooks_app = typer.Typer(help="Webhooks: be told what waits for a human or went wrong (admins).")
WebhookArgument = Annotated[str, typer.Argument(help="The webhook's id.")]


@webhooks_app.command("add")
def add(
    url: Annotated[str, typer.Argument(help="Where deliveries are posted (http or https).")],
    org: Annotated[str, typer.Option("--org", help="The tenant's org.")],
    project: Annotated[
        str | None, typer.Option("--project", help="One project of it (default: all).")
    ] = None,
    event: Annotated[
        list[str] | None,
        typer.Option("--event", help="An event to hear of (repeatable; default: every event)."),
    ] = None,
    api_url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Register a webhook; prints its signing secret once."""
    with _client(api_url, api_key) as client:
        created = client.add_webhook(org=org, project=project, url=url, events=event)
    if as_json:
        _print_json(created)
        return
    console.print(f"webhook {escape(created.id)} → {escape(created.url)} ({', '.join(created.events)})")
    console.print(f"signing secret (shown once): {escape(created.secret)}")


@webhooks_app.command("list")
def list_webhooks(
    org: Annotated[str | None, typer.Option("--org", help="Only this org's webhooks.")] = None,
    api_url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """The registered webhooks."""
    with _client(api_url, api_key) as client:
        answer = client.webhooks(org=org)
    if as_json:
        _print_json(answer)
        return
    table = Table("id", "tenant", "url", "events")
    for hook in answer.webhooks:
        tenant = f"{hook.org}/{hook.project or '*'}"
        table.add_row(escape(hook.id), escape(tenant), escape(hook.url), ", ".join(hook.events))
    console.print(table)


@webhooks_app.command("remove")
def remove(webhook_id: WebhookArgument, api_url: UrlOption = None, api_key: KeyOption = None) -> None:
    """Remove a webhook and its delivery records."""
    with _client(api_url, api_key) as client:
        removed = client.remove_webhook(webhook_id)
    console.print(f"removed webhook {escape(removed.id)} ({escape(removed.url)})")


@webhooks_app.command("deliveries")
def deliveries(
    webhook_id: WebhookArgument,
    api_url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """A webhook's deliveries, newest first: event, state, attempts, last status."""
    with _client(api_url, api_key) as client:
        answer = client.webhook_deliveries(webhook_id)
    if as_json:
        _print_json(answer)
        return
    table = Table("id", "event", "key", "state", "attempts", "last status")
    for item in answer.deliveries:
        status = str(item.last_status) if item.last_status is not None else escape(item.last_error or "—")
        table.add_row(
            str(item.id), item.event, escape(item.event_key), item.state, str(item.attempts), status
        )
    console.print(table)


def register(app: typer.Typer) -> None:
    app.add_typer(webhooks_app, name="webhooks")
