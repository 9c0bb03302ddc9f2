"""`loregate schedules apply`: create or update the Temporal Schedules (nightly retention and the like).

`loregate up` applies them at every start; on a cluster run this once per deploy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from api.cli.commands._common import console, fail, load_settings

if TYPE_CHECKING:
    from governance.config import Settings

__all__ = ["register", "schedules_app", "apply_all"]

schedules_app = typer.Typer(help="Temporal Schedules of loregate.", no_args_is_help=True)


async def apply_all(settings: Settings) -> None:
    """Connect to Temporal and create or update every loregate schedule (idempotent)."""
    from workflows.client import connect_temporal
    from workflows.schedules import apply_schedules

    client = await connect_temporal(settings)
    await apply_schedules(client, settings)


@schedules_app.command("apply")
def apply() -> None:
    """Create or update the schedules in the configured Temporal namespace."""
    settings = load_settings()
    try:
        import asyncio

        asyncio.run(apply_all(settings))
    except RuntimeError as exc:  # the SDK's connection failure
        address = settings.temporal_address or f"127.0.0.1:{settings.temporal_port}"
        fail(f"Temporal unreachable at {address}: {exc}")
    console.print(f"schedules applied (namespace {settings.temporal_namespace})", highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(schedules_app, name="schedules")
