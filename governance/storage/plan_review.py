"""What an approver reads beside a plan item, so no id has to be looked up by hand.

- For a `supersede` or a `duplicate`: the published memory it replaces or merges into (`published_targets`),
  with its trust and the approval recorded when it was published. That approval is an APPROVED event: a
  promotion's (`<workflow id>:approved`, naming the memories it published) or a change request's or an
  approver's direct change (naming the superseded memory and, as `result`, this one). A memory published
  where no approval is required has none; its publication event still says who published it.
- For a `new` item: the nearest active memories at the promotion's target scope (`nearest_memories`), by
  cosine similarity of the item's stored embedding, searched exactly within that one scope (an HNSW scan
  filters after the index and could miss them). Memories this same plan published are left out, so a
  published plan does not list its own items as their nearest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.storage.plans import PlanKey

__all__ = ["PublishedTarget", "NearMemory", "published_targets", "nearest_memories", "NEAREST_K"]

NEAREST_K = 3


@dataclass(frozen=True)
class PublishedTarget:
    """A published memory as an approver weighs it: what it says, its trust, who published and approved it."""

    id: str
    citation: str
    title: str
    content: str
    scope: str
    scope_key: str
    org: str
    project: str | None
    confidence: float
    validation_count: int
    validation_source: str | None
    active: bool
    published_by: str | None
    published_at: datetime | None
    approved_by: str | None
    approved_by_type: str | None
    approved_at: datetime | None
    approval_note: str | None


@dataclass(frozen=True)
class NearMemory:
    """An active memory near a new plan item: its id, citation, title, trust and similarity."""

    id: str
    citation: str
    title: str
    similarity: float
    confidence: float
    scope: str
    org: str
    project: str | None


_TARGETS = text(
    """
    SELECT m.id::text AS id, m.citation, m.title, m.content, m.scope, m.scope_key, m.org, m.project,
           m.confidence, m.validation_count, m.validation_source, m.deprecated_at IS NULL AS active,
           pub.actor_id AS published_by, pub.created_at AS published_at,
           appr.actor_id AS approved_by, appr.actor_type AS approved_by_type,
           appr.created_at AS approved_at, appr.reason AS approval_note
    FROM memories m
    LEFT JOIN LATERAL (
        SELECT e.actor_id, e.created_at, e.workflow_id, e.payload
        FROM memory_events e
        WHERE e.memory_id = m.id AND e.event_type IN ('PROMOTED', 'SUPERSEDED')
        ORDER BY e.id
        LIMIT 1
    ) pub ON true
    LEFT JOIN LATERAL (
        SELECT a.actor_id, a.actor_type, a.created_at, a.reason
        FROM memory_events a
        WHERE a.event_type = 'APPROVED'
          AND (a.dedupe_key = pub.workflow_id || :approved_suffix
               OR (a.memory_id = CAST(pub.payload ->> 'old' AS uuid)
                   AND a.payload ->> 'result' = m.id::text))
        ORDER BY a.id
        LIMIT 1
    ) appr ON true
    WHERE m.id = ANY(CAST(:ids AS uuid[]))
    """
)


async def published_targets(conn: AsyncConnection, ids: Sequence[str]) -> dict[str, PublishedTarget]:
    """The memories `ids` (those that exist) with their trust, publisher and approval, by id."""
    wanted = sorted({i for i in ids if _is_uuid(i)})
    if not wanted:
        return {}
    # a promotion's approval event is keyed `<workflow id>:approved` (activities/promotion.py)
    rows = await conn.execute(_TARGETS, {"ids": wanted, "approved_suffix": ":approved"})
    return {
        r.id: PublishedTarget(
            id=r.id,
            citation=r.citation,
            title=r.title,
            content=r.content,
            scope=r.scope,
            scope_key=r.scope_key,
            org=r.org,
            project=r.project,
            confidence=float(r.confidence),
            validation_count=int(r.validation_count),
            validation_source=r.validation_source,
            active=bool(r.active),
            published_by=r.published_by,
            published_at=r.published_at,
            approved_by=r.approved_by,
            approved_by_type=r.approved_by_type,
            approved_at=r.approved_at,
            approval_note=r.approval_note,
        )
        for r in rows
    }


_NEAREST = text(
    """
    WITH scope AS MATERIALIZED (
        SELECT id, citation, title, confidence, scope, org, project, embedding
        FROM memories
        WHERE scope_key = :scope_key AND deprecated_at IS NULL AND embedding IS NOT NULL
          AND (expires_at IS NULL OR expires_at > now())
          AND NOT EXISTS (
              SELECT 1 FROM promotion_plan_items own
              WHERE own.workflow_id = :w AND own.run_id = :r AND own.memory_id = memories.id::text
          )
    )
    SELECT p.idx, n.id, n.citation, n.title, n.confidence, n.scope, n.org, n.project, n.similarity
    FROM promotion_plan_items p
    CROSS JOIN LATERAL (
        SELECT s.id::text AS id, s.citation, s.title, s.confidence, s.scope, s.org, s.project,
               1 - (s.embedding <=> p.embedding) AS similarity
        FROM scope s
        ORDER BY s.embedding <=> p.embedding
        LIMIT :k
    ) n
    WHERE p.workflow_id = :w AND p.run_id = :r AND p.idx = ANY(:idxs) AND p.embedding IS NOT NULL
    ORDER BY p.idx, n.similarity DESC
    """
)


async def nearest_memories(
    conn: AsyncConnection, key: PlanKey, indexes: Sequence[int], scope_key: str, k: int = NEAREST_K
) -> dict[int, list[NearMemory]]:
    """For each plan item in `indexes`, the `k` nearest active memories of `scope_key`, nearest first."""
    if not indexes or "\x00" in scope_key:
        return {}
    rows = await conn.execute(
        _NEAREST,
        {"scope_key": scope_key, "w": key.workflow_id, "r": key.run_id, "idxs": list(indexes), "k": k},
    )
    found: dict[int, list[NearMemory]] = {}
    for r in rows:
        found.setdefault(int(r.idx), []).append(
            NearMemory(
                id=r.id,
                citation=r.citation,
                title=r.title,
                similarity=float(r.similarity),
                confidence=float(r.confidence),
                scope=r.scope,
                org=r.org,
                project=r.project,
            )
        )
    return found


def _is_uuid(value: str) -> bool:
    parts = value.split("-")
    return [len(p) for p in parts] == [8, 4, 4, 4, 12] and all(
        c in "0123456789abcdefABCDEF" for p in parts for c in p
    )
