"""Statements of lifts: the memories a lift names, its items, and what applying one writes.

A lift is a change request (`operation = 'lift'`, governance/storage/change_requests.py) whose memories are
its `change_request_items`, in order, each with its title at request time (the workflow shows titles only).
Applying it (locks, re-checks, each copy published, links carried over, originals marked lifted, events)
is composed by governance/operations/lifting.py from the statements here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import insert, select, text, update
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.errors import NotFound
from governance.scopes import Scope
from governance.storage.memory_rows import MemoryTenant, resolve_memory_id
from governance.storage.tables import change_request_items, memories

__all__ = [
    "lift_source_tenants",
    "LiftSource",
    "LiftItem",
    "Original",
    "lift_sources",
    "add_lift_items",
    "lift_items",
    "originals",
    "carry_sources",
    "carry_bug_statistics",
    "carry_derived",
    "mark_lifted",
    "record_item_outcome",
]


@dataclass(frozen=True)
class LiftSource:
    """A memory a caller asks to lift, with what the checks need (its place and whether it is active)."""

    id: str
    citation: str
    org: str
    project: str | None
    scope: str
    scope_key: str
    title: str
    active: bool
    worktree: str | None
    task_id: str | None
    memory_type: str = "fact"
    content: str = ""
    validation_source: str | None = None


@dataclass(frozen=True)
class LiftItem:
    """One memory of a lift: its title at request time, and once applied its outcome and result."""

    position: int
    memory_id: str
    citation: str | None
    title: str
    outcome: str | None
    result_memory_id: str | None
    result_citation: str | None


async def lift_sources(conn: AsyncConnection, refs: Sequence[str]) -> list[LiftSource]:
    """The memories named by uuid or citation (`mem:` mark or not), in order; NotFound for the first unknown.

    A task memory's worktree is its task's; a worktree memory's is the last part of its scope key.
    """
    found: list[LiftSource] = []
    for ref in refs:
        memory_id = await resolve_memory_id(conn, ref.removeprefix("mem:"))
        row = (
            await conn.execute(
                text(
                    """
                    SELECT m.id::text AS id, m.citation, m.org, m.project, m.scope, m.scope_key, m.title,
                           m.memory_type, m.content, m.validation_source,
                           (m.deprecated_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > now()))
                               AS active,
                           t.id AS task_id, t.worktree AS task_worktree
                    FROM memories m LEFT JOIN tasks t ON m.scope = 'task' AND m.scope_key = 'task:' || t.id
                    WHERE m.id = CAST(:id AS uuid)
                    """
                ),
                {"id": memory_id},
            )
        ).first()
        if row is None:
            raise NotFound(f"memory {ref!r} does not exist")
        worktree: str | None = row.task_worktree
        if row.scope == Scope.WORKTREE:
            worktree = row.scope_key.removeprefix(f"worktree:{row.org}/{row.project}/")
        found.append(
            LiftSource(
                id=row.id,
                citation=row.citation,
                org=row.org,
                project=row.project,
                scope=row.scope,
                scope_key=row.scope_key,
                title=row.title,
                active=bool(row.active),
                worktree=worktree,
                task_id=row.task_id,
                memory_type=row.memory_type,
                content=row.content,
                validation_source=row.validation_source,
            )
        )
    return found


async def add_lift_items(conn: AsyncConnection, request_id: str, sources: Sequence[LiftSource]) -> None:
    """The lift's memories, in the order asked."""
    await conn.execute(
        insert(change_request_items),
        [
            {"request_id": request_id, "position": i, "memory_id": s.id, "title": s.title[:500]}
            for i, s in enumerate(sources)
        ],
    )


async def lift_items(conn: AsyncConnection, request_id: str) -> list[LiftItem]:
    """A lift's memories in order, with their citations and, once applied, outcomes."""
    rows = await conn.execute(
        text(
            """
            SELECT i.position, i.memory_id::text AS memory_id, o.citation, i.title, i.outcome,
                   i.result_memory_id::text AS result_memory_id, r.citation AS result_citation
            FROM change_request_items i
            LEFT JOIN memories o ON o.id = i.memory_id
            LEFT JOIN memories r ON r.id = i.result_memory_id
            WHERE i.request_id = CAST(:r AS uuid)
            ORDER BY i.position
            """
        ),
        {"r": request_id},
    )
    return [
        LiftItem(
            r.position, r.memory_id, r.citation, r.title, r.outcome, r.result_memory_id, r.result_citation
        )
        for r in rows
    ]


async def lift_source_tenants(
    conn: AsyncConnection, request_ids: Sequence[str]
) -> dict[str, list[MemoryTenant]]:
    """The tenant and scope of every source memory of each lift request (erased ones are gone: left out).

    What a lift's visibility and its approver are judged on (governance/lifting.py `lift_refusal`): a lift
    request shows its sources' content, so only a reader of every source may see it.
    """
    found: dict[str, list[MemoryTenant]] = {r: [] for r in request_ids}
    if not request_ids:
        return found
    rows = await conn.execute(
        text(
            """
            SELECT i.request_id::text AS request_id, m.id::text AS id, m.citation, m.org, m.project, m.scope
            FROM change_request_items i JOIN memories m ON m.id = i.memory_id
            WHERE i.request_id = ANY(CAST(:r AS uuid[]))
            ORDER BY i.request_id, i.position
            """
        ),
        {"r": list(request_ids)},
    )
    for r in rows:
        found[r.request_id].append(MemoryTenant(r.id, r.citation, r.org, r.project, r.scope))
    return found


async def carry_sources(conn: AsyncConnection, original_id: str, copy_id: str) -> None:
    """The copy builds on what its original built on (so it goes stale with them), and keeps a stale mark."""
    await conn.execute(
        text(
            """
            INSERT INTO memory_derivations (memory_id, derived_from_id, task_id)
            SELECT CAST(:copy AS uuid), derived_from_id, task_id FROM memory_derivations
            WHERE memory_id = CAST(:original AS uuid) AND derived_from_id <> CAST(:copy AS uuid)
            ON CONFLICT DO NOTHING
            """
        ),
        {"copy": copy_id, "original": original_id},
    )
    await conn.execute(
        text(
            """
            UPDATE memories c SET stale_at = o.stale_at, stale_reason = o.stale_reason
            FROM memories o
            WHERE c.id = CAST(:copy AS uuid) AND o.id = CAST(:original AS uuid) AND o.stale_at IS NOT NULL
            """
        ),
        {"copy": copy_id, "original": original_id},
    )


async def carry_bug_statistics(conn: AsyncConnection, original_id: str, copy_id: str) -> None:
    """A lifted bug pattern keeps its history: occurrences, first and last seen, fixes with their stats.

    (The publish counted the lift as one new occurrence; the original's record replaces that count.)
    """
    await conn.execute(
        text(
            """
            UPDATE bug_patterns c SET occurrences = o.occurrences, first_seen = o.first_seen,
                   last_seen = o.last_seen, solutions = o.solutions
            FROM bug_patterns o
            WHERE c.memory_id = CAST(:copy AS uuid) AND o.memory_id = CAST(:original AS uuid)
            """
        ),
        {"copy": copy_id, "original": original_id},
    )


@dataclass(frozen=True)
class Original:
    """A lift's original memory as it is now: its row, and whether it is active."""

    row: Any

    @property
    def active(self) -> bool:
        return bool(self.row.active)

    @property
    def scope_key(self) -> str:
        return str(self.row.scope_key)


async def originals(conn: AsyncConnection, ids: Sequence[str], *, lock: bool = False) -> dict[str, Original]:
    """The originals by id, each with whether it is active; `lock`: their rows locked for update."""
    active = (memories.c.deprecated_at.is_(None)) & (
        memories.c.expires_at.is_(None) | (memories.c.expires_at > text("now()"))
    )
    query = select(memories, active.label("active")).where(memories.c.id.in_(list(ids)))
    rows = await conn.execute(query.with_for_update(of=memories) if lock else query)
    return {str(r.id): Original(r) for r in rows}


async def carry_derived(conn: AsyncConnection, original_id: str, result_id: str) -> None:
    """What built on the original builds on what it became (no stale mark: the knowledge did not change)."""
    await conn.execute(
        text(
            """
            INSERT INTO memory_derivations (memory_id, derived_from_id, task_id)
            SELECT memory_id, CAST(:result AS uuid), task_id FROM memory_derivations
            WHERE derived_from_id = CAST(:original AS uuid) AND memory_id <> CAST(:result AS uuid)
            ON CONFLICT DO NOTHING
            """
        ),
        {"original": original_id, "result": result_id},
    )


async def mark_lifted(conn: AsyncConnection, original_id: str, note: str) -> None:
    """Deprecate the lifted original with a note naming its copy."""
    await conn.execute(
        update(memories)
        .where(memories.c.id == original_id, memories.c.deprecated_at.is_(None))
        .values(deprecated_at=text("now()"), contradiction_note=note, updated_at=text("now()"))
    )


async def record_item_outcome(
    conn: AsyncConnection, request_id: str, position: int, outcome: str, result_id: str
) -> None:
    """What became of one memory of the lift."""
    await conn.execute(
        update(change_request_items)
        .where(change_request_items.c.request_id == request_id, change_request_items.c.position == position)
        .values(outcome=outcome, result_memory_id=result_id)
    )
