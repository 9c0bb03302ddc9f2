"""SQL of exports and restores: one scope's memories, their events and source staging, read in keyset pages;
rows written back with their own ids (governance/transfer.py describes the file).

Reads page by key (`created_at, id` for memories, `id` for events, `task_id, seq` for staging), so an export
of any size streams in bounded memory. A restore writes in the caller's transaction: memories (in the order
that puts every superseded memory before the one that supersedes it), derivations, bug patterns and events,
with their ids; then it moves the events' id sequence past the highest id it wrote.

Export files (version 1) name an event's idempotency key `dedupe_key`, the column's name when the format was
fixed; the column is `idempotency_key` now, and this module is where one spelling meets the other, so files
written before the rename restore as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import insert, select, text
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.storage.events import Event
from governance.storage.tables import bug_patterns, memories, memory_events, staging_entries

# the name an export file's event line gives the `idempotency_key` column (file format version 1)
FILE_KEY = "dedupe_key"

__all__ = [
    "FILE_KEY",
    "MEMORY_EXPORT_COLUMNS",
    "MemoryKey",
    "source_task_ids",
    "memory_page",
    "event_page",
    "staging_page",
    "entries_by_ids",
    "memories_by_ids",
    "citations_taken",
    "active_heads",
    "events_by_ids",
    "event_ids_by_idempotency_key",
    "existing_ids",
    "insert_memories",
    "insert_derivations",
    "insert_bug_patterns",
    "insert_events",
    "advance_event_ids",
    "insert_receipt",
    "database_contents",
]

# every column of `memories` but the embedding and the generated full-text vector
MEMORY_EXPORT_COLUMNS: tuple[str, ...] = tuple(
    c.name for c in memories.columns if c.name not in ("embedding", "tsv")
)
_UUID_COLUMNS = ("id", "supersedes_id")
# rows per INSERT of a restore: each statement stays well inside the per-statement timeout (HNSW upkeep
# costs ~ms a vector), however big the file
_WRITE_CHUNK = 200


@dataclass(frozen=True)
class MemoryKey:
    """Where a memory page ends: the next page starts after it."""

    created_at: datetime
    id: str


def _select_columns() -> str:
    parts = []
    for name in MEMORY_EXPORT_COLUMNS:
        if name in _UUID_COLUMNS:
            parts.append(f"m.{name}::text AS {name}")
        elif name == "related_ids":
            parts.append("CAST(m.related_ids AS text[]) AS related_ids")
        else:
            parts.append(f"m.{name}")
    return ", ".join(parts)


_COLUMNS_SQL = _select_columns()
# what a memory builds on, its bug-pattern row and an episode's structured fields, with it
_LINEAGE_SQL = """,
    COALESCE((SELECT array_agg(d.derived_from_id::text ORDER BY d.derived_from_id)
              FROM memory_derivations d WHERE d.memory_id = m.id), '{}') AS derived_from,
    (SELECT to_jsonb(b) - 'memory_id' FROM bug_patterns b WHERE b.memory_id = m.id) AS bug_pattern,
    (SELECT x.structure FROM episode_details x WHERE x.memory_id = m.id) AS episode"""


def _memory(row: Any) -> dict[str, Any]:
    memory = dict(row._mapping)
    memory["derived_from"] = list(memory["derived_from"] or [])
    memory["source_entry_ids"] = [int(i) for i in memory["source_entry_ids"] or []]
    memory["source_task_ids"] = list(memory["source_task_ids"] or [])
    memory["related_ids"] = list(memory["related_ids"] or [])
    return memory


async def source_task_ids(conn: AsyncConnection, scope_key: str) -> list[str]:
    """The tasks the memories of a scope came from (whose staging an export with staging would hold)."""
    rows = await conn.execute(
        text(
            "SELECT DISTINCT unnest(source_task_ids) AS task_id FROM memories WHERE scope_key = :k ORDER BY 1"
        ),
        {"k": scope_key},
    )
    return [r.task_id for r in rows]


async def memory_page(
    conn: AsyncConnection, scope_key: str, *, after: MemoryKey | None, limit: int
) -> list[dict[str, Any]]:
    """The scope's memories (every state) after `after`, oldest first, with `derived_from`, `bug_pattern`."""
    where = "m.scope_key = :k"
    params: dict[str, Any] = {"k": scope_key, "n": limit}
    if after is not None:
        where += " AND (m.created_at, m.id) > (:after_at, CAST(:after_id AS uuid))"
        params.update(after_at=after.created_at, after_id=after.id)
    sql = (
        f"SELECT {_COLUMNS_SQL}{_LINEAGE_SQL} FROM memories m WHERE {where} "
        "ORDER BY m.created_at, m.id LIMIT :n"
    )
    return [_memory(r) for r in (await conn.execute(text(sql), params)).all()]


async def memories_by_ids(conn: AsyncConnection, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Stored memories among `ids`, shaped as `memory_page` shapes them."""
    if not ids:
        return {}
    sql = f"SELECT {_COLUMNS_SQL}{_LINEAGE_SQL} FROM memories m WHERE m.id = ANY(CAST(:ids AS uuid[]))"
    rows = (await conn.execute(text(sql), {"ids": list(ids)})).all()
    return {r.id: _memory(r) for r in rows}


async def existing_ids(conn: AsyncConnection, ids: Sequence[str]) -> set[str]:
    """Which of `ids` are memories here."""
    if not ids:
        return set()
    rows = await conn.execute(
        text("SELECT id::text AS id FROM memories WHERE id = ANY(CAST(:ids AS uuid[]))"), {"ids": list(ids)}
    )
    return {r.id for r in rows}


async def citations_taken(conn: AsyncConnection, citations: dict[str, str]) -> dict[str, str]:
    """citation → id of the memory holding it here, for the citations of `citations` (citation → id) held
    by another memory."""
    if not citations:
        return {}
    rows = await conn.execute(
        text("SELECT citation, id::text AS id FROM memories WHERE citation = ANY(:c)"), {"c": list(citations)}
    )
    return {r.citation: r.id for r in rows if citations[r.citation] != r.id}


async def active_heads(conn: AsyncConnection, scope_key: str, keys: Sequence[str]) -> dict[str, str]:
    """canonical key → id of the active memory holding it in the scope (at most one each: an index)."""
    if not keys:
        return {}
    rows = await conn.execute(
        text(
            """SELECT canonical_key, id::text AS id FROM memories
               WHERE scope_key = :k AND canonical_key = ANY(:keys) AND deprecated_at IS NULL"""
        ),
        {"k": scope_key, "keys": sorted(set(keys))},
    )
    return {r.canonical_key: r.id for r in rows}


async def event_page(
    conn: AsyncConnection, scope_key: str, *, after_id: int, limit: int
) -> list[dict[str, Any]]:
    """Events of the scope's memories with an id above `after_id`, in id order."""
    rows = await conn.execute(
        text(
            """SELECT e.id, e.memory_id::text AS memory_id, e.event_type, e.actor_id, e.actor_type, e.task_id,
                      e.workflow_id, e.reason, e.payload, e.idempotency_key AS dedupe_key, e.created_at
               FROM memory_events e JOIN memories m ON m.id = e.memory_id
               WHERE m.scope_key = :k AND e.id > :after ORDER BY e.id LIMIT :n"""
        ),
        {"k": scope_key, "after": after_id, "n": limit},
    )
    return [dict(r._mapping) for r in rows]


async def events_by_ids(conn: AsyncConnection, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """Stored events among `ids`, shaped as `event_page` shapes them."""
    if not ids:
        return {}
    rows = await conn.execute(
        text(
            """SELECT id, memory_id::text AS memory_id, event_type, actor_id, actor_type, task_id,
                      workflow_id, reason, payload, idempotency_key AS dedupe_key, created_at
               FROM memory_events WHERE id = ANY(:ids)"""
        ),
        {"ids": list(ids)},
    )
    return {r.id: dict(r._mapping) for r in rows}


async def event_ids_by_idempotency_key(conn: AsyncConnection, keys: Sequence[str]) -> dict[str, int]:
    """idempotency key → id of the stored event holding it."""
    if not keys:
        return {}
    rows = await conn.execute(
        select(memory_events.c.idempotency_key, memory_events.c.id).where(
            memory_events.c.idempotency_key.in_(list(keys))
        )
    )
    return {r.idempotency_key: r.id for r in rows}


async def staging_page(
    conn: AsyncConnection, task_ids: Sequence[str], *, after: tuple[str, int] | None, limit: int
) -> list[dict[str, Any]]:
    """Staging entries of `task_ids` after (task id, seq), in that order."""
    if not task_ids:
        return []
    query = (
        select(staging_entries)
        .where(staging_entries.c.task_id.in_(list(task_ids)))
        .order_by(staging_entries.c.task_id, staging_entries.c.seq)
        .limit(limit)
    )
    if after is not None:
        query = query.where(
            text("(staging_entries.task_id, staging_entries.seq) > (:after_task, :after_seq)").bindparams(
                after_task=after[0], after_seq=after[1]
            )
        )
    return [dict(r._mapping) for r in (await conn.execute(query)).all()]


async def entries_by_ids(conn: AsyncConnection, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """Staging entries by id (a memory's provenance); archived or erased ones are simply absent."""
    if not ids:
        return {}
    rows = await conn.execute(
        text(
            """SELECT id, task_id, seq, actor_id, actor_type, kind, content, payload, created_at
               FROM staging_entries WHERE id = ANY(:ids)"""
        ),
        {"ids": sorted(set(ids))},
    )
    return {r.id: dict(r._mapping) for r in rows}


async def insert_memories(conn: AsyncConnection, rows: Sequence[dict[str, Any]]) -> None:
    """Insert memories as given (ids, trust, state), each with its `embedding`; the caller orders them."""
    for start in range(0, len(rows), _WRITE_CHUNK):
        await conn.execute(insert(memories), [dict(r) for r in rows[start : start + _WRITE_CHUNK]])


async def insert_derivations(conn: AsyncConnection, pairs: Sequence[tuple[str, str]]) -> None:
    """(memory id, id of what it builds on) pairs absent so far."""
    if pairs:
        await conn.execute(
            text(
                """INSERT INTO memory_derivations (memory_id, derived_from_id)
                   SELECT CAST(m AS uuid), CAST(s AS uuid)
                   FROM unnest(CAST(:m AS text[]), CAST(:s AS text[])) AS p(m, s)
                   ON CONFLICT DO NOTHING"""
            ),
            {"m": [p[0] for p in pairs], "s": [p[1] for p in pairs]},
        )


async def insert_bug_patterns(conn: AsyncConnection, rows: Sequence[dict[str, Any]]) -> None:
    """Bug-pattern rows (with `memory_id`) of restored memories."""
    for start in range(0, len(rows), _WRITE_CHUNK):
        await conn.execute(insert(bug_patterns), [dict(r) for r in rows[start : start + _WRITE_CHUNK]])


async def insert_events(conn: AsyncConnection, rows: Sequence[dict[str, Any]]) -> None:
    """Events with their own ids (an event line's `dedupe_key` is the `idempotency_key` column)."""
    for start in range(0, len(rows), _WRITE_CHUNK):
        await conn.execute(insert(memory_events), [_event_row(r) for r in rows[start : start + _WRITE_CHUNK]])


def _event_row(line: dict[str, Any]) -> dict[str, Any]:
    row = dict(line)
    if FILE_KEY in row:
        row["idempotency_key"] = row.pop(FILE_KEY)
    return row


async def insert_receipt(conn: AsyncConnection, event: Event) -> int:
    """Record one event and return its id (a restore's receipt)."""
    row = {**asdict(event), "event_type": event.event_type.value}
    result = await conn.execute(insert(memory_events).values(row).returning(memory_events.c.id))
    return int(result.scalar_one())


async def advance_event_ids(conn: AsyncConnection) -> None:
    """Move the events' id sequence past the highest stored id, so new events never take a restored id."""
    await conn.execute(
        text(
            "SELECT setval(pg_get_serial_sequence('memory_events', 'id'), "
            "GREATEST((SELECT max(id) FROM memory_events), 1))"
        )
    )


async def database_contents(conn: AsyncConnection) -> dict[str, int]:
    """What a database holds before a restore over it: its tables, and loregate's tasks and memories."""
    tables = [
        r.name
        for r in await conn.execute(
            text("SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")
        )
    ]
    contents = {"tables": len(tables)}
    for table in ("tasks", "memories", "principals"):
        if table in tables:
            count = await conn.execute(text(f"SELECT count(*) FROM {table}"))  # noqa: S608 - fixed names
            contents[table] = int(count.scalar_one())
    return contents
