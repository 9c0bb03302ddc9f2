"""`loregate schedules apply|trigger`: create or update the Temporal Schedules (nightly retention and the
like), or run one of them now.

`loregate up` applies them at every start; on a cluster run `apply` once per deploy.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Annotated, Any

import typer

from api.cli.commands._common import console, fail, load_settings

if TYPE_CHECKING:
    from governance.config import Settings

__all__ = ["register", "schedules_app", "apply_all", "trigger_one"]

schedules_app = typer.Typer(help="Temporal Schedules of loregate.", no_args_is_help=True)


async def apply_all(settings: Settings) -> None:
    """Connect to Temporal and create or update every loregate schedule (idempotent)."""
    from workflows.client import connect_temporal
    from workflows.schedules import apply_schedules

    client = await connect_temporal(settings)
    await apply_schedules(client, settings)


async def trigger_one(settings: Settings, schedule_id: str) -> None:
    """Connect to Temporal and take the schedule's action now, as its next run would."""
    from workflows.client import connect_temporal

    client = await connect_temporal(settings)
    await client.get_schedule_handle(schedule_id).trigger()


def _run(settings: Settings, work: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run `work` against Temporal; an unreachable server or a missing schedule ends in one line."""
    import asyncio

    from temporalio.service import RPCError, RPCStatusCode

    address = settings.temporal_address or f"127.0.0.1:{settings.temporal_port}"
    # the message is made inside the handler and the process ends outside it: the exception's traceback
    # holds the Temporal client's frames, and a client still alive while the interpreter shuts down can
    # abort it (SIGABRT) instead of exiting 1
    refusal: str | None = None
    try:
        asyncio.run(work())
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            refusal = f"{exc.message} (create the schedules with `loregate schedules apply`)"
        else:
            refusal = f"Temporal at {address} refused: {exc.message}"
    except RuntimeError as exc:  # the SDK's connection failure
        # the SDK appends its transport's debug text (`tonic::transport::Error(...)`): keep the message
        first = (str(exc).splitlines() or [type(exc).__name__])[0].split(": tonic::")[0]
        hint = (
            ""
            if settings.temporal_address
            else " (a `loregate up` started with --temporal-port P: set LOREGATE_TEMPORAL_PORT=P, "
            "or LOREGATE_TEMPORAL_ADDRESS for another server)"
        )
        refusal = f"Temporal unreachable at {address}{hint}: {first}"
    if refusal is not None:
        import gc

        gc.collect()  # the client and its runtime, now unreferenced, go before the process ends
        fail(refusal)


# the short names `trigger` takes, beside the schedule ids themselves
_SHORT_NAMES = {
    name: f"loregate-{name}" for name in ("retention", "reflection", "notifications", "knowledge")
}


@schedules_app.command("apply")
def apply() -> None:
    """Create or update the schedules in the configured Temporal namespace."""
    settings = load_settings()
    _run(settings, lambda: apply_all(settings))
    console.print(f"schedules applied (namespace {settings.temporal_namespace})", highlight=False)


@schedules_app.command("trigger")
def trigger(
    name: Annotated[
        str, typer.Argument(help="retention, reflection, notifications or knowledge (or the schedule's id).")
    ],
) -> None:
    """Run one schedule's action now (e.g. compute project knowledge without waiting for its hour)."""
    from workflows.schedules import SCHEDULE_IDS

    schedule_id = _SHORT_NAMES.get(name, name)
    if schedule_id not in SCHEDULE_IDS:
        fail(f"no schedule {name!r}: one of {', '.join(_SHORT_NAMES)}")
    settings = load_settings()
    _run(settings, lambda: trigger_one(settings, schedule_id))
    console.print(
        f"schedule {schedule_id} triggered (namespace {settings.temporal_namespace})", highlight=False
    )


def register(app: typer.Typer) -> None:
    app.add_typer(schedules_app, name="schedules")
