"""`loregate up`: the whole platform on one machine, from nothing but `pip install` (see supervisor.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from api.cli.commands._common import console, fail, load_settings
from governance.bounds import MAX_PORT

__all__ = ["down", "register", "up"]


def up(
    http_port: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=MAX_PORT,
            help="HTTP gateway port (LOREGATE_HTTP_PORT).",
        ),
    ] = None,
    http_host: Annotated[
        str | None, typer.Option(help="HTTP gateway interface (LOREGATE_HTTP_HOST).")
    ] = None,
    grpc_port: Annotated[
        int | None,
        typer.Option(
            min=0,
            max=MAX_PORT,
            help="gRPC gateway port, 0 for none (LOREGATE_GRPC_PORT).",
        ),
    ] = None,
    temporal_port: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=MAX_PORT,
            help="Temporal dev server gRPC port (LOREGATE_TEMPORAL_PORT).",
        ),
    ] = None,
    ui_port: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=MAX_PORT,
            help="Temporal Web UI port (LOREGATE_TEMPORAL_UI_PORT).",
        ),
    ] = None,
    data_dir: Annotated[Path | None, typer.Option(help="Where data lives (LOREGATE_DATA_DIR).")] = None,
    grace: Annotated[
        float,
        typer.Option(
            min=0,
            max=3600,
            help="Seconds a child may take to stop before it is killed.",
        ),
    ] = 10.0,
) -> None:
    """Start Postgres, migrations, Temporal, a worker and the HTTP/gRPC gateway; Ctrl-C stops them all."""
    from api.cli.supervisor import Supervisor

    settings = load_settings(
        http_port=http_port,
        http_host=http_host,
        grpc_port=grpc_port,
        temporal_port=temporal_port,
        temporal_ui_port=ui_port,
        data_dir=data_dir,
    )
    raise typer.Exit(code=Supervisor(settings, console, grace_seconds=grace).run())


def down(
    data_dir: Annotated[Path | None, typer.Option(help="Where data lives (LOREGATE_DATA_DIR).")] = None,
    timeout: Annotated[
        float,
        typer.Option(
            min=0,
            max=86400,
            help="Seconds to wait for it to stop (each child has its own grace).",
        ),
    ] = 120.0,
) -> None:
    """Stop the `loregate up` running on this data dir (as Ctrl-C would) and wait until it has stopped."""
    import os
    import signal
    import time

    from api.cli.supervisor import running_up

    where = load_settings(data_dir=data_dir).data_dir.expanduser().resolve()
    pid = running_up(where)
    if pid is None:
        console.print(f"no `loregate up` is running on {where}: nothing to stop", highlight=False)
        return
    if pid <= 0:
        fail(f"a `loregate up` holds {where / 'up.lock'} but the file names no pid; stop it yourself")
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        fail(f"`loregate up` (pid {pid}) holds the lock on {where} but is gone; its children may hold it")
    except PermissionError:
        fail(f"`loregate up` (pid {pid}) on {where} belongs to another user: not stopped")
    console.print(f"stopping `loregate up` (pid {pid}) on {where} …", highlight=False)
    deadline = time.monotonic() + timeout
    while running_up(where) is not None:
        if time.monotonic() > deadline:
            fail(f"`loregate up` (pid {pid}) is still stopping after {timeout:.0f} s; see its output")
        time.sleep(0.2)
    console.print("stopped", highlight=False)


def register(app: typer.Typer) -> None:
    app.command("up")(up)
    app.command("down")(down)
