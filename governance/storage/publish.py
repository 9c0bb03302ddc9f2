"""Statements of publishing: the scopes' locks and expiry, and a candidate's neighbours.

What a candidate becomes (merge, supersede or insert) is decided and composed by
governance/operations/publishing.py; see governance/storage/memory_rows.py for the concurrency design
(advisory locks, unique indexes).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.dedup import Neighbour
from governance.storage.events import expired_event, record_events
from governance.storage.memory_rows import (
    NEIGHBOURS_K,
    lock_scopes,
    wider_scope_keys,
)
from governance.storage.tables import vector_literal

__all__ = ["find_neighbours", "expire_in_scope", "lock_for_publication"]


async def find_neighbours(
    conn: AsyncConnection,
    *,
    scope_keys: Sequence[str],
    target_scope_key: str,
    content_hash: str,
    canonical_key: str | None,
    embedding: Sequence[float] | None,
    k: int = NEIGHBOURS_K,
) -> list[Neighbour]:
    """Active memories of `scope_keys` with the same hash, the canonical-key head, and the k nearest.

    The nearest are searched exactly within the visible scopes (a materialised CTE): pgvector 0.6's HNSW
    filters after the index scan and could miss a duplicate when other scopes dominate the index; a
    reader's visible set is small enough for an exact scan and dedup must not miss.
    """
    rows = await conn.execute(
        text(
            """
            WITH visible AS MATERIALIZED (
                SELECT id, scope_key, canonical_key, content_hash, title, content, embedding, memory_type
                FROM memories
                WHERE scope_key = ANY(:keys) AND deprecated_at IS NULL
                  AND (expires_at IS NULL OR expires_at > now())
            ),
            scored AS (
                SELECT id::text AS id, scope_key, canonical_key, content_hash, title, content, memory_type,
                       CASE WHEN embedding IS NULL OR CAST(:emb AS vector) IS NULL THEN 0.0
                            ELSE 1 - (embedding <=> CAST(:emb AS vector)) END AS similarity
                FROM visible
            )
            (SELECT * FROM scored
              WHERE content_hash = :hash OR (canonical_key = :ck AND scope_key = :target))
            UNION
            (SELECT * FROM scored WHERE CAST(:emb AS vector) IS NOT NULL
              ORDER BY similarity DESC LIMIT :k)
            """
        ),
        {
            "keys": list(scope_keys),
            "emb": vector_literal(embedding),
            "hash": content_hash,
            "ck": canonical_key,
            "target": target_scope_key,
            "k": k,
        },
    )
    return [
        Neighbour(
            id=r.id,
            scope_key=r.scope_key,
            canonical_key=r.canonical_key,
            content_hash=r.content_hash,
            similarity=float(r.similarity),
            title=r.title,
            content=r.content,
            memory_type=r.memory_type,
        )
        for r in rows
    ]


async def expire_in_scope(conn: AsyncConnection, scope_key: str) -> None:
    """Expire memories of one scope whose `expires_at` passed (a publisher must not see them as heads)."""
    expired = await conn.execute(
        text(
            """
            UPDATE memories SET deprecated_at = now(), updated_at = now()
            WHERE scope_key = :k AND deprecated_at IS NULL AND expires_at <= now()
            RETURNING id::text AS id, expires_at
            """
        ),
        {"k": scope_key},
    )
    await record_events(conn, [expired_event(r.id, r.expires_at) for r in expired])


async def lock_for_publication(
    conn: AsyncConnection, scope: str, scope_key: str, visible_scope_keys: list[str]
) -> None:
    """What `publish_candidate` does before each candidate, done once for a transaction publishing many.

    Lock the target scope (exclusive) and the wider visible ones (shared), and expire the target scope's
    memories whose time passed. Both hold for the rest of the transaction (advisory locks until commit,
    `now()` is the transaction's start), so `publish_candidate(..., locked=True)` need not repeat them.
    """
    await lock_scopes(conn, scope_key, wider_scope_keys(scope, visible_scope_keys, scope_key))
    await expire_in_scope(conn, scope_key)
