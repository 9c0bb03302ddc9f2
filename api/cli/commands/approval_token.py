"""`loregate approval-token`: what a human pastes into a Temporal UI signal to decide as themselves.

The Temporal UI sends signals without any identity. Unless the platform runs `approval_mode=trusting`,
an `approve`/`reject` signal counts only with a token minted here with the human's own key
(`LOREGATE_API_KEY`), bound to them, the workflow and the plan (or change request) as it is now, and
valid for a few minutes. `loregate approve` decides through the API directly and needs none.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from api.cli.commands._common import JsonOption, KeyOption, UrlOption, console
from api.cli.commands._common import api_client as _client
from api.cli.commands._common import print_json as _print_json

__all__ = ["register", "approval_token"]


def approval_token(
    target: Annotated[
        str, typer.Argument(help="The task whose promotion to decide (or, with --change, a request).")
    ],
    change: Annotated[bool, typer.Option("--change", help="TARGET is a change request's id.")] = False,
    url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Mint a short-lived token to approve or reject from the Temporal UI as this key's principal."""
    with _client(url, api_key) as client:
        answer = client.change_approval_token(target) if change else client.approval_token(target)
    if as_json:
        _print_json(answer)
        return
    console.print(
        f"approval token for [bold]{escape(answer.workflow_id)}[/] as {escape(answer.principal)}, "
        f"valid until {answer.expires_at:%Y-%m-%d %H:%M:%S} UTC; in the Temporal UI: "
        "More Actions → Send a Signal, name [bold]approve[/] (or [bold]reject[/]), input:",
        highlight=False,
    )
    # the signal's input on a line of its own, unwrapped, so it copies whole
    console.print(answer.signal_input, soft_wrap=True, highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    app.command("approval-token")(approval_token)
