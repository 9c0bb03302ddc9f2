"""Stop and start an embedded Postgres in place (same data, same socket) to test outages."""

from __future__ import annotations

import os
from typing import Any

import pgserver

__all__ = ["stop_postgres", "start_postgres"]


def stop_postgres(server: Any) -> None:
    """Fast shutdown: open connections are cut, as when a database host goes away."""
    user = "pgserver" if os.geteuid() == 0 else None
    pgserver.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=server.pgdata, user=user)


def start_postgres(server: Any) -> None:
    """Start it again where it was; its URL does not change."""
    server.ensure_postgres_running()
