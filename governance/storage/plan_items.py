"""What the promotion's steps write of a plan's items, and what publish reads back of them.

`plan` writes its items a chunk at a time (`save_plan_items`: an upsert by index, so a retried plan resumes
after the chunks already written) and marks the plan complete (`finish_plan`); publish reads each chunk's
items with their candidates and embeddings (`publish_rows`) and writes what publishing them did back onto
them and onto the run's header (`record_outcomes`, `record_published`). The tables, the run's key and the
reads approvers and the steps share are `storage/plans.py`'s.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, delete, func, select, text, true, update
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.storage.plans import (
    PlanItemPublished,
    PlanKey,
    StoredCandidate,
    of_run,
    promotion_candidates,
    promotion_plan_items,
    promotion_plans,
)
from governance.storage.vector_params import from_vector_bytes, vector_array, vector_bytes

__all__ = [
    "PlanItemToWrite",
    "PlanItemToPublish",
    "save_plan_items",
    "finish_plan",
    "publish_rows",
    "record_published",
    "record_outcomes",
]

_C = promotion_candidates.c
_P = promotion_plan_items.c


@dataclass(frozen=True)
class PlanItemToWrite:
    """One plan item as plan writes it."""

    idx: int
    candidate_idx: int
    decision: str
    target_id: str | None
    similarity: float | None
    reason: str
    content_hash: str
    embedding: Sequence[float]
    quarantine: str | None = None


@dataclass(frozen=True)
class PlanItemToPublish:
    """One plan item with what publish needs: the candidate and its embedding."""

    idx: int
    candidate: StoredCandidate
    embedding: list[float] | None


# a chunk's items as one jsonb parameter and their vectors as one binary vector[] (storage/vector_params.py),
# joined by position: two parameters however large the chunk, no vector printed as text
_SAVE_ITEMS = """
    INSERT INTO promotion_plan_items AS p (
        workflow_id, run_id, idx, candidate_idx, decision, target_id, similarity, reason, content_hash,
        embedding, quarantine
    )
    SELECT :w, :r, i.idx, i.candidate_idx, i.decision, i.target_id, i.similarity, i.reason, i.content_hash,
           e.embedding, i.quarantine
    FROM jsonb_to_recordset(CAST(:items AS jsonb)) AS i(
        n bigint, idx int, candidate_idx int, decision text, target_id text, similarity double precision,
        reason text, content_hash text, quarantine text
    )
    JOIN unnest(CAST(:embeddings AS vector[])) WITH ORDINALITY AS e(embedding, n) ON e.n = i.n
    ORDER BY i.idx
    ON CONFLICT (workflow_id, run_id, idx) DO UPDATE SET
        candidate_idx = EXCLUDED.candidate_idx, decision = EXCLUDED.decision, target_id = EXCLUDED.target_id,
        similarity = EXCLUDED.similarity, reason = EXCLUDED.reason, content_hash = EXCLUDED.content_hash,
        embedding = EXCLUDED.embedding, quarantine = EXCLUDED.quarantine, planned_at = now()
"""


async def save_plan_items(conn: AsyncConnection, key: PlanKey, items: Sequence[PlanItemToWrite]) -> None:
    """Write (or rewrite, on a retry) plan items by index: one statement for the chunk."""
    if not items:
        return
    await conn.execute(
        text(_SAVE_ITEMS),
        {
            "w": key.workflow_id,
            "r": key.run_id,
            "items": json.dumps(
                [
                    {
                        "n": n,
                        "idx": item.idx,
                        "candidate_idx": item.candidate_idx,
                        "decision": item.decision,
                        "target_id": item.target_id,
                        "similarity": item.similarity,
                        "reason": item.reason,
                        "content_hash": item.content_hash,
                        "quarantine": item.quarantine,
                    }
                    for n, item in enumerate(items, start=1)
                ]
            ),
            "embeddings": await vector_array(conn, [item.embedding for item in items]),
        },
    )


async def finish_plan(conn: AsyncConnection, key: PlanKey, total: int) -> None:
    """Mark the plan complete with `total` items (items beyond it, from an older attempt, go)."""
    await conn.execute(delete(promotion_plan_items).where(of_run(key, promotion_plan_items), _P.idx >= total))
    await conn.execute(
        update(promotion_plans)
        .where(of_run(key, promotion_plans))
        .values(plan_total=total, updated_at=func.now())
    )


async def publish_rows(conn: AsyncConnection, key: PlanKey, start: int, stop: int) -> list[PlanItemToPublish]:
    """Plan items `start`..`stop - 1` with their candidates and embeddings, in plan order.

    One statement: the items' range of the primary key, and for each its candidate by the candidates'
    primary key (a LATERAL subquery, which its LIMIT keeps from being flattened into a join). Planned as a
    join, a chunk of a plan just written (no statistics yet) ran as a nested loop that scanned the run's
    every candidate for each item: ~0.5 ms an item on a 10,000-item plan, growing with the plan.
    """
    rows = await conn.execute(_rows_of_chunk(key, start, stop))
    return [
        PlanItemToPublish(
            idx=int(r.idx),
            candidate=StoredCandidate(
                idx=int(r.candidate_idx),
                memory_type=r.memory_type,
                title=r.title,
                content=r.content,
                canonical_key=r.canonical_key,
                importance=float(r.importance),
                source_entry_ids=[int(i) for i in r.source_entry_ids],
                expires_at=r.expires_at,
                structure=r.structure,
            ),
            embedding=from_vector_bytes(r.embedding),
        )
        for r in rows
    ]


def _rows_of_chunk(key: PlanKey, start: int, stop: int) -> Select[Any]:
    """`publish_rows`' statement."""
    candidate = (
        select(
            _C.idx.label("candidate_idx"),
            _C.memory_type,
            _C.title,
            _C.content,
            _C.canonical_key,
            _C.importance,
            _C.source_entry_ids,
            _C.expires_at,
            _C.structure,
        )
        .where(_C.workflow_id == _P.workflow_id, _C.run_id == _P.run_id, _C.idx == _P.candidate_idx)
        .limit(1)
        .lateral("c")
    )
    return (
        select(_P.idx, vector_bytes(_P.embedding).label("embedding"), *candidate.c)
        .select_from(promotion_plan_items.join(candidate, true()))
        .where(of_run(key, promotion_plan_items), _P.idx >= start, _P.idx < stop)
        .order_by(_P.idx)
    )


async def record_published(
    conn: AsyncConnection, key: PlanKey, outcomes: Sequence[PlanItemPublished], *, count: int | None = None
) -> None:
    """Write publish's outcomes onto the plan items and the count (default: theirs) onto the header."""
    await record_outcomes(conn, key, outcomes)
    await conn.execute(
        update(promotion_plans)
        .where(of_run(key, promotion_plans))
        .values(published_count=len(outcomes) if count is None else count, updated_at=func.now())
    )


async def record_outcomes(conn: AsyncConnection, key: PlanKey, outcomes: Sequence[PlanItemPublished]) -> None:
    """Write what publishing did onto those plan items (a chunk of them, in the chunk's transaction): one
    statement for the chunk."""
    if outcomes:
        await conn.execute(
            text(
                """
                UPDATE promotion_plan_items AS p SET
                    memory_id = o.memory_id, citation = o.citation, action = o.action,
                    superseded_id = o.superseded_id, replayed = o.replayed
                FROM jsonb_to_recordset(CAST(:outcomes AS jsonb)) AS o(
                    idx int, memory_id text, citation text, action text, superseded_id text, replayed boolean
                )
                WHERE p.workflow_id = :w AND p.run_id = :r AND p.idx = o.idx
                """
            ),
            {
                "w": key.workflow_id,
                "r": key.run_id,
                "outcomes": json.dumps(
                    [
                        {
                            "idx": o.idx,
                            "memory_id": o.memory_id,
                            "citation": o.citation,
                            "action": o.action,
                            "superseded_id": o.superseded_id,
                            "replayed": o.replayed,
                        }
                        for o in outcomes
                    ]
                ),
            },
        )
