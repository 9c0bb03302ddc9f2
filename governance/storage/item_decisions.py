"""An approver's per-item decisions on a promotion's plan: rejections with reasons, edits with diffs.

`promotion_item_decisions` (migration 0024) holds one row per decided plan item under the decision's id
(the gateway's grant for a decision made through the API, the approver check's request id for a Temporal
UI signal): the reason, the item's text as planned, the approver's text (redacted) and the word diffs.
Workflows carry the decision's id; publish applies the rows (`applied_at`) in the transaction that
rewrites the edited items' candidates and plan lines, and the API reads each item's fate from here and
from the plan item's outcome (governance/item_decisions.py holds the rules).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    CheckConstraint,
    Column,
    DateTime,
    ForeignKeyConstraint,
    Integer,
    String,
    Table,
    Text,
    func,
    select,
    true,
    update,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.item_decisions import PlanItemView, PreparedChoice
from governance.storage.plans import PlanKey, promotion_candidates, promotion_plan_items
from governance.storage.tables import metadata
from governance.word_diff import DiffOp

__all__ = [
    "promotion_item_decisions",
    "ItemDecisionRow",
    "ItemFate",
    "record_item_decisions",
    "item_decisions_of",
    "plan_item_views",
    "rewrite_candidate_text",
    "mark_applied",
    "item_fates",
]

TS = DateTime(timezone=True)

promotion_item_decisions = Table(
    "promotion_item_decisions",
    metadata,
    Column("workflow_id", Text, primary_key=True),
    Column("decision_id", Text, primary_key=True),
    Column("idx", Integer, primary_key=True),
    Column("run_id", Text, nullable=False),
    Column("task_id", Text, nullable=False),
    Column("decision", String(16), nullable=False),
    Column("reason", Text, nullable=False, server_default=""),
    Column("original_title", Text, nullable=False),
    Column("original_content", Text, nullable=False),
    Column("title", Text, nullable=True),
    Column("content", Text, nullable=True),
    # {"title": [{"op", "text"}…], "content": [...]}: the approver's word diffs
    Column("diff", JSONB, nullable=True),
    Column("decided_by", Text, nullable=False),
    Column("created_at", TS, nullable=False, server_default=func.now()),
    Column("applied_at", TS, nullable=True),
    CheckConstraint("decision IN ('reject', 'edit')", name="promotion_item_decisions_kind"),
    ForeignKeyConstraint(
        ["workflow_id", "run_id"],
        ["promotion_plans.workflow_id", "promotion_plans.run_id"],
        ondelete="CASCADE",
    ),
)

_D = promotion_item_decisions.c
_P = promotion_plan_items.c
_C = promotion_candidates.c


@dataclass(frozen=True)
class ItemDecisionRow:
    """One stored per-item decision."""

    workflow_id: str
    decision_id: str
    run_id: str
    task_id: str
    idx: int
    decision: str
    reason: str
    original_title: str
    original_content: str
    title: str | None
    content: str | None
    diff: dict[str, Any] | None
    decided_by: str
    applied: bool = False


@dataclass(frozen=True)
class ItemFate:
    """What became of one plan item: the approver's decision on it (if any) and whether it published."""

    idx: int
    memory_id: str | None
    decision: str | None
    reason: str | None
    diff: dict[str, Any] | None
    original_title: str | None
    original_content: str | None


def _ops(ops: Sequence[DiffOp]) -> list[dict[str, str]]:
    return [{"op": o.op.value, "text": o.text} for o in ops]


async def record_item_decisions(
    conn: AsyncConnection,
    *,
    key: PlanKey,
    decision_id: str,
    task_id: str,
    decided_by: str,
    choices: Sequence[PreparedChoice],
) -> None:
    """Store prepared choices under `decision_id` (a retry with the same id writes nothing twice)."""
    if not choices:
        return
    await conn.execute(
        pg_insert(promotion_item_decisions).on_conflict_do_nothing(
            index_elements=["workflow_id", "decision_id", "idx"]
        ),
        [
            {
                "workflow_id": key.workflow_id,
                "decision_id": decision_id,
                "idx": c.index,
                "run_id": key.run_id,
                "task_id": task_id,
                "decision": c.decision.value,
                "reason": c.reason,
                "original_title": c.original_title,
                "original_content": c.original_content,
                "title": c.title,
                "content": c.content,
                "diff": {"title": _ops(c.title_diff), "content": _ops(c.content_diff)}
                if c.decision.value == "edit"
                else None,
                "decided_by": decided_by,
            }
            for c in choices
        ],
    )


async def item_decisions_of(
    conn: AsyncConnection, workflow_id: str, decision_id: str
) -> list[ItemDecisionRow]:
    """The rows stored under `decision_id` on this workflow, by plan index."""
    rows = await conn.execute(
        select(promotion_item_decisions)
        .where(_D.workflow_id == workflow_id, _D.decision_id == decision_id)
        .order_by(_D.idx)
    )
    return [
        ItemDecisionRow(
            workflow_id=r.workflow_id,
            decision_id=r.decision_id,
            run_id=r.run_id,
            task_id=r.task_id,
            idx=int(r.idx),
            decision=r.decision,
            reason=r.reason,
            original_title=r.original_title,
            original_content=r.original_content,
            title=r.title,
            content=r.content,
            diff=r.diff,
            decided_by=r.decided_by,
            applied=r.applied_at is not None,
        )
        for r in rows
    ]


async def plan_item_views(
    conn: AsyncConnection, key: PlanKey, indexes: Iterable[int]
) -> dict[int, PlanItemView]:
    """The plan items at `indexes` (those that exist) with their candidates' texts and quarantine."""
    wanted = sorted(set(indexes))
    if not wanted:
        return {}
    # each item's candidate by the candidates' key (a LATERAL, as storage/plans.py reads a plan's pages):
    # planned as a join on a plan just written, three items of a 3,000-item plan read 4,419 candidates
    candidate = (
        select(_C.title, _C.content)
        .where(_C.workflow_id == _P.workflow_id, _C.run_id == _P.run_id, _C.idx == _P.candidate_idx)
        .limit(1)
        .correlate_except(promotion_candidates)
        .lateral("candidate")
    )
    rows = await conn.execute(
        select(_P.idx, _P.candidate_idx, candidate.c.title, candidate.c.content, _P.quarantine)
        .select_from(promotion_plan_items.join(candidate, true()))
        .where(
            _P.workflow_id == key.workflow_id,
            _P.run_id == key.run_id,
            # the range bounds the index scan (the list alone was a filter over the run's items)
            _P.idx.between(wanted[0], wanted[-1]),
            _P.idx.in_(wanted),
        )
    )
    return {
        int(r.idx): PlanItemView(
            int(r.idx), int(r.candidate_idx), r.title, r.content, r.quarantine is not None
        )
        for r in rows
    }


async def rewrite_candidate_text(
    conn: AsyncConnection, key: PlanKey, candidate_index: int, *, title: str, content: str
) -> None:
    """Put the approver's text in place of cognify's on a candidate (its original is the decision's row)."""
    await conn.execute(
        update(promotion_candidates)
        .where(_C.workflow_id == key.workflow_id, _C.run_id == key.run_id, _C.idx == candidate_index)
        .values(title=title, content=content)
    )


async def mark_applied(conn: AsyncConnection, workflow_id: str, decision_id: str) -> None:
    """Record that publish applied the decision's rows."""
    await conn.execute(
        update(promotion_item_decisions)
        .where(_D.workflow_id == workflow_id, _D.decision_id == decision_id, _D.applied_at.is_(None))
        .values(applied_at=func.now())
    )


async def item_fates(conn: AsyncConnection, key: PlanKey, indexes: Iterable[int]) -> dict[int, ItemFate]:
    """Each plan item's outcome at `indexes` and the applied approver's decision on it, if any."""
    wanted = sorted(set(indexes))
    if not wanted:
        return {}
    decided = (
        select(_D.idx, _D.decision, _D.reason, _D.diff, _D.original_title, _D.original_content)
        .where(_D.workflow_id == key.workflow_id, _D.run_id == key.run_id, _D.applied_at.is_not(None))
        .subquery()
    )
    rows = await conn.execute(
        select(
            _P.idx,
            _P.memory_id,
            decided.c.decision,
            decided.c.reason,
            decided.c.diff,
            decided.c.original_title,
            decided.c.original_content,
        )
        .select_from(promotion_plan_items.outerjoin(decided, decided.c.idx == _P.idx))
        .where(
            _P.workflow_id == key.workflow_id,
            _P.run_id == key.run_id,
            # the range bounds the index scan to the page (the list alone was a filter over the run's items)
            _P.idx.between(wanted[0], wanted[-1]),
            _P.idx.in_(wanted),
        )
    )
    return {
        int(r.idx): ItemFate(
            int(r.idx), r.memory_id, r.decision, r.reason, r.diff, r.original_title, r.original_content
        )
        for r in rows
    }
