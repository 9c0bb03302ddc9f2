"""Hybrid retrieval over published memories: pgvector HNSW + Postgres full text, fused by RRF, then ranked.

Only memories under the reader's scope keys are ever read (`storage/visible_memories.py`). The vector
retriever is here; the full-text one is `storage/fulltext.py`, the file neighbours
`storage/file_neighbours.py`.

Each retriever returns up to `candidates` ids; the union is fetched once and scored by
`governance.ranking` (relevance = normalised RRF, weighted by the intent's type preference, adjusted within
bounds by recency, importance × confidence and usefulness).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
from pgvector.sqlalchemy import Vector
from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.code_locations import locations_from_text
from governance.errors import NotFound
from governance.ranking import RankingParams, ScoreParts, score_parts, weighted_rrf
from governance.scopes import visible_scope_keys
from governance.storage.citations import INDEPENDENT_CITERS
from governance.storage.file_neighbours import NeighbourScope, file_neighbours
from governance.storage.fulltext import text_candidates
from governance.storage.memory_links import derivation_sources
from governance.storage.tables import EMBEDDING_DIM
from governance.storage.visible_memories import KEYS, TYPES, visible_filters

__all__ = [
    "ReaderScope",
    "SearchHit",
    "MemoryDetail",
    "reader_scope",
    "search",
    "rank_candidates",
    "ef_search_for",
    "vector_candidates",
    "TEXT_VOTE",
    "LOCATION_VOTE",
    "NEIGHBOUR_VOTE",
    "fuse",
    "record_retrievals",
    "get_memory",
    "parse_memory_ref",
]

# An exact match of every identifier in the query outvotes the embedding's first choice: e5 blurs LG-7731
# into LG-7713, Postgres does not.
TEXT_VOTE = 2.0
# A memory whose source task touched the files or symbols a search names (or whose text names them) is exact
# evidence too: it votes like a full identifier match (api/services/reading.py, `files` / `symbols`).
LOCATION_VOTE = 2.0
# An episode of the files the best matches touched votes like a location (`storage/file_neighbours.py`).
NEIGHBOUR_VOTE = LOCATION_VOTE

EF_SEARCH_FLOOR = 200
EF_SEARCH_MAX = 1000  # pgvector's maximum

_VECTOR = bindparam("q", type_=Vector(EMBEDDING_DIM))
_DEFAULT_PARAMS = RankingParams()

_MEMORY_COLUMNS = """id::text AS id, citation, memory_type, scope, scope_key, org, project, canonical_key,
    title, content, confidence, importance, validation_source, validation_count, last_validated_at,
    decay_policy, source_task_ids, source_entry_ids, supersedes_id::text AS supersedes_id, deprecated_at,
    contradiction_note, expires_at, retrieval_count, usefulness, version, created_at, updated_at,
    valid_from_commit, valid_to_commit, stale_at, stale_reason"""

# what `governance.ranking.score_parts` reads of every candidate (and the citation, the last tie-break)
_SCORING_COLUMNS = f"""id::text AS id, citation, memory_type, importance, confidence, usefulness,
    retrieval_count, updated_at, stale_at, {INDEPENDENT_CITERS} AS citers"""


@dataclass(frozen=True)
class ReaderScope:
    """The tenant and scope keys a task reads from (the task fixes worktree, project and org)."""

    task_id: str
    org: str
    project: str
    worktree: str

    @property
    def scope_keys(self) -> list[str]:
        """Scope keys visible from this task: task, worktree, project, org."""
        return visible_scope_keys(
            org=self.org, project=self.project, worktree=self.worktree, task_id=self.task_id
        )


@dataclass(frozen=True)
class SearchHit:
    """One ranked memory with the parts of its score and where each retriever placed it."""

    id: str
    citation: str
    memory_type: str
    scope: str
    scope_key: str
    title: str
    content: str
    confidence: float
    importance: float
    created_at: datetime
    updated_at: datetime
    deprecated_at: datetime | None
    expires_at: datetime | None
    cosine: float | None
    vector_rank: int | None
    text_rank: int | None
    parts: ScoreParts
    stale_at: datetime | None = None
    stale_reason: str | None = None

    @property
    def stale(self) -> bool:
        """A memory it builds on was superseded or retired since; a human has not confirmed it yet."""
        return self.stale_at is not None


@dataclass(frozen=True)
class MemoryDetail:
    """A memory in full, with the staging entries it came from and its supersession chain (oldest first)."""

    memory: dict[str, Any]
    provenance: list[dict[str, Any]] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)


async def reader_scope(conn: AsyncConnection, task_id: str) -> ReaderScope:
    """The task's tenant; NotFound for an unknown task."""
    row = (
        await conn.execute(text("SELECT org, project, worktree FROM tasks WHERE id = :id"), {"id": task_id})
    ).first()
    if row is None:
        raise NotFound(f"task {task_id!r} does not exist")
    return ReaderScope(task_id=task_id, org=row.org, project=row.project, worktree=row.worktree)


def ef_search_for(limit: int) -> int:
    """The HNSW walk's breadth for `limit` candidates: four times the limit, at least 200, at most 1000.

    Measured at 100,000 memories, 90 % of them visible to the reader, 50 candidates
    (tests/bench/retrieval_scale.py): ef_search 100 gave recall@10 0.969 against exact search, 200 gave 0.998
    (recall@50 0.992) in 5.2 ms, and 400 gave 0.999 in 12.1 ms. The floor keeps a small limit's walk as
    wide as 50 candidates' (10 candidates at ef_search 40: recall@10 0.917).
    """
    return min(EF_SEARCH_MAX, max(EF_SEARCH_FLOOR, 4 * limit))


async def vector_candidates(
    conn: AsyncConnection,
    query_vector: np.ndarray | Sequence[float],
    scope_keys: Sequence[str],
    *,
    limit: int,
    types: Sequence[str] | None = None,
    include_history: bool = False,
    ef_search: int | None = None,
) -> list[tuple[str, float]]:
    """(id, cosine similarity) nearest first, through the HNSW index.

    pgvector 0.6 filters *after* the index walk, so `hnsw.ef_search` (how many neighbours the walk keeps) is
    raised with the limit: `ef_search_for(limit)`. `SET LOCAL` semantics (set_config(..., true)) keep the
    setting inside this transaction.
    """
    ef = ef_search or ef_search_for(limit)
    await conn.execute(text("SELECT set_config('hnsw.ef_search', :ef, true)"), {"ef": str(ef)})
    sql = text(
        f"""SELECT id::text AS id, 1 - (embedding <=> :q) AS cosine FROM memories
        WHERE embedding IS NOT NULL AND {visible_filters(types, include_history)}
        ORDER BY embedding <=> :q LIMIT :limit"""
    ).bindparams(_VECTOR, KEYS, *([TYPES] if types else []))
    params: dict[str, Any] = {"q": np.asarray(query_vector, dtype=np.float32), "keys": list(scope_keys)}
    if types:
        params["types"] = list(types)
    rows = (await conn.execute(sql, {**params, "limit": limit})).all()
    return [(r.id, float(r.cosine)) for r in rows]


def fuse(
    by_vector: Sequence[tuple[str, float]],
    by_text: Sequence[tuple[str, float]],
    *,
    k: int,
    by_location: Sequence[tuple[str, float]] = (),
    by_neighbour: Sequence[tuple[str, float]] = (),
) -> dict[str, float]:
    """Query relevance in (0, 1]: RRF of the vector list (vote 1), the tie-ranked text list, the code
    locations' list and the file neighbours' list.

    Text hits vote `TEXT_VOTE` × coverage, so only a match of the query's identifiers outvotes the embedding;
    a memory of the files or symbols asked for votes `LOCATION_VOTE`, ranked by how often they were touched;
    an episode of the files the best matches touched votes `NEIGHBOUR_VOTE` × its strength's share of the
    strongest (`file_neighbours`).
    """
    top = max((strength for _, strength in by_neighbour), default=1.0) or 1.0
    return weighted_rrf(
        [
            [(i, cos, 1.0) for i, cos in by_vector],
            [(i, cov, TEXT_VOTE * cov) for i, cov in by_text],
            [(i, strength, LOCATION_VOTE) for i, strength in by_location],
            # each its own rank (the list is ordered newest first within a strength), voting by its share
            # of the strongest link: a memory sharing a common file with one weak match votes little
            [(i, -rank, NEIGHBOUR_VOTE * strength / top) for rank, (i, strength) in enumerate(by_neighbour)],
        ],
        k=k,
    )


async def search(
    conn: AsyncConnection,
    query_text: str,
    query_vector: np.ndarray | Sequence[float] | None,
    visible_scope_keys: Sequence[str],
    k: int,
    types: Sequence[str] | None = None,
    include_history: bool = False,
    *,
    params: RankingParams = _DEFAULT_PARAMS,
    candidates: int = 50,
    now: datetime | None = None,
) -> list[SearchHit]:
    """The `k` best memories for a query among `visible_scope_keys`, relevance first (`governance.ranking`).

    `query_vector` None searches by full text only (an embedder outage must not stop reads). The retrievers
    run one after the other on `conn`; `api.services.reading` runs them side by side on two connections.
    """
    if k <= 0:
        return []
    pool = max(candidates, k)
    by_vector = (
        await vector_candidates(
            conn, query_vector, visible_scope_keys, limit=pool, types=types, include_history=include_history
        )
        if query_vector is not None
        else []
    )
    by_text = await text_candidates(
        conn, query_text, visible_scope_keys, limit=pool, types=types, include_history=include_history
    )
    neighbours = NeighbourScope(
        tuple(visible_scope_keys),
        tuple(types) if types else None,
        include_history,
        named=locations_from_text(query_text).files,
    )
    return await rank_candidates(
        conn, by_vector, by_text, query_vector, k, params=params, now=now, neighbours=neighbours
    )


async def rank_candidates(
    conn: AsyncConnection,
    by_vector: Sequence[tuple[str, float]],
    by_text: Sequence[tuple[str, float]],
    query_vector: np.ndarray | Sequence[float] | None,
    k: int,
    *,
    params: RankingParams = _DEFAULT_PARAMS,
    now: datetime | None = None,
    by_location: Sequence[tuple[str, float]] = (),
    neighbours: NeighbourScope | None = None,
) -> list[SearchHit]:
    """The `k` best of the retrievers' candidates: fused (`fuse`), scored and sorted, then the `k` fetched.

    With `neighbours`, the fused order's best `neighbours.seeds` memories (weighted 1 / rank) and the files
    the query names (`neighbours.named`) lead to the episodes of those files (`file_neighbours`), and the
    candidates are fused again with them.
    Scoring reads the few columns `governance.ranking` needs for every candidate (up to a few hundred rows);
    titles, contents and the cosines the vector retriever did not give are fetched for the `k` kept only.
    """
    relevance = fuse(by_vector, by_text, k=params.rrf_k, by_location=by_location)
    named = neighbours is not None and neighbours.seeds > 0 and bool(neighbours.named)
    if (not relevance and not named) or k <= 0:
        return []
    if neighbours is not None and neighbours.seeds > 0:
        # the best matches name the code the query is about, and so do the files the query names
        best = sorted(relevance, key=lambda i: (-relevance[i], i))[: neighbours.seeds]
        by_neighbour = await file_neighbours(
            conn,
            [(i, 1.0 / rank) for rank, i in enumerate(best, start=1)],
            neighbours.scope_keys,
            types=neighbours.types,
            include_history=neighbours.include_history,
            decay=neighbours.decay,
            named=neighbours.named,
        )
        if by_neighbour:
            relevance = fuse(
                by_vector, by_text, k=params.rrf_k, by_location=by_location, by_neighbour=by_neighbour
            )
    if not relevance:  # nothing matched, and no episode touched the files the query names
        return []
    clock = now or datetime.now(UTC)
    scored = [
        (
            row.id,
            row.citation,
            # recency counts from the last change (a merge or validation refreshes a memory), not creation
            score_parts(
                similarity=relevance[row.id],
                when=row.updated_at,
                now=clock,
                importance=row.importance,
                confidence=row.confidence,
                usefulness=row.usefulness,
                retrievals=row.retrieval_count,
                citers=row.citers,
                memory_type=row.memory_type,
                params=params,
                stale=row.stale_at is not None,
            ),
        )
        for row in (
            await conn.execute(
                text(f"SELECT {_SCORING_COLUMNS} FROM memories WHERE id = ANY(CAST(:ids AS uuid[]))"),
                {"ids": list(relevance)},
            )
        ).all()
    ]
    scored.sort(key=lambda s: (-s[2].score, -s[2].similarity, s[1]))
    kept = scored[:k]
    cosines = dict(by_vector)
    rows = await _fetch(
        conn,
        [i for i, _, _ in kept],
        query_vector if any(i not in cosines for i, _, _ in kept) else None,
    )
    vector_rank = {i: r for r, (i, _) in enumerate(by_vector, start=1)}
    text_rank = {i: r for r, (i, _) in enumerate(by_text, start=1)}
    hits = []
    for memory_id, _, parts in kept:
        row = rows.get(memory_id)
        if row is None:  # pruned between the two reads
            continue
        hits.append(
            SearchHit(
                id=memory_id,
                citation=row["citation"],
                memory_type=row["memory_type"],
                scope=row["scope"],
                scope_key=row["scope_key"],
                title=row["title"],
                content=row["content"],
                confidence=row["confidence"],
                importance=row["importance"],
                created_at=row["created_at"],
                updated_at=row["updated_at"],
                deprecated_at=row["deprecated_at"],
                expires_at=row["expires_at"],
                cosine=cosines.get(memory_id, row["cosine"]),
                vector_rank=vector_rank.get(memory_id),
                text_rank=text_rank.get(memory_id),
                stale_at=row["stale_at"],
                stale_reason=row["stale_reason"],
                parts=parts,
            )
        )
    return hits


async def _fetch(
    conn: AsyncConnection, ids: list[str], query_vector: np.ndarray | Sequence[float] | None
) -> dict[str, dict[str, Any]]:
    """Memories by id, with their cosine to `query_vector` (None: no cosine)."""
    if not ids:
        return {}
    cosine = "1 - (embedding <=> :q)" if query_vector is not None else "NULL::float8"
    sql = text(
        f"SELECT {_MEMORY_COLUMNS}, {cosine} AS cosine FROM memories WHERE id = ANY(CAST(:ids AS uuid[]))"
    )
    params: dict[str, Any] = {"ids": ids}
    if query_vector is not None:
        sql = sql.bindparams(_VECTOR)
        params["q"] = np.asarray(query_vector, dtype=np.float32)
    return {r.id: dict(r._mapping) for r in (await conn.execute(sql, params)).all()}


async def record_retrievals(conn: AsyncConnection, ids: Sequence[str]) -> int:
    """Count one retrieval for each id in one statement; returns the rows touched.

    A counter, not a governance change: it writes no memory event and leaves `updated_at` (recency) alone.
    """
    if not ids:
        return 0
    result = await conn.execute(
        text(
            "UPDATE memories SET retrieval_count = retrieval_count + 1 WHERE id = ANY(CAST(:ids AS uuid[]))"
        ),
        {"ids": sorted(set(ids))},  # a fixed order: concurrent batches lock rows alike, no deadlock
    )
    return int(result.rowcount or 0)


def parse_memory_ref(ref: str) -> tuple[str, str]:
    """("id", uuid) or ("citation", short id) from `mem:abc123`, `abc123` or a UUID."""
    value = ref.strip()
    if value.startswith("[") and value.endswith("]"):
        value = value[1:-1]
    if value.lower().startswith("mem:"):
        value = value[4:]
    try:
        return "id", str(uuid.UUID(value))
    except ValueError:
        return "citation", value


async def get_memory(conn: AsyncConnection, ref: str) -> MemoryDetail:
    """A memory by id or citation, with provenance and supersession history; NotFound if unknown."""
    column, value = parse_memory_ref(ref)
    where = "id = CAST(:v AS uuid)" if column == "id" else "citation = :v"
    row = (
        await conn.execute(
            text(
                f"SELECT {_MEMORY_COLUMNS}, CAST(related_ids AS text[]) AS related_ids "
                f"FROM memories WHERE {where}"
            ),
            {"v": value},
        )
    ).first()
    if row is None:
        raise NotFound(f"memory {ref!r} does not exist")
    memory = dict(row._mapping)
    # what it builds on (citations): when one of them changes, this memory goes stale
    memory["derived_from"] = (await derivation_sources(conn, [memory["id"]])).get(memory["id"], [])

    provenance = [
        dict(r._mapping)
        for r in (
            await conn.execute(
                text(
                    """SELECT id, task_id, seq, actor_id, actor_type, kind, content, payload, created_at
                    FROM staging_entries WHERE id = ANY(:ids) ORDER BY id"""
                ),
                {"ids": list(memory["source_entry_ids"] or [])},
            )
        ).all()
    ]
    history = [
        dict(r._mapping)
        for r in (
            await conn.execute(
                text(
                    """WITH RECURSIVE older(id, depth) AS (
                        SELECT supersedes_id, 1 FROM memories WHERE id = CAST(:id AS uuid)
                        UNION ALL
                        SELECT m.supersedes_id, o.depth + 1 FROM memories m JOIN older o ON m.id = o.id
                        WHERE o.depth < 1000
                    ), newer(id, depth) AS (
                        SELECT id, 1 FROM memories WHERE supersedes_id = CAST(:id AS uuid)
                        UNION ALL
                        SELECT m.id, n.depth + 1 FROM memories m JOIN newer n ON m.supersedes_id = n.id
                        WHERE n.depth < 1000
                    ), chain(id, pos) AS (
                        SELECT id, -depth FROM older WHERE id IS NOT NULL
                        UNION ALL SELECT CAST(:id AS uuid), 0
                        UNION ALL SELECT id, depth FROM newer
                    )
                    SELECT m.id::text AS id, m.citation, m.title, m.version, m.created_at, m.deprecated_at,
                           m.contradiction_note, m.supersedes_id::text AS supersedes_id, c.pos = 0 AS is_this
                    FROM chain c JOIN memories m ON m.id = c.id ORDER BY c.pos"""
                ),
                {"id": memory["id"]},
            )
        ).all()
    ]
    return MemoryDetail(memory=memory, provenance=provenance, history=history)
