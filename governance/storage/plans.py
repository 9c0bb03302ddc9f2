"""The promotion's claim check: candidates and plan items live here, not in Temporal's history.

A promotion's large data would not fit Temporal's payloads (2 MB each, and a history that stays small enough
to replay quickly): a few hundred candidates with 384-float embeddings are megabytes. So the gate's steps
write it here (governance/operations/promotion_*.py) and its activities hand the workflow only ids and counts
(activities/promotion.py):

- `promotion_plans`: one row per promotion run, keyed by (workflow id, run id): the run whose `cognify`
  wrote the candidates. It is carried from cognify's result to plan and publish, so a retried or replayed
  activity (or a reset run, which keeps the old results) reads the rows it wrote. `plan_total` is set when
  the plan is complete, `published_count` when publish committed.
- `promotion_candidates`: cognify's candidates, by index (delete-then-insert on a retry: same rows).
- `promotion_plan_items`: the plan, by index (publish order, also its `<workflow id>:publish:<index>`
  idempotency key): the candidate it plans, the decision, target, similarity, reason, content hash and the
  embedding publish stores; publish writes the outcome (memory, citation, action) back.

This module holds the tables, the run's key and header, cognify's candidates and the reads of a plan that
approvers and the steps share; what plan and publish write onto the plan items is `storage/plan_items.py`'s,
and the embedding cache (a text embedded once per model) is `storage/embedding_cache.py`.

The tables are defined here (not in tables.py) with the shared metadata; migration 0004 creates them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pgvector.sqlalchemy import Vector
from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKeyConstraint,
    Integer,
    String,
    Table,
    Text,
    and_,
    case,
    cast,
    delete,
    func,
    select,
    text,
    true,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, UUID
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.cognify import Candidate
from governance.storage.tables import EMBEDDING_DIM, memories, metadata

__all__ = [
    "promotion_plans",
    "promotion_candidates",
    "promotion_plan_items",
    "PlanKey",
    "PlanHeader",
    "StoredCandidate",
    "PlanItemForReview",
    "PlanItemPublished",
    "of_run",
    "save_candidates",
    "candidate_indexes",
    "load_candidates",
    "planned_count",
    "QuarantinedRow",
    "quarantined_items",
    "quarantined_indexes",
    "plan_counts",
    "plan_page",
    "plan_page_statement",
    "latest_plan",
    "get_plan",
    "published_page",
]

TS = DateTime(timezone=True)

promotion_plans = Table(
    "promotion_plans",
    metadata,
    Column("workflow_id", Text, primary_key=True),
    Column("run_id", Text, primary_key=True),
    Column("task_id", Text, nullable=False),
    Column("candidate_count", Integer, nullable=False),
    Column("plan_total", Integer, nullable=True),  # set when the plan is complete
    Column("published_count", Integer, nullable=True),  # set when publish committed
    # cognify's critique of the run (redacted): here, never in the history (migration 0022)
    Column("critique", Text, nullable=True),
    Column("created_at", TS, nullable=False, server_default=func.now()),
    Column("updated_at", TS, nullable=False, server_default=func.now()),
)

promotion_candidates = Table(
    "promotion_candidates",
    metadata,
    Column("workflow_id", Text, primary_key=True),
    Column("run_id", Text, primary_key=True),
    Column("idx", Integer, primary_key=True),
    Column("memory_type", String(32), nullable=False),
    Column("title", Text, nullable=False),
    Column("content", Text, nullable=False),
    Column("canonical_key", Text, nullable=True),
    Column("importance", Float, nullable=False),
    Column("source_entry_ids", ARRAY(BigInteger), nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=True),
    # an episode's structured fields (governance/episodes.py, migration 0026)
    Column("structure", JSONB, nullable=True),
    ForeignKeyConstraint(
        ["workflow_id", "run_id"],
        ["promotion_plans.workflow_id", "promotion_plans.run_id"],
        ondelete="CASCADE",
    ),
)

promotion_plan_items = Table(
    "promotion_plan_items",
    metadata,
    Column("workflow_id", Text, primary_key=True),
    Column("run_id", Text, primary_key=True),
    Column("idx", Integer, primary_key=True),
    Column("candidate_idx", Integer, nullable=False),
    Column("decision", String(16), nullable=False),
    Column("target_id", Text, nullable=True),
    Column("similarity", Float, nullable=True),
    Column("reason", Text, nullable=False),
    Column("content_hash", String(64), nullable=False),
    Column("embedding", Vector(EMBEDDING_DIM), nullable=True),
    Column("planned_at", TS, nullable=False, server_default=func.now()),
    # the outcome, written by publish in its transaction
    Column("memory_id", Text, nullable=True),
    Column("citation", String(16), nullable=True),
    Column("action", String(16), nullable=True),
    Column("superseded_id", Text, nullable=True),
    Column("replayed", Boolean, nullable=True),
    # why the item carries instructions aimed at agents (governance/instructions.py), or NULL: a quarantined
    # item is published only after a human approved the promotion
    Column("quarantine", Text, nullable=True),
    ForeignKeyConstraint(
        ["workflow_id", "run_id"],
        ["promotion_plans.workflow_id", "promotion_plans.run_id"],
        ondelete="CASCADE",
    ),
)

_C = promotion_candidates.c
_P = promotion_plan_items.c
_H = promotion_plans.c


@dataclass(frozen=True)
class PlanKey:
    """Which promotion run a plan belongs to: the workflow id and the run whose cognify wrote it."""

    workflow_id: str
    run_id: str


@dataclass(frozen=True)
class PlanHeader:
    """A promotion run's plan: how many candidates, the plan's size once complete, what was published."""

    workflow_id: str
    run_id: str
    task_id: str
    candidate_count: int
    plan_total: int | None
    published_count: int | None
    critique: str | None = None


@dataclass(frozen=True)
class StoredCandidate:
    """A candidate as cognify stored it, with its index."""

    idx: int
    memory_type: str
    title: str
    content: str
    canonical_key: str | None
    importance: float
    source_entry_ids: list[int]
    expires_at: datetime | None = None
    structure: dict[str, Any] | None = None  # an episode's structured fields


@dataclass(frozen=True)
class PlanItemForReview:
    """One plan item as approvers read it (no embedding)."""

    idx: int
    memory_type: str
    title: str
    content: str
    canonical_key: str | None
    decision: str
    target_id: str | None
    similarity: float | None
    reason: str
    # what a duplicate merges into or a supersede replaces, as published now (approvers see old beside new)
    target_title: str | None = None
    target_content: str | None = None
    # why the item waits for a human (instructions aimed at agents), or None
    quarantine: str | None = None


@dataclass(frozen=True)
class PlanItemPublished:
    """What publishing one plan item did."""

    idx: int
    memory_id: str
    citation: str
    action: str
    memory_type: str
    title: str
    superseded_id: str | None
    replayed: bool


def of_run(key: PlanKey, table: Table) -> Any:
    """The rows of `table` (a claim-check table) that belong to the run `key`."""
    return and_(table.c.workflow_id == key.workflow_id, table.c.run_id == key.run_id)


async def save_candidates(
    conn: AsyncConnection,
    key: PlanKey,
    task_id: str,
    candidates: Sequence[Candidate],
    critique: str | None = None,
) -> None:
    """Write cognify's candidates (replacing a previous attempt's) and the run's plan header (with the
    run's critique, which the workflow's history never carries)."""
    await conn.execute(
        pg_insert(promotion_plans)
        .values(
            workflow_id=key.workflow_id,
            run_id=key.run_id,
            task_id=task_id,
            candidate_count=len(candidates),
            critique=critique,
        )
        .on_conflict_do_update(
            index_elements=["workflow_id", "run_id"],
            set_={"candidate_count": len(candidates), "critique": critique, "updated_at": func.now()},
        )
    )
    await conn.execute(delete(promotion_candidates).where(of_run(key, promotion_candidates)))
    # a few hundred rows a statement: each statement's time stays far inside the statement timeout however
    # many candidates a big task has (10,000 in one statement could be cut by it under load)
    for start in range(0, len(candidates), CANDIDATES_PER_STATEMENT):
        await conn.execute(
            text(_SAVE_CANDIDATES),
            {
                "w": key.workflow_id,
                "r": key.run_id,
                "rows": json.dumps(
                    [
                        {
                            "idx": idx,
                            "memory_type": c.memory_type,
                            "title": c.title,
                            "content": c.content,
                            "canonical_key": c.canonical_key,
                            "importance": c.importance,
                            "source_entry_ids": list(c.source_entry_ids),
                            "expires_at": c.expires_at.isoformat() if c.expires_at is not None else None,
                            "structure": c.structure,
                        }
                        for idx, c in enumerate(
                            candidates[start : start + CANDIDATES_PER_STATEMENT], start=start
                        )
                    ]
                ),
            },
        )


# cognify's candidates written per statement (`save_candidates`)
CANDIDATES_PER_STATEMENT = 500

_SAVE_CANDIDATES = """
    INSERT INTO promotion_candidates (
        workflow_id, run_id, idx, memory_type, title, content, canonical_key, importance, source_entry_ids,
        expires_at, structure
    )
    SELECT :w, :r, c.idx, c.memory_type, c.title, c.content, c.canonical_key, c.importance,
           c.source_entry_ids, c.expires_at, c.structure
    FROM jsonb_to_recordset(CAST(:rows AS jsonb)) AS c(
        idx int, memory_type text, title text, content text, canonical_key text,
        importance double precision, source_entry_ids bigint[], expires_at timestamptz, structure jsonb
    )
    ORDER BY c.idx
"""


async def candidate_indexes(
    conn: AsyncConnection, key: PlanKey, memory_types: Sequence[str] | None = None
) -> list[int]:
    """Indexes of the run's candidates (only of `memory_types` when given), in order."""
    query = select(_C.idx).where(of_run(key, promotion_candidates)).order_by(_C.idx)
    if memory_types is not None:
        query = query.where(_C.memory_type.in_(list(memory_types)))
    return [int(i) for i in (await conn.execute(query)).scalars()]


def _candidate(row: Any) -> StoredCandidate:
    return StoredCandidate(
        idx=int(row.idx),
        memory_type=row.memory_type,
        title=row.title,
        content=row.content,
        canonical_key=row.canonical_key,
        importance=float(row.importance),
        source_entry_ids=[int(i) for i in row.source_entry_ids],
        expires_at=row.expires_at,
        structure=row.structure,
    )


async def load_candidates(
    conn: AsyncConnection, key: PlanKey, indexes: Sequence[int]
) -> list[StoredCandidate]:
    """The candidates at `indexes`, in that order."""
    rows = await conn.execute(
        select(promotion_candidates).where(of_run(key, promotion_candidates), _C.idx.in_(list(indexes)))
    )
    by_idx = {c.idx: c for c in map(_candidate, rows)}
    return [by_idx[i] for i in indexes]


async def planned_count(conn: AsyncConnection, key: PlanKey) -> int:
    """How many plan items are written (plan writes whole chunks in order: items 0..n-1)."""
    count = await conn.scalar(
        select(func.count()).select_from(promotion_plan_items).where(of_run(key, promotion_plan_items))
    )
    return int(count or 0)


async def plan_counts(conn: AsyncConnection, key: PlanKey) -> dict[str, int]:
    """Plan items per decision."""
    rows = await conn.execute(
        select(_P.decision, func.count()).where(of_run(key, promotion_plan_items)).group_by(_P.decision)
    )
    return {str(decision): int(n) for decision, n in rows}


def _candidate_of(item: Any, *columns: Any) -> Any:
    """The candidate `item` (a subquery of plan items) plans, as a LATERAL subquery (its LIMIT keeps the
    planner from flattening it into a join).

    Looked up by the candidates' primary key (workflow, run, index), so each item reads exactly its own
    candidate whatever the tables' statistics: planned as a plain join on a plan just written (no
    statistics yet), Postgres chose a nested loop that read the run's every candidate again for each item.
    Publish's chunk read does the same (storage/plan_items.py).
    """
    return (
        select(*(columns or _candidate_columns()))
        .where(
            _C.workflow_id == item.workflow_id,
            _C.run_id == item.run_id,
            _C.idx == item.candidate_idx,
        )
        .limit(1)
        .correlate_except(promotion_candidates)
        .lateral("candidate")
    )


def _candidate_columns() -> tuple[Any, ...]:
    return (_C.memory_type, _C.title, _C.content, _C.canonical_key)


def _page_of_items(key: PlanKey, *columns: Any, where: Any = None, offset: int = 0, limit: int) -> Any:
    """The run's plan items (those matching `where`) from `offset`, at most `limit`, in plan order: a
    subquery, so the offset is skipped over the items' primary key alone and only the page's items go on
    to meet their candidates (a join under OFFSET would look up a candidate for every skipped item)."""
    query = select(_P.workflow_id, _P.run_id, _P.idx, _P.candidate_idx, *columns).where(
        of_run(key, promotion_plan_items)
    )
    if where is not None:
        query = query.where(where)
    return query.order_by(_P.idx).offset(offset).limit(limit).subquery("item")


_UUID_TEXT = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"


def _target_of(item: Any) -> Any:
    """The published memory a duplicate merges into or a supersede replaces, by its primary key (a
    LATERAL subquery, for the same reason as `_candidate_of`); no row when the target is not a memory id."""
    target = memories.alias("target")
    target_id = case((item.target_id.regexp_match(_UUID_TEXT), cast(item.target_id, UUID)), else_=None)
    return (
        select(target.c.title.label("target_title"), target.c.content.label("target_content"))
        .where(target.c.id == target_id)
        .limit(1)
        .lateral("target")
    )


def plan_page_statement(key: PlanKey, *, offset: int, limit: int) -> Any:
    """`plan_page`'s statement: the page's items, then each item's candidate and target by key."""
    item = _page_of_items(
        key,
        _P.decision,
        _P.target_id,
        _P.similarity,
        _P.reason,
        _P.quarantine,
        offset=offset,
        limit=limit,
    )
    candidate = _candidate_of(item.c)
    target = _target_of(item.c)
    return (
        select(
            item.c.idx,
            candidate.c.memory_type,
            candidate.c.title,
            candidate.c.content,
            candidate.c.canonical_key,
            item.c.decision,
            item.c.target_id,
            item.c.similarity,
            item.c.reason,
            target.c.target_title,
            target.c.target_content,
            item.c.quarantine,
        )
        .select_from(item.join(candidate, true()).outerjoin(target, true()))
        .order_by(item.c.idx)
    )


async def plan_page(
    conn: AsyncConnection, key: PlanKey, *, offset: int, limit: int
) -> list[PlanItemForReview]:
    """Plan items `offset`.. (at most `limit`), in plan order, with their candidates' full content.

    A duplicate's or a supersede's target comes with its current title and content, so an approver reads
    what the item merges into or replaces beside the new text. However deep the page, it reads the items'
    keys up to it and the page's own items, candidates and targets (`plan_page_statement`).
    """
    rows = await conn.execute(plan_page_statement(key, offset=offset, limit=limit))
    return [
        PlanItemForReview(
            idx=int(r.idx),
            memory_type=r.memory_type,
            title=r.title,
            content=r.content,
            canonical_key=r.canonical_key,
            decision=r.decision,
            target_id=r.target_id,
            similarity=r.similarity,
            reason=r.reason,
            target_title=r.target_title,
            target_content=r.target_content,
            quarantine=r.quarantine,
        )
        for r in rows
    ]


@dataclass(frozen=True)
class QuarantinedRow:
    """A plan item held for a human: its index, title and why."""

    idx: int
    title: str
    reason: str


async def quarantined_items(
    conn: AsyncConnection, key: PlanKey, *, limit: int
) -> tuple[int, list[QuarantinedRow]]:
    """How many plan items are quarantined, and the first `limit` of them in plan order."""
    held = _P.quarantine.is_not(None)
    total = int(
        await conn.scalar(
            select(func.count())
            .select_from(promotion_plan_items)
            .where(of_run(key, promotion_plan_items), held)
        )
        or 0
    )
    if total == 0:
        return 0, []
    item = _page_of_items(key, _P.quarantine, where=held, limit=limit)
    candidate = _candidate_of(item.c, _C.title)
    rows = await conn.execute(
        select(item.c.idx, candidate.c.title, item.c.quarantine)
        .select_from(item.join(candidate, true()))
        .order_by(item.c.idx)
    )
    return total, [QuarantinedRow(int(r.idx), r.title, r.quarantine) for r in rows]


async def quarantined_indexes(conn: AsyncConnection, key: PlanKey) -> set[int]:
    """The indexes of every quarantined plan item (what publish holds back without a human's approval)."""
    rows = await conn.execute(
        select(_P.idx).where(of_run(key, promotion_plan_items), _P.quarantine.is_not(None))
    )
    return {int(idx) for idx in rows.scalars()}


def _header(row: Any) -> PlanHeader:
    return PlanHeader(
        workflow_id=row.workflow_id,
        run_id=row.run_id,
        task_id=row.task_id,
        candidate_count=int(row.candidate_count),
        plan_total=row.plan_total,
        published_count=row.published_count,
        critique=row.critique,
    )


async def latest_plan(conn: AsyncConnection, workflow_id: str) -> PlanHeader | None:
    """The newest run's plan header of a promotion (a re-run after a failure replaces the old one)."""
    row = (
        await conn.execute(
            select(promotion_plans)
            .where(_H.workflow_id == workflow_id)
            .order_by(_H.created_at.desc(), _H.run_id.desc())
            .limit(1)
        )
    ).first()
    return _header(row) if row is not None else None


async def get_plan(conn: AsyncConnection, key: PlanKey) -> PlanHeader | None:
    """One run's plan header."""
    row = (await conn.execute(select(promotion_plans).where(of_run(key, promotion_plans)))).first()
    return _header(row) if row is not None else None


async def published_page(
    conn: AsyncConnection, key: PlanKey, *, offset: int, limit: int
) -> tuple[int, list[PlanItemPublished]]:
    """How many plan items were published, and those from `offset` (at most `limit`), in plan order."""
    published = _P.memory_id.is_not(None)
    total = int(
        await conn.scalar(
            select(func.count())
            .select_from(promotion_plan_items)
            .where(of_run(key, promotion_plan_items), published)
        )
        or 0
    )
    if total <= offset:
        return total, []
    item = _page_of_items(
        key,
        _P.memory_id,
        _P.citation,
        _P.action,
        _P.superseded_id,
        _P.replayed,
        where=published,
        offset=offset,
        limit=limit,
    )
    candidate = _candidate_of(item.c, _C.memory_type, _C.title)
    rows = await conn.execute(
        select(
            item.c.idx,
            item.c.memory_id,
            item.c.citation,
            item.c.action,
            item.c.superseded_id,
            item.c.replayed,
            candidate.c.memory_type,
            candidate.c.title,
        )
        .select_from(item.join(candidate, true()))
        .order_by(item.c.idx)
    )
    return total, [
        PlanItemPublished(
            idx=int(r.idx),
            memory_id=r.memory_id,
            citation=r.citation,
            action=r.action,
            memory_type=r.memory_type,
            title=r.title,
            superseded_id=r.superseded_id,
            replayed=bool(r.replayed),
        )
        for r in rows
    ]
