"""Statements of publishing: the scopes' locks and expiry, and a candidate's neighbours.

What a candidate becomes (merge, supersede or insert) is decided and composed by
governance/operations/publishing.py; see governance/storage/memory_rows.py for the concurrency design
(advisory locks, unique indexes).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

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

__all__ = [
    "NeighbourProbe",
    "find_neighbours_many",
    "expire_in_scope",
    "lock_for_publication",
]


PROBES_PER_STATEMENT = 32


@dataclass(frozen=True)
class NeighbourProbe:
    """One candidate whose neighbours `find_neighbours_many` looks up: its hash, canonical key and vector."""

    content_hash: str
    canonical_key: str | None
    embedding: Sequence[float] | None


async def find_neighbours_many(
    conn: AsyncConnection,
    *,
    scope_keys: Sequence[str],
    target_scope_key: str,
    probes: Sequence[NeighbourProbe],
    k: int = NEIGHBOURS_K,
) -> list[list[Neighbour]]:
    """The neighbours of many candidates: for each probe (in order), the active memories of `scope_keys` with
    its hash, the canonical-key head, and its k nearest.

    The nearest are searched exactly within the visible scopes (a materialised CTE): pgvector 0.6's HNSW
    filters after the index scan and could miss a duplicate when other scopes dominate the index; a
    reader's visible set is small enough for an exact scan and dedup must not miss.

    The visible set is read once per `PROBES_PER_STATEMENT` probes (each statement's time stays that of a
    few single lookups, within the statement timeout however large the visible set); each probe's
    neighbours are at most k plus its exact and canonical-key matches, however many memories are close to it.
    """
    found: list[list[Neighbour]] = []
    for start in range(0, len(probes), PROBES_PER_STATEMENT):
        found += await _neighbours_of(
            conn,
            scope_keys=scope_keys,
            target_scope_key=target_scope_key,
            probes=probes[start : start + PROBES_PER_STATEMENT],
            k=k,
        )
    return found


async def _neighbours_of(
    conn: AsyncConnection,
    *,
    scope_keys: Sequence[str],
    target_scope_key: str,
    probes: Sequence[NeighbourProbe],
    k: int,
) -> list[list[Neighbour]]:
    rows = await conn.execute(
        text(
            """
            WITH visible AS MATERIALIZED (
                SELECT id, scope_key, canonical_key, content_hash, title, content, embedding, memory_type
                FROM memories
                WHERE scope_key = ANY(:keys) AND deprecated_at IS NULL
                  AND (expires_at IS NULL OR expires_at > now())
            ),
            probe AS MATERIALIZED (
                SELECT p.ord, p.hash, p.ck, CAST(p.emb AS vector) AS emb
                FROM jsonb_to_recordset(CAST(:probes AS jsonb)) AS p(ord int, hash text, ck text, emb text)
            )
            SELECT probe.ord, n.*
            FROM probe CROSS JOIN LATERAL (
                (SELECT v.id::text AS id, v.scope_key, v.canonical_key, v.content_hash, v.title, v.content,
                        v.memory_type,
                        CASE WHEN v.embedding IS NULL OR probe.emb IS NULL THEN 0.0
                             ELSE 1 - (v.embedding <=> probe.emb) END AS similarity
                   FROM visible AS v
                  WHERE v.content_hash = probe.hash OR (v.canonical_key = probe.ck AND v.scope_key = :target))
                UNION
                (SELECT v.id::text AS id, v.scope_key, v.canonical_key, v.content_hash, v.title, v.content,
                        v.memory_type,
                        CASE WHEN v.embedding IS NULL THEN 0.0
                             ELSE 1 - (v.embedding <=> probe.emb) END AS similarity
                   FROM visible AS v
                  WHERE probe.emb IS NOT NULL
                  ORDER BY v.embedding <=> probe.emb NULLS LAST LIMIT :k)
            ) AS n
            """
        ),
        {
            "keys": list(scope_keys),
            "target": target_scope_key,
            "k": k,
            "probes": json.dumps(
                [
                    {
                        "ord": i,
                        "hash": p.content_hash,
                        "ck": p.canonical_key,
                        "emb": vector_literal(p.embedding),
                    }
                    for i, p in enumerate(probes)
                ]
            ),
        },
    )
    found: list[list[Neighbour]] = [[] for _ in probes]
    for r in rows:
        found[int(r.ord)].append(
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
        )
    return found


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
    """What publishing does first in a transaction, once however many candidates it publishes.

    Lock the target scope (exclusive) and the wider visible ones (shared), and expire the target scope's
    memories whose time passed. Both hold for the rest of the transaction (advisory locks until commit,
    `now()` is the transaction's start), so `publish_candidate(..., locked=True)` and each chunk need not
    repeat them.
    """
    await lock_scopes(conn, scope_key, wider_scope_keys(scope, visible_scope_keys, scope_key))
    await expire_in_scope(conn, scope_key)
