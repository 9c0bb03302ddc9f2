"""Statements of citation counts: which tasks used which memories (`memory_uses`, migration 0020).

A use is a `[mem:…]` citation in a task's staging entry (one row per memory and entry) or an explicit call
(one row per memory, task and principal), with whether the citing principal was independent of the memory
(not one of its authors or publishers, `storage/trust.involvement_of`). Only independent principals' uses
count towards ranking (`INDEPENDENT_CITERS`), each principal once: trust comes from others.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = [
    "INDEPENDENT_CITERS",
    "CitedMemory",
    "UseRow",
    "TaskUse",
    "MostUsed",
    "resolve_citations",
    "record_uses",
    "used_by",
    "most_used",
]

# the distinct independent principals who used memory `memories.id` (a column expression for retrieval)
INDEPENDENT_CITERS = """(
    SELECT count(DISTINCT u.actor_id) FROM memory_uses u WHERE u.memory_id = memories.id AND u.independent
)"""


@dataclass(frozen=True)
class CitedMemory:
    """A citation resolved to a memory the citing task may read."""

    id: str
    citation: str


@dataclass(frozen=True)
class UseRow:
    """One use to record."""

    memory_id: str
    task_id: str
    entry_id: int | None
    actor_id: str
    actor_type: str
    independent: bool


@dataclass(frozen=True)
class TaskUse:
    """How one task used one memory: citations, by whom, when, and whether anyone independent did."""

    task_id: str
    org: str
    project: str
    uses: int
    actors: tuple[str, ...]
    independent: bool
    first_at: datetime
    last_at: datetime


@dataclass(frozen=True)
class MostUsed:
    """A memory and how many tasks and independent principals used it."""

    id: str
    citation: str
    memory_type: str
    title: str
    scope: str
    tasks: int
    independent_tasks: int
    independent_principals: int
    uses: int


async def resolve_citations(
    conn: AsyncConnection, citations: Sequence[str], scope_keys: Sequence[str]
) -> list[CitedMemory]:
    """The memories among `citations` that live in one of `scope_keys` (others stay unknown)."""
    if not citations or not scope_keys:
        return []
    rows = await conn.execute(
        text(
            "SELECT id::text AS id, citation FROM memories "
            "WHERE citation = ANY(CAST(:c AS text[])) AND scope_key = ANY(CAST(:k AS text[]))"
        ),
        {"c": list(citations), "k": list(scope_keys)},
    )
    return [CitedMemory(r.id, r.citation) for r in rows]


async def record_uses(conn: AsyncConnection, rows: Sequence[UseRow]) -> int:
    """Record uses; one already recorded (same entry, or same call of a task and principal) stays. The rows
    written."""
    written = 0
    for row in rows:
        result = await conn.execute(
            text(
                "INSERT INTO memory_uses (memory_id, task_id, entry_id, actor_id, actor_type, independent) "
                "VALUES (CAST(:memory_id AS uuid), :task_id, :entry_id, :actor_id, :actor_type, "
                ":independent) "
                "ON CONFLICT DO NOTHING"
            ),
            row.__dict__,
        )
        written += int(result.rowcount or 0)
    return written


async def used_by(conn: AsyncConnection, memory_id: str, *, limit: int) -> tuple[list[TaskUse], int]:
    """The tasks that used a memory (latest use first, at most `limit`) and how many tasks in all."""
    rows = await conn.execute(
        text(
            """
            SELECT u.task_id, t.org, t.project, count(*) AS uses,
                   array_agg(DISTINCT u.actor_id) AS actors, bool_or(u.independent) AS independent,
                   min(u.created_at) AS first_at, max(u.created_at) AS last_at,
                   count(*) OVER () AS total
            FROM memory_uses u JOIN tasks t ON t.id = u.task_id
            WHERE u.memory_id = CAST(:m AS uuid)
            GROUP BY u.task_id, t.org, t.project
            ORDER BY max(u.created_at) DESC, u.task_id
            LIMIT :n
            """
        ),
        {"m": memory_id, "n": limit},
    )
    found = rows.all()
    total = int(found[0].total) if found else 0
    return [
        TaskUse(
            task_id=r.task_id,
            org=r.org,
            project=r.project,
            uses=int(r.uses),
            actors=tuple(sorted(r.actors)),
            independent=bool(r.independent),
            first_at=r.first_at,
            last_at=r.last_at,
        )
        for r in found
    ], total


async def most_used(conn: AsyncConnection, scope_keys: Sequence[str], *, limit: int) -> list[MostUsed]:
    """Active memories of `scope_keys` by how many tasks independent principals used them in, then uses."""
    if not scope_keys:
        return []
    rows = await conn.execute(
        text(
            """
            SELECT m.id::text AS id, m.citation, m.memory_type, m.title, m.scope,
                   count(DISTINCT u.task_id) AS tasks,
                   count(DISTINCT u.task_id) FILTER (WHERE u.independent) AS independent_tasks,
                   count(DISTINCT u.actor_id) FILTER (WHERE u.independent) AS independent_principals,
                   count(*) AS uses
            FROM memory_uses u JOIN memories m ON m.id = u.memory_id
            WHERE m.scope_key = ANY(CAST(:k AS text[])) AND m.deprecated_at IS NULL
            GROUP BY m.id
            ORDER BY independent_tasks DESC, independent_principals DESC, uses DESC, m.citation
            LIMIT :n
            """
        ),
        {"k": list(scope_keys), "n": limit},
    )
    return [MostUsed(**r._mapping) for r in rows]
