"""The Postgres server itself, through a psql runner (the embedded server's): its settings and extensions.

`api/cli/embedded.py` sizes the embedded server's buffer cache and enables pgvector with these, and
`loregate restore --force` empties the database with `EMPTY_DATABASE`; the statements live here with the
rest of the SQL.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["current_shared_buffers_mb", "set_shared_buffers_mb", "enable_vector", "EMPTY_DATABASE"]

Psql = Callable[[str], str]  # runs statements, returns psql's printed output

# what a forced restore runs first, in its transaction: nothing of the old database stays
EMPTY_DATABASE = "DROP SCHEMA IF EXISTS public CASCADE; CREATE SCHEMA public;"

_MEGABYTES = re.compile(r"shared_buffers_mb=(\d+)")


def current_shared_buffers_mb(psql: Psql) -> int:
    """The running server's `shared_buffers`, in megabytes."""
    out = psql(
        "SELECT 'shared_buffers_mb=' || (setting::bigint * 8 / 1024) FROM pg_settings "
        "WHERE name = 'shared_buffers';"
    )
    found = _MEGABYTES.search(out)
    if found is None:
        raise RuntimeError(f"could not read shared_buffers from the server: {out!r}")
    return int(found.group(1))


def set_shared_buffers_mb(psql: Psql, megabytes: int) -> None:
    """`shared_buffers` from the server's next start (ALTER SYSTEM: written to postgresql.auto.conf)."""
    psql(f"ALTER SYSTEM SET shared_buffers = '{int(megabytes)}MB';")


def enable_vector(psql: Psql) -> None:
    """Create the pgvector extension where it is not there yet (quietly when it is)."""
    psql("SET client_min_messages = warning; CREATE EXTENSION IF NOT EXISTS vector;")
