"""What an approver reads beside a plan item, so no id has to be looked up by hand.

- For a `supersede` or a `duplicate`: the published memory it replaces or merges into (`published_targets`),
  with its trust and the approval recorded when it was published. That approval is an APPROVED event: a
  promotion's (`<workflow id>:approved`, naming the memories it published) or a change request's or an
  approver's direct change (naming the superseded memory and, as `result`, this one). A memory published
  where no approval is required has none; its publication event still says who published it.
- For a `new` item: the nearest active memories at the promotion's target scope (`nearest_memories`), by
  cosine similarity of the item's stored embedding. Memories this same plan published are left out, so a
  published plan does not list its own items as their nearest. A scope of up to `EXACT_SCAN_LIMIT`
  memories is scanned exactly; a larger one is searched through the HNSW index (approximate; pgvector 0.6
  filters after the index scan, so `hnsw.ef_search` is raised to keep three per item in reach). That is the
  trade for a hint shown on every plan page; dedup itself, which must not miss, scans exactly
  (storage/publish.py `find_neighbours_many`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.storage.plans import PlanKey

__all__ = [
    "PublishedTarget",
    "NearMemory",
    "published_targets",
    "nearest_memories",
    "NEAREST_K",
    "EXACT_SCAN_LIMIT",
]

NEAREST_K = 3
# up to this many memories in the target scope, the nearest are found by an exact scan of the scope; beyond
# it through the HNSW index. Measured for a page of 100 new items (tests/bench/plan_review.py, 2 cores,
# loaded): 2,000 of 22,000 memories exact ~0.08-0.15 s; 6,000 of 46,000 exact ~0.47 s, indexed ~0.71 s;
# 20,000 of 20,000 exact ~1.9-2.6 s, indexed ~0.30-0.43 s
EXACT_SCAN_LIMIT = 8_000
# the HNSW search looks at ef_search candidates and filters them by scope after: a scope that is a small
# part of the table needs a wider look to keep three per item (expected hits ≈ ef_search × its share), and
# the cost grows with it (20,000 of 20,000 memories: ef 40 ~0.30 s a page, ef 200 ~1.8 s), so it is sized
# to the scope's share of the table, within these bounds
MIN_EF_SEARCH = 40
MAX_EF_SEARCH = 400
_WANTED_HITS = 10


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
          AND (a.idempotency_key = pub.workflow_id || :approved_suffix
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
    # a promotion's approval event is keyed `<workflow id>:approved` (operations/promotion_publish.py)
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


_SCOPE_SIZE = text(
    """
    SELECT count(*) FROM memories
    WHERE scope_key = :scope_key AND deprecated_at IS NULL AND embedding IS NOT NULL
    """
)

# the planner's estimate of the table's rows (exact counts of a large table cost a scan)
_TABLE_ROWS = text("SELECT reltuples FROM pg_class WHERE oid = CAST('memories' AS regclass)")

# the candidate memories of the target scope: active, embedded, not published by this same plan
_SCOPE_ROWS = """
    SELECT m.id, m.citation, m.title, m.confidence, m.scope, m.org, m.project, m.embedding
    FROM memories m
    WHERE m.scope_key = :scope_key AND m.deprecated_at IS NULL AND m.embedding IS NOT NULL
      AND (m.expires_at IS NULL OR m.expires_at > now())
      AND m.id::text NOT IN (
          SELECT own.memory_id FROM promotion_plan_items own
          WHERE own.workflow_id = :w AND own.run_id = :r AND own.memory_id IS NOT NULL
      )
"""

_EXACT = text(
    f"""
    WITH scope AS MATERIALIZED ({_SCOPE_ROWS})
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

_INDEXED = text(
    f"""
    SELECT p.idx, n.id, n.citation, n.title, n.confidence, n.scope, n.org, n.project, n.similarity
    FROM promotion_plan_items p
    CROSS JOIN LATERAL (
        SELECT m.id::text AS id, m.citation, m.title, m.confidence, m.scope, m.org, m.project,
               1 - (m.embedding <=> p.embedding) AS similarity
        FROM ({_SCOPE_ROWS}) m
        ORDER BY m.embedding <=> p.embedding
        LIMIT :k
    ) n
    WHERE p.workflow_id = :w AND p.run_id = :r AND p.idx = ANY(:idxs) AND p.embedding IS NOT NULL
    ORDER BY p.idx, n.similarity DESC
    """
)


async def nearest_memories(
    conn: AsyncConnection,
    key: PlanKey,
    indexes: Sequence[int],
    scope_key: str,
    k: int = NEAREST_K,
    *,
    exact_limit: int = EXACT_SCAN_LIMIT,
) -> dict[int, list[NearMemory]]:
    """For each plan item in `indexes`, the `k` nearest active memories of `scope_key`, nearest first.

    Exact up to `exact_limit` memories in the scope, through the HNSW index beyond (see the module).
    """
    if not indexes or "\x00" in scope_key:
        return {}
    params = {"scope_key": scope_key, "w": key.workflow_id, "r": key.run_id, "idxs": list(indexes), "k": k}
    size = int(await conn.scalar(_SCOPE_SIZE, {"scope_key": scope_key}) or 0)
    if size == 0:
        return {}
    if size <= exact_limit:
        rows = await conn.execute(_EXACT, params)
    else:
        table = float(await conn.scalar(_TABLE_ROWS) or 0.0)
        share = min(1.0, size / table) if table > 0 else 1.0
        ef = int(min(MAX_EF_SEARCH, max(MIN_EF_SEARCH, _WANTED_HITS / share)))
        # for this transaction only (as storage/retrieval.py sets it for a search)
        await conn.execute(text("SELECT set_config('hnsw.ef_search', :ef, true)"), {"ef": str(ef)})
        rows = await conn.execute(_INDEXED, params)
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
