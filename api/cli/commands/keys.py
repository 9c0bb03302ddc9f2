"""`loregate keys create|list|revoke` and `loregate principals disable`: who may call loregate.

A key is shown once, at creation; only its hash is stored, listings show its public id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from api.cli.commands._common import console, database, fail, in_transaction, load_settings
from governance.scopes import ActorType

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = ["register", "keys_app", "principals_app"]

keys_app = typer.Typer(help="Create, list and revoke API keys.", no_args_is_help=True)


@keys_app.command("create")
def create(
    actor: Annotated[ActorType, typer.Option(help="Actor type of the new principal.")],
    org: Annotated[str, typer.Option(help="Organisation (tenant) of the principal.")],
    name: Annotated[str, typer.Option(help="A name people recognise, e.g. the agent's name.")],
    project: Annotated[
        str | None, typer.Option(help="Project of the principal; omit for an org-wide principal.")
    ] = None,
    admin: Annotated[bool, typer.Option("--admin", help="Grant every permission in every tenant.")] = False,
) -> None:
    """Create a principal and its first API key; the key is printed once."""
    from governance.storage.identity import create_api_key, create_principal

    _check_name("--org", org)
    if project is not None:
        _check_name("--project", project)

    async def work(conn: AsyncConnection) -> tuple[str, str]:
        principal = await create_principal(
            conn, name=name, actor_type=actor, org=org, project=project, is_admin=admin
        )
        return principal.id, await create_api_key(conn, principal.id)

    settings = load_settings()
    with database(settings) as url:
        principal_id, key = in_transaction(settings, url, work)
    console.print(
        f"principal [bold]{principal_id}[/] ({actor.value}, {org}/{project or '*'})", highlight=False
    )
    console.print("API key (shown once, store it now):", highlight=False)
    # soft_wrap: a narrow terminal must not break the key across lines
    console.print(key, soft_wrap=True, highlight=False, markup=False)


def _check_name(option: str, value: str) -> None:
    """The tenant names `POST /v1/tasks` takes: a key of another tenant could never open or read a task."""
    from pydantic import TypeAdapter, ValidationError

    from api.errors import validation_detail
    from api.schemas.text import ScopeName

    try:
        TypeAdapter(ScopeName).validate_python(value)
    except ValidationError as exc:
        fail(f"{option} {value!r}: {validation_detail(exc.errors())}; no key created")


_KEY_COLUMNS = ("key id", "principal", "name", "actor", "tenant", "created", "revoked")


@keys_app.command("list")
def list_() -> None:
    """List keys with their principals (never the secrets).

    A table when the terminal (or `COLUMNS`) is wide enough for every cell whole; otherwise one block per
    key, a field a line, so no id, actor or tenant is ever cut.
    """
    from governance.storage.identity import list_keys

    settings = load_settings()
    with database(settings) as url:
        keys = in_transaction(settings, url, list_keys)
    rows = [
        (
            info.key_id,
            info.principal.id,
            info.principal.name,
            f"{info.principal.actor_type.value} (admin)"
            if info.principal.is_admin
            else info.principal.actor_type.value,
            info.principal.domain,
            f"{info.created_at:%Y-%m-%d %H:%M}",
            f"{info.revoked_at:%Y-%m-%d %H:%M}" if info.revoked_at else "",
        )
        for info in keys
    ]
    widths = [max(len(cell) for cell in column) for column in zip(_KEY_COLUMNS, *rows, strict=False)]
    # a bordered table takes 3 columns per cell (a rule and two spaces of padding) and a closing rule
    if sum(widths) + 3 * len(widths) + 1 <= console.width:
        table = Table()
        for column in _KEY_COLUMNS:
            table.add_column(column, no_wrap=True)
        for row in rows:
            table.add_row(*row)
        console.print(table)
        return
    label = max(len(c) for c in _KEY_COLUMNS)
    for i, row in enumerate(rows):
        if i:
            console.print()
        for column, cell in zip(_KEY_COLUMNS, row, strict=True):
            if cell:
                console.print(f"{column:<{label}}  {cell}", soft_wrap=True, highlight=False, markup=False)


@keys_app.command("revoke")
def revoke(key_id: Annotated[str, typer.Argument(help="The public key id shown by `keys list`.")]) -> None:
    """Revoke a key; every gateway stops accepting it at once."""
    from governance.storage.identity import revoke_key

    async def work(conn: AsyncConnection) -> bool:
        return await revoke_key(conn, key_id)

    settings = load_settings()
    with database(settings) as url:
        revoked = in_transaction(settings, url, work)
    if not revoked:
        fail(f"no live key with id {key_id!r}")
    console.print(f"revoked key {key_id}", highlight=False)


principals_app = typer.Typer(help="Disable principals.", no_args_is_help=True)


@principals_app.command("disable")
def disable(
    principal_id: Annotated[str, typer.Argument(help="The principal id shown by `keys list`.")],
) -> None:
    """Disable a principal: revoke all its keys; it can no longer call the API nor approve anywhere."""
    from governance.storage.identity import disable_principal

    async def work(conn: AsyncConnection) -> int | None:
        return await disable_principal(conn, principal_id)

    settings = load_settings()
    with database(settings) as url:
        revoked = in_transaction(settings, url, work)
    if revoked is None:
        fail(f"no principal with id {principal_id!r}")
    console.print(f"disabled principal {principal_id} ({revoked} live keys revoked)", highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(keys_app, name="keys")
    app.add_typer(principals_app, name="principals")
