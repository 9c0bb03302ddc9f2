"""The migrated schema holds the invariants of docs/architecture.md."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine


async def test_schema_has_one_active_head_index(engine: AsyncEngine) -> None:
    async with engine.connect() as conn:
        indexdef = (
            await conn.execute(
                text("SELECT indexdef FROM pg_indexes WHERE indexname = 'memories_one_active_head'")
            )
        ).scalar_one()
    assert "UNIQUE" in indexdef and "deprecated_at IS NULL" in indexdef


async def test_schema_has_hnsw_index_on_embeddings(engine: AsyncEngine) -> None:
    async with engine.connect() as conn:
        indexdef = (
            await conn.execute(
                text("SELECT indexdef FROM pg_indexes WHERE indexname = 'memories_embedding_hnsw'")
            )
        ).scalar_one()
    assert "hnsw" in indexdef and "vector_cosine_ops" in indexdef
