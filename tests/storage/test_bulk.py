"""Bulk loading on real Postgres+pgvector: COPY with events, one index build, search over what was loaded."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import numpy as np
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.storage.bulk import BulkMemory, analyze_memories, build_embedding_index, copy_memories
from governance.storage.retrieval import search

DIM = 384


def _unit(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def _rows(org: str, n: int) -> list[BulkMemory]:
    now = datetime.now(UTC)
    return [
        BulkMemory(
            id=str(uuid.uuid4()),
            citation=uuid.uuid4().hex[:12],
            memory_type="fact",
            scope="project",
            scope_key=f"project:{org}/alpha",
            org=org,
            project="alpha",
            title=f"Service {i}",
            content=f"Service {i} of {org} keeps its cache for {i + 5} seconds (bulkmarker{i})",
            embedding=_unit(i),
            confidence=0.6,
            importance=0.5,
            created_at=now,
            updated_at=now,
        )
        for i in range(n)
    ]


async def test_copy_memories_writes_rows_with_events_and_search_finds_them(engine: AsyncEngine) -> None:
    org = f"bulk-{uuid.uuid4().hex[:8]}"
    rows = _rows(org, 40)
    async with engine.begin() as conn:
        written = await copy_memories(conn, rows, actor_id="importer", actor_type="system", reason="import")
        await build_embedding_index(conn)
        await analyze_memories(conn)
    keys = [f"project:{org}/alpha"]
    async with engine.begin() as conn:
        events = (
            await conn.execute(
                text(
                    "SELECT count(*) FROM memory_events WHERE event_type = 'PROMOTED' "
                    "AND memory_id = ANY(CAST(:ids AS uuid[])) AND actor_id = 'importer'"
                ),
                {"ids": [r.id for r in rows]},
            )
        ).scalar_one()
        hits = await search(conn, "cache seconds bulkmarker7", rows[7].embedding, keys, 3)
        index = (
            await conn.execute(
                text("SELECT indexdef FROM pg_indexes WHERE indexname = 'memories_embedding_hnsw'")
            )
        ).scalar_one()
        stored = (
            await conn.execute(text("SELECT embedding FROM memories WHERE id = :id"), {"id": rows[0].id})
        ).scalar_one()

    assert written == 40 and events == 40
    assert hits[0].id == rows[7].id and hits[0].cosine is not None and hits[0].cosine > 0.999
    assert "hnsw" in index and "m='16'" in index.replace(" ", "")
    # the vector adapters stayed on the COPY's cursor: the pooled connection still reads vectors as text
    assert isinstance(stored, str)


async def test_copy_memories_is_all_or_nothing(engine: AsyncEngine) -> None:
    org = f"bulk-{uuid.uuid4().hex[:8]}"
    rows = _rows(org, 5)
    duplicate = rows + [rows[0]]  # the same id twice: the primary key refuses the whole COPY
    try:
        async with engine.begin() as conn:
            await copy_memories(conn, duplicate, actor_id="importer", actor_type="system", reason="import")
    except Exception as exc:  # noqa: BLE001 - the driver's unique violation
        assert "duplicate key" in str(exc)
    else:
        raise AssertionError("a duplicate id was accepted")
    async with engine.begin() as conn:
        left = (
            await conn.execute(text("SELECT count(*) FROM memories WHERE org = :org"), {"org": org})
        ).scalar_one()
    assert left == 0
