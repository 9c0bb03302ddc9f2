"""Ending the window in which erased bytes survive on disk: dead tuples, WAL, and Temporal's sqlite file.

An erasure deletes rows in one transaction, but Postgres keeps the deleted tuples in the tables' pages until
a vacuum reuses them, and the inserts that wrote them in its WAL segments until a checkpoint lets the
segments go (renamed for reuse, bytes intact, unless `wal_recycle` is off). `compact` is what an operator
runs after an erasure (`loregate erase compact`, docs/privacy.md): it rewrites every table and index
(`VACUUM (FULL, ANALYZE)`, catalogs included when the role may: `pg_statistic` keeps sampled column values),
turns WAL recycling off, and switches and checkpoints the WAL twice so the segments written before are
removed. `compact_sqlite` rewrites the Temporal dev server's sqlite file (deleted histories stay in its free
pages until a `VACUUM`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

__all__ = ["Compaction", "compact", "compact_sqlite", "disable_wal_recycling"]


@dataclass
class Compaction:
    """What `compact` did, step by step, and what it could not do (with why)."""

    done: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _psycopg_url(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def disable_wal_recycling(psql: Callable[[str], str]) -> None:
    """WAL segments are removed once a checkpoint passes them, never renamed for reuse with their bytes
    (the embedded server's setting from its first start; `compact` sets it on any server)."""
    if "wal_recycle=off" in psql("SELECT 'wal_recycle=' || current_setting('wal_recycle');"):
        return
    psql("ALTER SYSTEM SET wal_recycle = off;")  # alone: ALTER SYSTEM refuses a transaction block
    psql("SELECT pg_reload_conf();")


def compact(url: str) -> Compaction:
    """Rewrite every table, then let the WAL written before go (`url`: any Postgres URL)."""
    result = Compaction()
    with psycopg.connect(_psycopg_url(url), autocommit=True, connect_timeout=30) as conn:
        superuser = conn.execute("SELECT current_setting('is_superuser')").fetchone() == ("on",)
        # every table this role owns (all of them for a superuser, the catalogs included), with its indexes
        # and TOAST: a new file each, the old one unlinked
        conn.execute("VACUUM (FULL, ANALYZE)")
        result.done.append("VACUUM (FULL, ANALYZE) of the database")
        if not superuser:
            result.skipped.append(
                "not a superuser: catalogs (pg_statistic) not rewritten, WAL not switched or checkpointed; "
                "run `VACUUM (FULL) pg_catalog.pg_statistic; SELECT pg_switch_wal(); CHECKPOINT;` as one"
            )
            return result
        conn.execute("VACUUM (FULL) pg_catalog.pg_statistic")
        result.done.append("VACUUM (FULL) pg_catalog.pg_statistic")
        conn.execute("ALTER SYSTEM SET wal_recycle = off")
        conn.execute("SELECT pg_reload_conf()")
        result.done.append("wal_recycle = off (old WAL segments are removed, not renamed for reuse)")
        for _ in range(2):
            conn.execute("CHECKPOINT")
            conn.execute("SELECT pg_switch_wal()")
        conn.execute("CHECKPOINT")
        result.done.append("WAL switched and checkpointed: segments written before are removed")
    return result


def compact_sqlite(path: Path) -> str | None:
    """`VACUUM` the sqlite file at `path` (Temporal's histories); None when done, else why not."""
    try:
        with sqlite3.connect(path, timeout=30) as db:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db = sqlite3.connect(path, timeout=30, isolation_level=None)
        try:
            db.execute("VACUUM")
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            db.close()
    except sqlite3.Error as exc:
        return f"{path}: {exc} (stop `loregate up` and run this again)"
    return None
