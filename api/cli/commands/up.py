"""`loregate up`: the whole platform on one machine, from nothing but `pip install` (see supervisor.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from api.cli.commands._common import console, load_settings

__all__ = ["register", "up"]


def up(
    http_port: Annotated[int | None, typer.Option(help="HTTP gateway port (LOREGATE_HTTP_PORT).")] = None,
    http_host: Annotated[
        str | None, typer.Option(help="HTTP gateway interface (LOREGATE_HTTP_HOST).")
    ] = None,
    grpc_port: Annotated[int | None, typer.Option(help="gRPC gateway port (LOREGATE_GRPC_PORT).")] = None,
    temporal_port: Annotated[
        int | None, typer.Option(help="Temporal dev server gRPC port (LOREGATE_TEMPORAL_PORT).")
    ] = None,
    ui_port: Annotated[
        int | None, typer.Option(help="Temporal Web UI port (LOREGATE_TEMPORAL_UI_PORT).")
    ] = None,
    data_dir: Annotated[Path | None, typer.Option(help="Where data lives (LOREGATE_DATA_DIR).")] = None,
    grace: Annotated[
        float, typer.Option(help="Seconds a child may take to stop before it is killed.")
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


def register(app: typer.Typer) -> None:
    app.command("up")(up)
