"""Statements of publishing: the scopes' locks and expiry, and a candidate's neighbours.

What a candidate becomes (merge, supersede or insert) is decided and composed by
governance/operations/publishing.py; see governance/storage/memory_rows.py for the concurrency design
(advisory locks, unique indexes).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.dedup import Neighbour
from governance.embedding import EMBEDDING_DIM
from governance.errors import Conflict
from governance.storage.events import expired_event, record_events
from governance.storage.memory_rows import (
    NEIGHBOURS_K,
    MemoryInsert,
    lock_scopes,
    make_citation,
    wider_scope_keys,
)
from governance.storage.tables import vector_literal
from governance.storage.vector_params import vector_array
from governance.trust import MAX_CONFIDENCE, MIN_CONFIDENCE

__all__ = [
    "NeighbourProbe",
    "find_neighbours_many",
    "find_identical_many",
    "find_nearest_many",
    "insert_chunk_memories",
    "expire_in_scope",
    "lock_for_publication",
]


# probes whose k nearest one statement looks up: the visible set (ids and vectors only) is read once per
# statement, and each probe's exact scan over it is the statement's cost, so this bounds the statement's time
# by that of a few dozen single lookups however large the visible set (within the statement timeout)
PROBES_PER_STATEMENT = 64


@dataclass(frozen=True)
class NeighbourProbe:
    """One candidate whose neighbours `find_neighbours_many` looks up: its hash, canonical key and vector."""

    content_hash: str
    canonical_key: str | None
    embedding: Sequence[float] | None

    @functools.cached_property
    def vector(self) -> np.ndarray | None:
        """The vector as pgvector's binary form takes it (`vector_params`), made once however many
        statements send it."""
        return None if self.embedding is None else np.asarray(self.embedding, dtype=">f4")


async def find_neighbours_many(
    conn: AsyncConnection,
    *,
    scope_keys: Sequence[str],
    target_scope_key: str,
    probes: Sequence[NeighbourProbe],
    k: int = NEIGHBOURS_K,
) -> list[list[Neighbour]]:
    """The neighbours of many candidates: for each probe (in order), the active memories of `scope_keys` with
    its hash, the canonical-key head, and its k nearest (`find_identical_many` and `find_nearest_many`)."""
    identical = await find_identical_many(
        conn, scope_keys=scope_keys, target_scope_key=target_scope_key, probes=probes
    )
    nearest = await find_nearest_many(conn, scope_keys=scope_keys, probes=probes, k=k)
    return [_union(a, b) for a, b in zip(identical, nearest, strict=True)]


def _union(first: Sequence[Neighbour], second: Sequence[Neighbour]) -> list[Neighbour]:
    seen = {n.id for n in first}
    return [*first, *(n for n in second if n.id not in seen)]


async def _probe_params(conn: AsyncConnection, probes: Sequence[NeighbourProbe]) -> dict[str, Any]:
    """The probes as `_PROBES` reads them: hashes and keys as jsonb, vectors as one binary vector[]."""
    return {
        "probes": json.dumps(
            [{"ord": i, "hash": p.content_hash, "ck": p.canonical_key} for i, p in enumerate(probes)]
        ),
        "probe_vectors": await vector_array(conn, [p.vector for p in probes]),
    }


# a memory's vector is stored apart from its row (TOAST): the visible set adds this zero vector to each one,
# so that it is read once per statement, not once per probe (1,000 visible, 64 probes: 334 ms -> 46 ms)
_ZERO = vector_literal([0.0] * EMBEDDING_DIM)

_PROBES = """
    probe AS MATERIALIZED (
        SELECT p.ord, p.hash, p.ck, e.emb
        FROM jsonb_to_recordset(CAST(:probes AS jsonb)) AS p(ord int, hash text, ck text)
        JOIN unnest(CAST(:probe_vectors AS vector[])) WITH ORDINALITY AS e(emb, n) ON e.n = p.ord + 1
    )"""
_ACTIVE = "m.deprecated_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > now())"
_NEIGHBOUR = """m.id::text AS id, m.scope_key, m.canonical_key, m.content_hash, m.title, m.content,
                m.memory_type"""


async def find_identical_many(
    conn: AsyncConnection,
    *,
    scope_keys: Sequence[str],
    target_scope_key: str,
    probes: Sequence[NeighbourProbe],
) -> list[list[Neighbour]]:
    """For each probe (in order), the active memories of `scope_keys` with its content hash, and the head of
    its canonical key in the target scope: one statement for all probes, by index (however many memories
    are visible)."""
    if not probes:
        return []
    rows = await conn.execute(
        text(
            f"""
            WITH {_PROBES}
            SELECT probe.ord, {_NEIGHBOUR},
                   CASE WHEN m.embedding IS NULL OR probe.emb IS NULL THEN 0.0
                        ELSE 1 - (m.embedding <=> probe.emb) END AS similarity
            FROM probe JOIN memories AS m
              ON m.scope_key = ANY(:keys) AND m.content_hash = probe.hash AND {_ACTIVE}
            UNION
            SELECT probe.ord, {_NEIGHBOUR},
                   CASE WHEN m.embedding IS NULL OR probe.emb IS NULL THEN 0.0
                        ELSE 1 - (m.embedding <=> probe.emb) END AS similarity
            FROM probe JOIN memories AS m
              ON m.scope_key = :target AND m.canonical_key = probe.ck AND {_ACTIVE}
            """
        ),
        {"keys": list(scope_keys), "target": target_scope_key, **await _probe_params(conn, probes)},
    )
    return _grouped(rows, len(probes))


async def find_nearest_many(
    conn: AsyncConnection,
    *,
    scope_keys: Sequence[str],
    probes: Sequence[NeighbourProbe],
    k: int = NEIGHBOURS_K,
) -> list[list[Neighbour]]:
    """For each probe (in order), its k nearest active memories of `scope_keys` (none without a vector).

    Searched exactly within the visible scopes: pgvector's HNSW filters after the index scan and could miss a
    duplicate when other scopes dominate the index; a reader's visible set is small enough for an exact scan,
    and dedup must not miss. Each probe's neighbours are at most k, however many memories are close to it;
    the visible set's ids and vectors are read once per `PROBES_PER_STATEMENT` probes, their texts only for
    the neighbours found.
    """
    found: list[list[Neighbour]] = [[] for _ in probes]
    wanted = [n for n, p in enumerate(probes) if p.embedding is not None]
    if wanted and not await conn.scalar(
        text(f"SELECT EXISTS (SELECT 1 FROM memories AS m WHERE m.scope_key = ANY(:keys) AND {_ACTIVE})"),
        {"keys": list(scope_keys)},
    ):
        return found  # nothing visible yet (a first plan into a scope): no scan to make
    for start in range(0, len(wanted), PROBES_PER_STATEMENT):
        batch = wanted[start : start + PROBES_PER_STATEMENT]
        rows = await conn.execute(
            text(
                f"""
                WITH visible AS MATERIALIZED (
                    SELECT m.id, m.embedding + CAST(:zero AS vector) AS embedding FROM memories AS m
                    WHERE m.scope_key = ANY(:keys) AND {_ACTIVE}
                ),
                {_PROBES},
                near AS (
                    SELECT probe.ord, n.id, n.similarity
                    FROM probe CROSS JOIN LATERAL (
                        SELECT v.id,
                               CASE WHEN v.embedding IS NULL THEN 0.0
                                    ELSE 1 - (v.embedding <=> probe.emb) END AS similarity
                        FROM visible AS v
                        ORDER BY v.embedding <=> probe.emb NULLS LAST LIMIT :k
                    ) AS n
                )
                SELECT near.ord, {_NEIGHBOUR}, near.similarity
                FROM near JOIN memories AS m ON m.id = near.id
                """
            ),
            {
                "keys": list(scope_keys),
                "k": k,
                "zero": _ZERO,
                **await _probe_params(conn, [probes[n] for n in batch]),
            },
        )
        for n, neighbours in zip(batch, _grouped(rows, len(batch)), strict=True):
            found[n] = neighbours
    return found


def _grouped(rows: Iterable[Any], count: int) -> list[list[Neighbour]]:
    found: list[list[Neighbour]] = [[] for _ in range(count)]
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


# a chunk's new memories as one jsonb parameter (every column but the vector) and one vector[] parameter in
# pgvector's binary form, joined by their position: two parameters however many rows, where a multi-row
# VALUES has ~30 per row for SQLAlchemy to compile and psycopg to split, and a vector printed as text per row
_INSERT_CHUNK = """
    INSERT INTO memories (
        id, citation, memory_type, scope, scope_key, org, project, canonical_key, title, content, embedding,
        content_hash, confidence, base_confidence, validation_source, validation_count, last_validated_at,
        decay_policy, importance, reward, success, source_task_ids, source_entry_ids, related_ids,
        supersedes_id, valid_from_commit, expires_at, version, deprecated_at, contradiction_note,
        valid_to_commit
    )
    SELECT r.id, r.citation, r.memory_type, r.scope, r.scope_key, r.org, r.project, r.canonical_key,
           r.title, r.content, e.embedding, r.content_hash, r.confidence, r.confidence, r.validation_source,
           r.validation_count, now(), r.decay_policy, r.importance, r.reward, r.success,
           COALESCE(r.source_task_ids, '{}'), COALESCE(r.source_entry_ids, '{}'),
           COALESCE(r.related_ids, '{}'), r.supersedes_id, r.valid_from_commit, r.expires_at, r.version,
           CASE WHEN r.deprecated THEN now() END, r.contradiction_note, r.valid_to_commit
    FROM jsonb_to_recordset(CAST(:rows AS jsonb)) AS r(
        n bigint, id uuid, citation text, memory_type text, scope text, scope_key text, org text,
        project text, canonical_key text, title text, content text, content_hash text,
        confidence double precision, validation_source text, validation_count int, decay_policy text,
        importance double precision, reward double precision, success boolean, source_task_ids text[],
        source_entry_ids bigint[], related_ids uuid[], supersedes_id uuid, valid_from_commit text,
        expires_at timestamptz, version int, deprecated boolean, contradiction_note text,
        valid_to_commit text
    )
    JOIN unnest(CAST(:embeddings AS vector[])) WITH ORDINALITY AS e(embedding, n) ON e.n = r.n
    ORDER BY r.n
"""


async def insert_chunk_memories(conn: AsyncConnection, rows: Sequence[MemoryInsert]) -> list[str]:
    """A chunk's new memories in one statement of two parameters (`memory_rows.insert_memories`' rows, its
    values and its Conflict); their citations, in order. The lexicon's statement triggers run once."""
    if not rows:
        return []
    values: list[dict[str, Any]] = []
    for n, r in enumerate(rows, start=1):
        mem = r.mem
        values.append(
            {
                "n": n,
                "id": r.memory_id,
                "citation": make_citation(r.memory_id),
                "memory_type": mem.memory_type,
                "scope": mem.scope,
                "scope_key": mem.scope_key,
                "org": mem.org,
                "project": mem.project,
                "canonical_key": r.canonical_key,
                "title": mem.title,
                "content": mem.content,
                "content_hash": r.chash,
                "confidence": min(MAX_CONFIDENCE, max(MIN_CONFIDENCE, mem.confidence)),
                "validation_source": mem.validation_source,
                "validation_count": 1 if mem.validation_source else 0,
                "decay_policy": mem.decay_policy,
                "importance": mem.importance,
                "reward": mem.reward,
                "success": mem.success,
                "source_task_ids": list(mem.source_task_ids),
                "source_entry_ids": list(mem.source_entry_ids),
                "related_ids": list(r.related_ids),
                "supersedes_id": r.supersedes_id,
                "valid_from_commit": mem.valid_from_commit,
                "expires_at": mem.expires_at.isoformat() if mem.expires_at is not None else None,
                "version": r.version,
                "deprecated": r.deprecated_note is not None,
                "contradiction_note": r.deprecated_note,
                "valid_to_commit": r.valid_to_commit,
            }
        )
    embeddings = await vector_array(conn, [r.mem.embedding for r in rows])
    try:
        async with conn.begin_nested():
            await conn.execute(text(_INSERT_CHUNK), {"rows": json.dumps(values), "embeddings": embeddings})
    except IntegrityError as exc:
        raise Conflict("an active memory with one of these canonical keys already exists") from exc
    return [str(v["citation"]) for v in values]
