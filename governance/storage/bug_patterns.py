"""Bug patterns' signatures and fix statistics (table `bug_patterns`), and matching an error against them.

`record_occurrence` runs in the publishing transaction (storage/publish.py), after a bug pattern was
inserted or a recurrence merged into it, so the counts move exactly when the memory does (a replayed
publication returns before it and counts nothing twice).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.bug_signature import ErrorSignature, add_attempt
from governance.storage.tables import vector_literal

__all__ = ["BugPatternMatch", "record_occurrence", "match_bug_patterns", "bug_pattern_stats"]


@dataclass(frozen=True)
class BugPatternMatch:
    """A published bug pattern close to an error: same signature, or near it by embedding."""

    id: str
    citation: str
    scope_key: str
    title: str
    content: str
    confidence: float
    error_type: str | None
    signature: str | None
    same_signature: bool
    similarity: float
    occurrences: int
    last_seen: datetime | None
    solutions: list[Any]


async def record_occurrence(
    conn: AsyncConnection,
    *,
    memory_id: str,
    scope_key: str,
    signature: ErrorSignature,
    solution: str | None,
    succeeded: bool,
    failed: Sequence[str] = (),
    reviewed: bool = False,
) -> None:
    """One more occurrence of the pattern `memory_id`: the fixes that did not hold (`failed`, one failed
    attempt each), and the solution the task ended with and its outcome; `reviewed` when a human approved
    the promotion reporting them (only such attempts make a merged fix guidance, governance/guidance.py)."""
    row = (
        await conn.execute(
            text("SELECT solutions FROM bug_patterns WHERE memory_id = CAST(:id AS uuid) FOR UPDATE"),
            {"id": memory_id},
        )
    ).first()
    stored: list[Any] = list(row.solutions) if row is not None else []
    solutions: list[Any] = stored
    for attempt in failed:
        solutions = add_attempt(solutions, attempt, succeeded=False, reviewed=reviewed)
    if solution:
        solutions = add_attempt(solutions, solution, succeeded=succeeded, reviewed=reviewed)
    await conn.execute(
        text(
            """
            INSERT INTO bug_patterns (memory_id, scope_key, error_type, signature, occurrences, solutions)
            VALUES (CAST(:id AS uuid), :scope_key, :error_type, :signature, 1, CAST(:solutions AS jsonb))
            ON CONFLICT (memory_id) DO UPDATE SET
                occurrences = bug_patterns.occurrences + 1,
                last_seen = now(),
                solutions = EXCLUDED.solutions
            """
        ),
        {
            "id": memory_id,
            "scope_key": scope_key,
            "error_type": signature.error_type,
            "signature": signature.text,
            "solutions": _json(solutions),
        },
    )


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


async def match_bug_patterns(
    conn: AsyncConnection,
    *,
    scope_keys: Sequence[str],
    signature: ErrorSignature,
    embedding: Sequence[float] | None,
    min_similarity: float,
    k: int,
) -> list[BugPatternMatch]:
    """Active bug patterns of `scope_keys`: same signature first, then the nearest over `min_similarity`."""
    rows = await conn.execute(
        text(
            """
            WITH visible AS MATERIALIZED (
                SELECT m.id, m.citation, m.scope_key, m.title, m.content, m.confidence, m.embedding,
                       b.error_type, b.signature, COALESCE(b.occurrences, 0) AS occurrences, b.last_seen,
                       COALESCE(b.solutions, '[]'::jsonb) AS solutions,
                       (m.canonical_key = :key) AS same_signature
                FROM memories m LEFT JOIN bug_patterns b ON b.memory_id = m.id
                WHERE m.scope_key = ANY(:keys) AND m.memory_type = 'bug_pattern' AND m.deprecated_at IS NULL
                  AND (m.expires_at IS NULL OR m.expires_at > now())
            ),
            scored AS (
                SELECT *, CASE WHEN embedding IS NULL OR CAST(:emb AS vector) IS NULL THEN 0.0
                               ELSE 1 - (embedding <=> CAST(:emb AS vector)) END AS similarity
                FROM visible
            )
            SELECT id::text AS id, citation, scope_key, title, content, confidence, error_type, signature,
                   occurrences, last_seen, solutions, same_signature, similarity
            FROM scored
            WHERE same_signature OR similarity >= :min_sim
            ORDER BY same_signature DESC, similarity DESC, occurrences DESC, id
            LIMIT :k
            """
        ),
        {
            "keys": list(scope_keys),
            "key": signature.key,
            "emb": vector_literal(embedding),
            "min_sim": min_similarity,
            "k": k,
        },
    )
    return [
        BugPatternMatch(
            id=r.id,
            citation=r.citation,
            scope_key=r.scope_key,
            title=r.title,
            content=r.content,
            confidence=float(r.confidence),
            error_type=r.error_type,
            signature=r.signature,
            same_signature=bool(r.same_signature),
            similarity=float(r.similarity),
            occurrences=int(r.occurrences),
            last_seen=r.last_seen,
            solutions=list(r.solutions),
        )
        for r in rows
    ]


async def bug_pattern_stats(
    conn: AsyncConnection, memory_ids: Sequence[str]
) -> dict[str, tuple[str, list[Any]]]:
    """(signature, solutions) of the bug patterns among `memory_ids` that have statistics."""
    if not memory_ids:
        return {}
    rows = await conn.execute(
        text(
            "SELECT memory_id::text AS id, signature, solutions FROM bug_patterns "
            "WHERE memory_id = ANY(CAST(:ids AS uuid[]))"
        ),
        {"ids": list(memory_ids)},
    )
    return {r.id: (r.signature, list(r.solutions)) for r in rows}
