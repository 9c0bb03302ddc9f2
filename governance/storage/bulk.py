"""Bulk loading of already-governed memories (imports, benchmarks): binary COPY, then one index build.

Publishing memory one row at a time (`storage/publish.py`) decides duplicates and supersession under a lock;
an import of memories that were governed elsewhere, or a benchmark corpus of 100,000, needs none of that and
would take minutes. `copy_memories` writes the rows with binary COPY and one PROMOTED event per memory through
`record_events` (the event log stays complete and keeps its one writer), in the caller's transaction.
Growing the HNSW index row by row is far slower than building it once, so a large load drops the index
first (`drop_embedding_index`), rebuilds it (`build_embedding_index`, the schema's parameters) and
analyses the table (`analyze_memories`): without fresh statistics the planner may choose a sequential scan
over the new rows, and search falls from < 1 ms to tens of milliseconds.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

import numpy as np
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.dedup import content_hash
from governance.storage.events import Event, EventType, record_events

__all__ = [
    "BulkMemory",
    "copy_memories",
    "drop_embedding_index",
    "build_embedding_index",
    "analyze_memories",
    "HNSW_M",
    "HNSW_EF_CONSTRUCTION",
]

# the schema's HNSW parameters (migration 0001)
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64

_COLUMNS = (
    "id",
    "citation",
    "memory_type",
    "scope",
    "scope_key",
    "org",
    "project",
    "title",
    "content",
    "embedding",
    "content_hash",
    "confidence",
    "importance",
    "created_at",
    "updated_at",
    "deprecated_at",
)
_TYPES = (
    "uuid",
    "varchar",
    "varchar",
    "varchar",
    "text",
    "text",
    "text",
    "text",
    "text",
    "vector",
    "varchar",
    "float8",
    "float8",
    "timestamptz",
    "timestamptz",
    "timestamptz",
)
# events go in batches: one statement, many rows (psycopg pipelines them)
_EVENT_BATCH = 5_000


@dataclass(frozen=True)
class BulkMemory:
    """One published memory as a bulk load writes it (the other columns take their defaults)."""

    id: str
    citation: str
    memory_type: str
    scope: str
    scope_key: str
    org: str
    project: str | None
    title: str
    content: str
    embedding: np.ndarray
    confidence: float
    importance: float
    created_at: datetime
    updated_at: datetime
    deprecated_at: datetime | None = None  # a superseded or retired memory, kept for history


async def copy_memories(
    conn: AsyncConnection, rows: Iterable[BulkMemory], *, actor_id: str, actor_type: str, reason: str
) -> int:
    """COPY `rows` into memories, one PROMOTED event each, in the caller's transaction; returns the count."""
    from pgvector.psycopg.vector import register_vector_info
    from psycopg.types import TypeInfo

    raw = await conn.get_raw_connection()
    driver = cast(Any, raw.driver_connection)
    info = await TypeInfo.fetch(driver, "vector")
    ids: list[str] = []
    # the vector adapters are registered on this cursor only: pooled connections keep text vectors
    async with driver.cursor() as cur:
        register_vector_info(cur, info)
        columns = ", ".join(_COLUMNS)
        async with cur.copy(f"COPY memories ({columns}) FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(list(_TYPES))
            for row in rows:
                await copy.write_row(
                    [
                        uuid.UUID(row.id),
                        row.citation,
                        row.memory_type,
                        row.scope,
                        row.scope_key,
                        row.org,
                        row.project,
                        row.title,
                        row.content,
                        np.asarray(row.embedding, dtype=np.float32),
                        content_hash(row.content),
                        row.confidence,
                        row.importance,
                        row.created_at,
                        row.updated_at,
                        row.deprecated_at,
                    ]
                )
                ids.append(row.id)
    for start in range(0, len(ids), _EVENT_BATCH):
        events = [
            Event(
                EventType.PROMOTED, actor_id, actor_type, memory_id=i, reason=reason, payload={"bulk": True}
            )
            for i in ids[start : start + _EVENT_BATCH]
        ]
        await record_events(conn, events)
    return len(ids)


async def drop_embedding_index(conn: AsyncConnection) -> None:
    """Drop the HNSW index before a large load (rebuild it with `build_embedding_index`)."""
    await conn.execute(text("DROP INDEX IF EXISTS memories_embedding_hnsw"))


async def build_embedding_index(
    conn: AsyncConnection,
    *,
    m: int = HNSW_M,
    ef_construction: int = HNSW_EF_CONSTRUCTION,
    maintenance_work_mem_mb: int = 512,
) -> None:
    """(Re)build the HNSW index on memories.embedding; a graph that fits in memory builds much faster."""
    await conn.execute(text("DROP INDEX IF EXISTS memories_embedding_hnsw"))
    await conn.execute(text(f"SET LOCAL maintenance_work_mem = '{int(maintenance_work_mem_mb)}MB'"))
    await conn.execute(
        text(
            "CREATE INDEX memories_embedding_hnsw ON memories USING hnsw (embedding vector_cosine_ops) "
            f"WITH (m = {int(m)}, ef_construction = {int(ef_construction)})"
        )
    )


async def analyze_memories(conn: AsyncConnection) -> None:
    """Refresh the planner's statistics of memories (after a bulk load, before the first search)."""
    await conn.execute(text("ANALYZE memories"))
