"""The embedding cache: (embedder model, sha256 of the exact text) → vector, shared by every promotion.

A text is embedded once per model: a promotion's plan (governance/operations/promotion_plan.py) and an
import look their texts up here first and remember what they had to embed. The key is the exact text's
digest (`text_digest`), since the model sees the text as it is. An erasure or a pruning deletes the rows of
the texts it removes (storage/erasure.py, storage/retention.py). Migration 0004 creates the table.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence

from pgvector.sqlalchemy import Vector
from sqlalchemy import Column, DateTime, String, Table, Text, func, select, text
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.storage.tables import EMBEDDING_DIM, metadata
from governance.storage.vector_params import from_vector_bytes, vector_array, vector_bytes

__all__ = ["embedding_cache", "text_digest", "cached_vectors", "cache_vectors"]

embedding_cache = Table(
    "embedding_cache",
    metadata,
    Column("model", Text, primary_key=True),
    Column("text_sha256", String(64), primary_key=True),
    Column("embedding", Vector(EMBEDDING_DIM), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)


def text_digest(text: str) -> str:
    """sha256 (hex) of the exact text: the embedding cache's key (the model sees the text as it is)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


async def cached_vectors(conn: AsyncConnection, model: str, digests: Iterable[str]) -> dict[str, list[float]]:
    """The cached vectors of `model` among `digests` (text_digest of each text)."""
    wanted = sorted(set(digests))
    if not wanted:
        return {}
    rows = await conn.execute(
        select(embedding_cache.c.text_sha256, vector_bytes(embedding_cache.c.embedding).label("v")).where(
            embedding_cache.c.model == model, embedding_cache.c.text_sha256.in_(wanted)
        )
    )
    return {r.text_sha256: from_vector_bytes(r.v) or [] for r in rows}


async def cache_vectors(conn: AsyncConnection, model: str, vectors: Mapping[str, Sequence[float]]) -> None:
    """Remember vectors of `model` by text digest (a concurrent writer's identical row wins quietly): one
    statement, the vectors as one binary vector[] (storage/vector_params.py)."""
    if not vectors:
        return
    ordered = sorted(vectors.items())
    await conn.execute(
        text(
            """
            INSERT INTO embedding_cache (model, text_sha256, embedding)
            SELECT :model, d.digest, e.embedding
            FROM unnest(CAST(:digests AS text[])) WITH ORDINALITY AS d(digest, n)
            JOIN unnest(CAST(:embeddings AS vector[])) WITH ORDINALITY AS e(embedding, n) ON e.n = d.n
            ORDER BY d.digest
            ON CONFLICT (model, text_sha256) DO NOTHING
            """
        ),
        {
            "model": model,
            "digests": [digest for digest, _ in ordered],
            "embeddings": await vector_array(conn, [vector for _, vector in ordered]),
        },
    )
