"""Statements of live warnings: the signals staging entries leave, and other tasks' fixes and failures.

Signals (`staging_signals`, migration 0020) hold keys only; every read joins the staging entry or the
approach it stands for, so what erasure or the staging archive removed is out of sight with it. Reads are
bounded: one project, tasks other than the asking one, a time window, a limit. Who may see them is decided
by the caller (api/services/live.py) before these run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.storage.tables import vector_literal

__all__ = [
    "SignalRow",
    "FixRow",
    "FailedRow",
    "record_signals",
    "task_signal_keys",
    "fixes_elsewhere",
    "failed_approaches_elsewhere",
]


@dataclass(frozen=True)
class SignalRow:
    """One staging entry's signal, as recorded."""

    entry_id: int
    task_id: str
    seq: int
    signal: str
    key: str
    actor_id: str


@dataclass(frozen=True)
class FixRow:
    """Another task's fix of an error signature: the error's text, and the entry written after it."""

    key: str
    task_id: str
    worktree: str
    status: str
    error: str
    fix: str
    actor_id: str
    at: datetime


@dataclass(frozen=True)
class FailedRow:
    """Another task's failed approach, with its reasons, who tried it and when."""

    task_id: str
    worktree: str
    status: str
    approach: str
    reasons: tuple[str, ...]
    actor_id: str
    at: datetime
    similarity: float | None


async def record_signals(conn: AsyncConnection, rows: Sequence[SignalRow]) -> None:
    """Record signals; a replayed entry's signal is already there and stays as it is."""
    if not rows:
        return
    await conn.execute(
        text(
            "INSERT INTO staging_signals (entry_id, task_id, seq, signal, key, actor_id) "
            "VALUES (:entry_id, :task_id, :seq, :signal, :key, :actor_id) ON CONFLICT (entry_id) DO NOTHING"
        ),
        [r.__dict__ for r in rows],
    )


async def task_signal_keys(conn: AsyncConnection, task_id: str, signal: str, *, limit: int = 20) -> list[str]:
    """The distinct keys of a task's own signals of one kind, latest first."""
    rows = await conn.execute(
        text(
            "SELECT key FROM staging_signals WHERE task_id = :t AND signal = :s "
            "GROUP BY key ORDER BY max(seq) DESC LIMIT :n"
        ),
        {"t": task_id, "s": signal, "n": limit},
    )
    return [r.key for r in rows]


_FIXES = text(
    """
    WITH last_error AS (
        SELECT DISTINCT ON (s.task_id, s.key) s.task_id, s.key, s.entry_id, s.seq
        FROM staging_signals s JOIN tasks t ON t.id = s.task_id
        WHERE s.signal = 'error' AND s.key = ANY(CAST(:keys AS text[])) AND s.task_id <> :task
          AND t.org = :org AND t.project = :project AND s.created_at >= :since
        ORDER BY s.task_id, s.key, s.seq DESC
    )
    SELECT l.key, l.task_id, t.worktree, t.status, err.content AS error, f.content AS fix, f.actor_id,
           f.created_at AS at
    FROM last_error l
    JOIN tasks t ON t.id = l.task_id
    JOIN staging_entries err ON err.task_id = l.task_id AND err.seq = l.seq
    JOIN LATERAL (
        SELECT e.content, e.actor_id, e.created_at FROM staging_entries e
        WHERE e.task_id = l.task_id AND e.seq > l.seq AND e.kind IN ('result', 'decision')
        ORDER BY e.seq LIMIT 1
    ) f ON true
    ORDER BY (t.worktree = :worktree) DESC, f.created_at DESC
    LIMIT :limit
    """
)


async def fixes_elsewhere(
    conn: AsyncConnection,
    *,
    task_id: str,
    org: str,
    project: str,
    worktree: str,
    keys: Sequence[str],
    since: datetime,
    limit: int,
) -> list[FixRow]:
    """Other tasks of the project that met an error of one of these signatures and wrote what followed it
    (the first `result` or `decision` after its last occurrence there), same worktree first, latest first."""
    if not keys:
        return []
    rows = await conn.execute(
        _FIXES,
        {
            "keys": list(keys),
            "task": task_id,
            "org": org,
            "project": project,
            "worktree": worktree,
            "since": since,
            "limit": limit,
        },
    )
    return [FixRow(**r._mapping) for r in rows]


_FAILED = text(
    """
    WITH recorded AS (
        SELECT a.task_id, t.worktree, t.status, a.text AS approach, a.failure_reasons AS reasons,
               a.last_attempt_at AS at, ev.actor_id,
               CASE WHEN a.embedding IS NULL OR CAST(:emb AS vector) IS NULL THEN NULL
                    ELSE 1 - (a.embedding <=> CAST(:emb AS vector)) END AS similarity,
               a.fingerprint
        FROM approaches a JOIN tasks t ON t.id = a.task_id
        LEFT JOIN LATERAL (
            SELECT e.actor_id FROM memory_events e
            WHERE e.task_id = a.task_id AND e.event_type = 'APPROACH'
              AND e.payload->>'fingerprint' = a.fingerprint
            ORDER BY e.id DESC LIMIT 1
        ) ev ON true
        WHERE a.last_outcome = 'failed' AND a.task_id <> :task AND t.org = :org AND t.project = :project
          AND a.last_attempt_at >= :since
    ), staged AS (
        SELECT s.task_id, t.worktree, t.status, e.content AS approach,
               CASE WHEN json_typeof(e.payload->'reason') = 'string'
                    THEN jsonb_build_array(e.payload->>'reason') ELSE '[]'::jsonb END AS reasons,
               e.created_at AS at, e.actor_id, NULL::float8 AS similarity, s.key AS fingerprint
        FROM staging_signals s JOIN tasks t ON t.id = s.task_id
        JOIN staging_entries e ON e.task_id = s.task_id AND e.seq = s.seq
        WHERE s.signal = 'approach' AND s.key = :fingerprint AND s.task_id <> :task
          AND t.org = :org AND t.project = :project AND s.created_at >= :since
    )
    SELECT * FROM (SELECT * FROM recorded UNION ALL SELECT * FROM staged) x
    WHERE x.fingerprint = :fingerprint OR x.similarity >= :threshold
    ORDER BY (x.fingerprint = :fingerprint) DESC, x.similarity DESC NULLS LAST, (x.worktree = :worktree) DESC,
             x.at DESC
    LIMIT :limit
    """
)


async def failed_approaches_elsewhere(
    conn: AsyncConnection,
    *,
    task_id: str,
    org: str,
    project: str,
    worktree: str,
    fingerprint: str,
    embedding: Sequence[float] | Any | None,
    threshold: float,
    since: datetime,
    limit: int,
) -> list[FailedRow]:
    """Approaches that failed in other tasks of the project: the same fingerprint (recorded or staged), or a
    recorded one whose embedding is within `threshold` of `embedding`; exact matches first."""
    rows = await conn.execute(
        _FAILED,
        {
            "task": task_id,
            "org": org,
            "project": project,
            "worktree": worktree,
            "fingerprint": fingerprint,
            "emb": vector_literal(embedding),
            "threshold": threshold,
            "since": since,
            "limit": limit,
        },
    )
    return [
        FailedRow(
            task_id=r.task_id,
            worktree=r.worktree,
            status=r.status,
            approach=r.approach,
            reasons=tuple(str(x) for x in (r.reasons or ())),
            actor_id=r.actor_id or "unknown",
            at=r.at,
            similarity=None if r.similarity is None else float(r.similarity),
        )
        for r in rows
    ]
