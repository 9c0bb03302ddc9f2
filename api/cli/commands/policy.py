"""`loregate policy list|add|remove`: edit the Casbin policy rows at run time.

Changes are stored in Postgres and announced with NOTIFY, so every running gateway and worker reloads them
without a restart.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from api.cli.commands._common import console, database, fail, friendly_errors, load_settings

if TYPE_CHECKING:
    from policy.enforcer import Authorizer

__all__ = ["register", "policy_app"]

policy_app = typer.Typer(
    help="List and change authorisation policy rows (role, scope, action, effect).", no_args_is_help=True
)


class Effect(StrEnum):
    """A deny row overrides any allow row."""

    ALLOW = "allow"
    DENY = "deny"


Role = Annotated[str, typer.Argument(help="Actor type or role: agent, orchestrator, human, system, admin, …")]
ScopeArg = Annotated[str, typer.Argument(help="task, worktree, project, org, or * for all.")]
Action = Annotated[str, typer.Argument(help="read, write, open, promote, approve, or * for all.")]
EffectOpt = Annotated[Effect, typer.Option(help="allow or deny.")]


@contextmanager
def _authorizer() -> Iterator[Authorizer]:
    """An authorizer on the configured database; it notifies the other processes of each change."""
    from policy.enforcer import make_authorizer

    settings = load_settings()
    with database(settings) as url, friendly_errors():
        authorizer = make_authorizer(url, timeout_seconds=settings.db_timeout_seconds)
        try:
            yield authorizer
        finally:
            authorizer.close()


@policy_app.command("list")
def list_(
    grants: Annotated[
        bool, typer.Option("--grants", help="Also list which principal holds which role where.")
    ] = False,
) -> None:
    """Show the policy rows (and, with --grants, the role grants of principals)."""
    with _authorizer() as authorizer:
        rows = authorizer.list_policies()
        grant_rows = authorizer.list_grants() if grants else []
    table = Table("role", "scope", "action", "effect", title="policy")
    for row in sorted(rows):
        table.add_row(*(row + [""] * (4 - len(row)))[:4])
    console.print(table)
    if grants:
        grant_table = Table("principal", "role", "tenant", title="grants")
        for row in sorted(grant_rows):
            grant_table.add_row(*(row + [""] * (3 - len(row)))[:3])
        console.print(grant_table)


@policy_app.command("add")
def add(role: Role, scope: ScopeArg, action: Action, effect: EffectOpt = Effect.ALLOW) -> None:
    """Add a policy row; running processes apply it within a moment."""
    _check_rule(role, scope, action, effect)
    with _authorizer() as authorizer:
        added = authorizer.add_policy(role, scope, action, effect.value)
    if not added:
        fail(f"policy row already present: {role}, {scope}, {action}, {effect.value}")
    console.print(f"added: {role}, {scope}, {action}, {effect.value}", highlight=False)


def _check_rule(role: str, scope: str, action: str, effect: Effect) -> None:
    """The checks `POST /v1/admin/policy` makes: a row for an unknown scope or action would silently match
    nothing."""
    from pydantic import ValidationError

    from api.schemas.admin import PolicyRule
    from governance.errors import InvalidInput
    from governance.scopes import check_policy_action

    try:
        PolicyRule.model_validate({"role": role, "scope": scope, "action": action, "effect": effect.value})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        fail(f"not a policy row ({problems}); nothing added")
    try:
        check_policy_action(action)
    except InvalidInput as exc:
        fail(f"not a policy row ({exc}); nothing added")


@policy_app.command("remove")
def remove(role: Role, scope: ScopeArg, action: Action, effect: EffectOpt = Effect.ALLOW) -> None:
    """Remove a policy row; running processes apply it within a moment."""
    with _authorizer() as authorizer:
        removed = authorizer.remove_policy(role, scope, action, effect.value)
    if not removed:
        fail(f"no such policy row: {role}, {scope}, {action}, {effect.value}")
    console.print(f"removed: {role}, {scope}, {action}, {effect.value}", highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(policy_app, name="policy")
