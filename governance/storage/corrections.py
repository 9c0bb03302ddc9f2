"""Statements of preferences from repeated corrections: the corrections' signatures beside staging, where
each was seen, and whether a preference was proposed for one (governance/corrections.py).

Signatures are rows of `staging_signals` (signal `correction` for a human's correction, `preference` for the
entry proposing a preference): keys only, every read joins the staging entry it stands for, so an erased or
archived entry is out of sight with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = ["SignatureRow", "Seen", "record_signatures", "corrections_seen", "preference_proposed"]


@dataclass(frozen=True)
class SignatureRow:
    """One staging entry's signature, as recorded."""

    entry_id: int
    task_id: str
    seq: int
    signal: str
    key: str
    actor_id: str


@dataclass(frozen=True)
class Seen:
    """A correction of one signature: its task (key) and entry."""

    task_id: str
    entry_id: int


async def record_signatures(conn: AsyncConnection, rows: Sequence[SignatureRow]) -> None:
    """Record signatures; a replayed entry's is already there and stays as it is."""
    if not rows:
        return
    await conn.execute(
        text(
            "INSERT INTO staging_signals (entry_id, task_id, seq, signal, key, actor_id) "
            "VALUES (:entry_id, :task_id, :seq, :signal, :key, :actor_id) ON CONFLICT (entry_id) DO NOTHING"
        ),
        [row.__dict__ for row in rows],
    )


async def corrections_seen(
    conn: AsyncConnection, *, org: str, project: str, signature: str, limit: int = 1000
) -> list[Seen]:
    """The corrections of one signature in one project's tasks, oldest first."""
    result = await conn.execute(
        text(
            """
            SELECT s.task_id, s.entry_id
            FROM staging_signals s
            JOIN tasks t ON t.id = s.task_id
            JOIN staging_entries e ON e.id = s.entry_id
            WHERE s.signal = 'correction' AND s.key = :key AND t.org = :org AND t.project = :project
            ORDER BY s.created_at, s.entry_id
            LIMIT :limit
            """
        ),
        {"key": signature, "org": org, "project": project, "limit": limit},
    )
    return [Seen(r.task_id, int(r.entry_id)) for r in result]


async def preference_proposed(conn: AsyncConnection, *, org: str, project: str, signature: str) -> bool:
    """Whether a preference entry was already staged for this signature in one of the project's tasks."""
    row = (
        await conn.execute(
            text(
                """
                SELECT 1
                FROM staging_signals s
                JOIN tasks t ON t.id = s.task_id
                JOIN staging_entries e ON e.id = s.entry_id
                WHERE s.signal = 'preference' AND s.key = :key AND t.org = :org AND t.project = :project
                LIMIT 1
                """
            ),
            {"key": signature, "org": org, "project": project},
        )
    ).first()
    return row is not None
