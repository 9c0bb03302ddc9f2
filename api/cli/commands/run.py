"""`loregate serve` (HTTP + gRPC gateway) and `loregate worker`: one piece of the platform each.

For the distributed setup; `loregate up` runs exactly these as its child processes. Both use
LOREGATE_DATABASE_URL, or attach to (or start) the embedded database under the data dir when it is unset.
"""

from __future__ import annotations

import os
import signal
from typing import TYPE_CHECKING, Annotated

import typer

from api.cli.commands._common import database, err_console, friendly_errors, load_settings
from governance.bounds import MAX_PORT

if TYPE_CHECKING:
    import asyncio

    from fastapi import FastAPI

    from governance.config import Settings

__all__ = ["register", "serve", "worker", "gateway_app"]


def gateway_app() -> FastAPI:
    """Zero-argument app factory: uvicorn calls it in every worker process, each reading its own settings.

    Each process also serves gRPC on LOREGATE_GRPC_PORT (0 turns it off); gRPC binds with SO_REUSEPORT, so
    several workers share that port as they share the HTTP one.
    """
    from api.http.app import create_app
    from governance.config import Settings

    settings = Settings()
    return create_app(settings, grpc_port=settings.grpc_port or None, settle_heap=True)


def serve(
    host: Annotated[str | None, typer.Option(help="Interface to bind (LOREGATE_HTTP_HOST).")] = None,
    port: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=MAX_PORT,
            help="Port to bind (LOREGATE_HTTP_PORT).",
        ),
    ] = None,
    workers: Annotated[int, typer.Option(min=1, help="Gateway processes sharing the port.")] = 1,
    grpc_port: Annotated[
        int | None,
        typer.Option(
            min=0,
            max=MAX_PORT,
            help="gRPC gateway port, 0 for none (LOREGATE_GRPC_PORT).",
        ),
    ] = None,
    access_log: Annotated[
        bool,
        typer.Option(help="Log every request (costs CPU on the ingest path; /metrics counts them anyway)."),
    ] = False,
) -> None:
    """Run the HTTP gateway (OpenAPI at /docs) and the gRPC gateway."""
    import uvicorn

    from api.http.protocol import PROTOCOL_PATH

    settings = load_settings(http_host=host, http_port=port, grpc_port=grpc_port)
    with database(settings) as url:
        # the factory runs in uvicorn's worker processes, which inherit the environment
        os.environ["LOREGATE_DATABASE_URL"] = url
        os.environ["LOREGATE_HTTP_PORT"] = str(settings.http_port)
        os.environ["LOREGATE_GRPC_PORT"] = str(settings.grpc_port)
        uvicorn.run(
            "api.cli.commands.run:gateway_app",
            factory=True,
            host=settings.http_host,
            port=settings.http_port,
            workers=workers,
            http=PROTOCOL_PATH,
            log_level="info",
            access_log=access_log,
            # the app believes forwarded headers from LOREGATE_TRUSTED_PROXIES only (api/http/app.py);
            # uvicorn's own default would believe any client on loopback
            proxy_headers=False,
        )


def _stop_on_signals() -> asyncio.Event:
    """An event set by SIGTERM or SIGINT, so a long-running command can shut down in order."""
    import asyncio

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    return stop


async def _run_until_signalled(settings: Settings) -> None:
    """Run the worker until SIGTERM/SIGINT, then let it shut down cleanly (in-flight tasks are retried)."""
    from workflows.worker import run_worker

    await run_worker(settings, stop=_stop_on_signals())
    err_console.print("worker stopped")


def worker() -> None:
    """Run a Temporal worker for the promotion and retention workflows."""
    settings = load_settings()
    import asyncio

    with database(settings) as url, friendly_errors():
        asyncio.run(_run_until_signalled(settings.model_copy(update={"database_url": url})))


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
    app.command("worker")(worker)
