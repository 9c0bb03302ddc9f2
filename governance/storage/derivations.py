"""What published memories build on, and the stale marks that follow a source's change.

- `record_derivations` writes the links a promotion's publish found (`governance.validity.derivation_links`),
  in the publish transaction; a replay writes nothing twice (the pair is the primary key).
- `mark_derived_stale` runs in the transaction that supersedes or retires a memory: every active memory
  derived from it gets `stale_at` / `stale_reason` and one STALE event naming the cause. A supersession also
  carries the links to the successor, so a memory a human confirms stays tied to the current head and goes
  stale again when that head changes.
- `stale_memories` is the review list; `confirm_memory` clears a stale mark with a CONFIRMED event.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.errors import Conflict, NotFound
from governance.redaction import redact_free_text
from governance.storage.events import Event, EventType, record_event, record_events
from governance.storage.memory_links import derivation_sources

__all__ = [
    "StaleMemory",
    "record_derivations",
    "mark_derived_stale",
    "derived_from_any",
    "stale_memories",
    "confirm_memory",
]

REVIEW_LIMIT = 500


@dataclass(frozen=True)
class StaleMemory:
    """A stale memory as the review list shows it: what it is, why it is stale, what it builds on."""

    id: str
    citation: str
    memory_type: str
    scope: str
    scope_key: str
    org: str
    project: str | None
    title: str
    stale_at: datetime
    stale_reason: str | None
    derived_from: list[str]


async def record_derivations(
    conn: AsyncConnection, links: Sequence[tuple[str, str]], *, task_id: str | None
) -> int:
    """Link each (memory, source) pair; returns how many links are new."""
    if not links:
        return 0
    result = await conn.execute(
        text(
            """
            INSERT INTO memory_derivations (memory_id, derived_from_id, task_id)
            SELECT CAST(d AS uuid), CAST(s AS uuid), :task
            FROM unnest(CAST(:derived AS text[]), CAST(:sources AS text[])) AS l(d, s)
            ON CONFLICT DO NOTHING
            """
        ),
        {"derived": [d for d, _ in links], "sources": [s for _, s in links], "task": task_id},
    )
    return int(result.rowcount or 0)


async def derived_from_any(conn: AsyncConnection, ids: Sequence[str]) -> set[str]:
    """Which of `ids` something was derived from (what `mark_derived_stale` would find anything for)."""
    if not ids:
        return set()
    rows = await conn.execute(
        text(
            "SELECT DISTINCT derived_from_id::text AS id FROM memory_derivations "
            "WHERE derived_from_id = ANY(CAST(:ids AS uuid[]))"
        ),
        {"ids": sorted(set(ids))},
    )
    return {r.id for r in rows}


async def mark_derived_stale(
    conn: AsyncConnection,
    source_id: str,
    *,
    cause: str,
    reason: str | None,
    actor_id: str | None,
    actor_type: str | None,
    successor_id: str | None = None,
    task_id: str | None = None,
    workflow_id: str | None = None,
    exclude: Sequence[str] = (),
) -> list[str]:
    """Mark the active memories derived from `source_id` stale because it was `cause`d; returns their ids.

    A memory already stale keeps its first mark (it is on the review list already) and gets no new event;
    those in `exclude` (going in the same transaction, e.g. pruned with it) are left alone.
    """
    if successor_id is not None:
        await conn.execute(
            text(
                """
                INSERT INTO memory_derivations (memory_id, derived_from_id, task_id)
                SELECT memory_id, CAST(:successor AS uuid), task_id FROM memory_derivations
                WHERE derived_from_id = CAST(:source AS uuid) AND memory_id <> CAST(:successor AS uuid)
                ON CONFLICT DO NOTHING
                """
            ),
            {"source": source_id, "successor": successor_id},
        )
    source = (
        await conn.execute(
            text("SELECT citation FROM memories WHERE id = CAST(:id AS uuid)"), {"id": source_id}
        )
    ).first()
    citation = source.citation if source is not None else source_id
    note = f"mem:{citation} it builds on was {cause}" + (f": {reason}" if reason else "")
    rows = await conn.execute(
        text(
            """
            UPDATE memories m SET stale_at = now(), stale_reason = :note
            FROM memory_derivations d
            WHERE d.derived_from_id = CAST(:source AS uuid) AND m.id = d.memory_id
              AND m.deprecated_at IS NULL AND m.stale_at IS NULL
              AND NOT (m.id::text = ANY(CAST(:exclude AS text[])))
            RETURNING m.id::text AS id
            """
        ),
        {"source": source_id, "note": (redact_free_text(note) or "")[:2000], "exclude": list(exclude)},
    )
    marked = sorted(r.id for r in rows)
    await record_events(
        conn,
        [
            Event(
                event_type=EventType.STALE,
                actor_id=actor_id,
                actor_type=actor_type,
                memory_id=memory_id,
                reason=note[:2000],
                payload={
                    "cause": cause,
                    "source": source_id,
                    "source_citation": citation,
                    "successor": successor_id,
                },
                task_id=task_id,
                workflow_id=workflow_id,
            )
            for memory_id in marked
        ],
    )
    return marked


async def stale_memories(
    conn: AsyncConnection, *, org: str, project: str | None, scope_key: str | None, limit: int = REVIEW_LIMIT
) -> list[StaleMemory]:
    """Active stale memories of a tenant (a project-bound caller: its project and the org scope), oldest mark
    first; the caller filters them by what the policy lets it read."""
    rows = (
        await conn.execute(
            text(
                """
                SELECT id::text AS id, citation, memory_type, scope, scope_key, org, project, title,
                       stale_at, stale_reason
                FROM memories
                WHERE org = :org AND stale_at IS NOT NULL AND deprecated_at IS NULL
                  AND (CAST(:project AS text) IS NULL OR project IS NULL OR project = :project)
                  AND (CAST(:key AS text) IS NULL OR scope_key = :key)
                ORDER BY stale_at, id LIMIT :limit
                """
            ),
            {"org": org, "project": project, "key": scope_key, "limit": limit},
        )
    ).all()
    sources = await derivation_sources(conn, [r.id for r in rows])
    return [
        StaleMemory(
            id=r.id,
            citation=r.citation,
            memory_type=r.memory_type,
            scope=r.scope,
            scope_key=r.scope_key,
            org=r.org,
            project=r.project,
            title=r.title,
            stale_at=r.stale_at,
            stale_reason=r.stale_reason,
            derived_from=sources.get(r.id, []),
        )
        for r in rows
    ]


async def confirm_memory(
    conn: AsyncConnection, memory_id: str, *, note: str | None, actor_id: str, actor_type: str
) -> str | None:
    """Clear a stale mark with a CONFIRMED event; returns the reason it was stale.

    Conflict when the memory is not stale (nothing to confirm) or is deprecated; NotFound when unknown.
    """
    row = (
        await conn.execute(
            text(
                """
                UPDATE memories m SET stale_at = NULL, stale_reason = NULL, last_validated_at = now()
                FROM (SELECT id, stale_reason FROM memories WHERE id = CAST(:id AS uuid) FOR UPDATE) old
                WHERE m.id = old.id AND m.stale_at IS NOT NULL AND m.deprecated_at IS NULL
                RETURNING old.stale_reason
                """
            ),
            {"id": memory_id},
        )
    ).first()
    if row is None:
        state = (
            await conn.execute(
                text("SELECT deprecated_at FROM memories WHERE id = CAST(:id AS uuid)"), {"id": memory_id}
            )
        ).first()
        if state is None:
            raise NotFound(f"memory {memory_id} not found")
        if state.deprecated_at is not None:
            raise Conflict(f"memory {memory_id} is deprecated; only an active memory can be confirmed")
        raise Conflict(f"memory {memory_id} is not stale; there is nothing to confirm")
    await record_event(
        conn,
        event_type=EventType.CONFIRMED,
        actor_id=actor_id,
        actor_type=actor_type,
        memory_id=memory_id,
        reason=note or "confirmed still true",
        payload={"was_stale": row.stale_reason},
    )
    return str(row.stale_reason) if row.stale_reason is not None else None
