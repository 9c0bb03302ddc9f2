"""Ending the window in which erased bytes survive on disk: dead tuples, WAL, and Temporal's sqlite file.

An erasure deletes rows in one transaction, but Postgres keeps the deleted tuples in the tables' pages until
a vacuum reuses them, and the inserts that wrote them in its WAL segments until a checkpoint lets the
segments go (renamed for reuse, bytes intact, unless `wal_recycle` is off). `compact` is what an operator
runs after an erasure (`loregate erase compact`, docs/privacy.md): it rewrites every table and index
(`VACUUM (FULL, ANALYZE)`, catalogs included when the role may: `pg_statistic` keeps sampled column values,
and an emptied table's statistics are deleted, ANALYZE leaving them as they were),
turns WAL recycling off, and switches and checkpoints the WAL twice so the segments written before are
removed. `compact_sqlite` rewrites the Temporal dev server's sqlite file (deleted histories stay in its free
pages until a `VACUUM`).
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

__all__ = ["Compaction", "compact", "compact_sqlite", "disable_wal_recycling"]


@dataclass
class Compaction:
    """What `compact` did, step by step, and what it could not do (each with the SQL an operator runs)."""

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


# what VACUUM says of a table it may not rewrite, across versions: `permission denied to vacuum "t",
# skipping it` (16+), `skipping "t" --- only table or database owner can vacuum it` (before)
_SKIPPED_TABLE = re.compile(r'(?:permission denied to vacuum|skipping) "(?P<name>[^"]+)"')

# the WAL steps, each with the privilege that allows it (Postgres 15+ grants them apart from superuser)
_WAL_PRIVILEGES = (
    "SELECT current_setting('is_superuser') = 'on',"
    " has_parameter_privilege('wal_recycle', 'ALTER SYSTEM'),"
    " has_function_privilege('pg_reload_conf()', 'EXECUTE'),"
    " has_function_privilege('pg_switch_wal()', 'EXECUTE'),"
    " pg_has_role('pg_checkpoint', 'MEMBER')"
)
_WAL_SQL = (
    "ALTER SYSTEM SET wal_recycle = off; SELECT pg_reload_conf(); "
    "CHECKPOINT; SELECT pg_switch_wal(); CHECKPOINT; SELECT pg_switch_wal(); CHECKPOINT;"
)


def _unshared(conn: psycopg.Connection[tuple[object, ...]], names: set[str]) -> list[str]:
    """Of the tables VACUUM skipped, those that may hold rows loregate wrote: not the catalogs, which hold
    the schema (shared ones hold roles and databases); `pg_statistic`, the one catalog that keeps sampled
    values, has a step of its own."""
    if not names:
        return []
    rows = conn.execute(
        "SELECT DISTINCT quote_ident(n.nspname) || '.' || quote_ident(c.relname) FROM pg_class c"
        " JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE c.relname = ANY(%s) AND NOT c.relisshared AND c.relkind IN ('r', 'm')"
        " AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')",
        (sorted(names),),
    ).fetchall()
    return sorted(str(r[0]) for r in rows)


def _vacuum(conn: psycopg.Connection[tuple[object, ...]], sql: str) -> set[str]:
    """Run a VACUUM; the names of the tables it skipped for want of privilege."""
    skipped: set[str] = set()

    def notice(diag: psycopg.errors.Diagnostic) -> None:
        found = _SKIPPED_TABLE.search(diag.message_primary or "")
        if found is not None:
            skipped.add(found.group("name"))

    conn.add_notice_handler(notice)
    try:
        conn.execute(sql)
    finally:
        conn.remove_notice_handler(notice)
    return skipped


# sessions whose snapshot is older than the compaction: VACUUM must keep what they may still see, the
# erased rows among it, so `compact` waits for them to end (they hold a transaction, never for long)
_OLD_SNAPSHOTS = (
    "SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid()"
    " AND (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL) AND xact_start < %s"
)
SNAPSHOT_WAIT_SECONDS = 60.0


def _wait_for_old_snapshots(conn: psycopg.Connection[tuple[object, ...]], wait: float) -> int:
    """Wait up to `wait` seconds until no session holds a snapshot taken before now; how many still do."""
    row = conn.execute("SELECT now()").fetchone()
    started = row[0] if row is not None else None
    deadline = time.monotonic() + wait
    while True:
        left = conn.execute(_OLD_SNAPSHOTS, (started,)).fetchone()
        count = int(str(left[0])) if left is not None else 0
        if count == 0 or time.monotonic() >= deadline:
            return count
        time.sleep(0.2)


# ANALYZE of a table left empty (everything in it erased) keeps the statistics sampled before: values of
# erased rows, live in pg_statistic. Only a superuser may delete them.
_STALE_STATISTICS = (
    "DELETE FROM pg_catalog.pg_statistic s USING pg_catalog.pg_class c"
    " WHERE c.oid = s.starelid AND c.reltuples = 0"
)
_STALE_VISIBLE = (
    "SELECT count(DISTINCT (s.schemaname, s.tablename)) FROM pg_catalog.pg_stats s"
    " JOIN pg_catalog.pg_namespace n ON n.nspname = s.schemaname"
    " JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = s.tablename"
    " WHERE c.reltuples = 0"
)


def _drop_stale_statistics(conn: psycopg.Connection[tuple[object, ...]], result: Compaction) -> None:
    row = conn.execute("SELECT current_setting('is_superuser') = 'on'").fetchone()
    if row is not None and row[0]:
        deleted = conn.execute(_STALE_STATISTICS).rowcount
        result.done.append(f"statistics of empty tables deleted ({deleted} rows sampled before the erasure)")
        return
    stale = conn.execute(_STALE_VISIBLE).fetchone()
    if stale is not None and int(str(stale[0])):
        result.skipped.append(
            f"{stale[0]} empty tables keep statistics sampled before they were emptied (ANALYZE leaves an "
            f"empty table's statistics as they were): run `{_STALE_STATISTICS}; VACUUM (FULL) "
            "pg_catalog.pg_statistic;` as a superuser"
        )


def _report_old_snapshots(result: Compaction, holding: int, wait: float) -> None:
    if holding and not any(line.startswith("sessions kept") for line in result.skipped):
        result.skipped.append(
            f"sessions kept a transaction open from before the compaction for {wait:.0f} s ({holding} at the "
            "end): VACUUM keeps the rows they may still see, erased ones included; run `loregate erase "
            "compact` again when they have ended (pg_stat_activity shows them)"
        )


def compact(url: str, *, wait: float = SNAPSHOT_WAIT_SECONDS) -> Compaction:
    """Rewrite every table the role may, then let the WAL written before go where the role may
    (`url`: any Postgres URL). What it may not do is in `skipped`, with the SQL an operator runs for it."""
    result = Compaction()
    with psycopg.connect(_psycopg_url(url), autocommit=True, connect_timeout=30) as conn:
        _report_old_snapshots(result, _wait_for_old_snapshots(conn, wait), wait)
        # every table this role may vacuum (all of them for a superuser, the catalogs included; a database
        # owner's database but the shared catalogs; else the tables it owns), with indexes and TOAST: a new
        # file each, the old one unlinked. The others are skipped with a warning, not an error.
        skipped = _unshared(conn, _vacuum(conn, "VACUUM (FULL, ANALYZE)"))
        if skipped:
            shown = ", ".join(skipped[:10]) + (f" and {len(skipped) - 10} more" if len(skipped) > 10 else "")
            result.done.append("VACUUM (FULL, ANALYZE) of every table this role may rewrite")
            result.skipped.append(
                f"{len(skipped)} table{'s' if len(skipped) > 1 else ''} not rewritten (this role may not "
                f"vacuum {'them' if len(skipped) > 1 else 'it'}): {shown}; run "
                f"`VACUUM (FULL, ANALYZE) {', '.join(skipped)};` as their owner or a superuser"
            )
        else:
            result.done.append("VACUUM (FULL, ANALYZE) of the database")
        # ANALYZE replaced the statistics sampled before the erasure: a session that began meanwhile may
        # still see the old rows, which VACUUM would then keep
        _report_old_snapshots(result, _wait_for_old_snapshots(conn, wait), wait)
        _drop_stale_statistics(conn, result)
        if _vacuum(conn, "VACUUM (FULL) pg_catalog.pg_statistic"):
            result.skipped.append(
                "pg_statistic not rewritten (it keeps sampled column values): run "
                "`VACUUM (FULL) pg_catalog.pg_statistic;` as a superuser or the database's owner"
            )
        else:
            result.done.append("VACUUM (FULL) pg_catalog.pg_statistic")
        row = conn.execute(_WAL_PRIVILEGES).fetchone()
        superuser, *privileges = row if row is not None else (False,)
        if not (superuser or all(privileges)):
            result.skipped.append(
                "WAL not switched or checkpointed, wal_recycle not turned off (this role may not: it "
                "needs a superuser, or ALTER SYSTEM on wal_recycle, EXECUTE on pg_reload_conf() and "
                "pg_switch_wal() and membership of pg_checkpoint): erased rows stay in WAL segments until "
                f"then; run `{_WAL_SQL}` as a superuser"
            )
            return result
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
