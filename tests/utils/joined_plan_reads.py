"""The approver's plan reads written as a plain join of plan items to their candidates: the reference the
storage tests and `tests/bench/plan_reads.py` compare `governance/storage/plans.py`'s statements with.

Same columns, same filters, same order as `plan_page`, `quarantined_items` and `published_page`; only the way
each item meets its candidate differs (here: a join on (workflow, run, index), which the planner is free to
run as a nested loop over the run's every candidate on a plan just written).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, and_, case, cast, func, select
from sqlalchemy.dialects.postgresql import UUID

from governance.storage.plans import PlanKey, of_run, promotion_candidates, promotion_plan_items
from governance.storage.tables import memories

__all__ = ["joined", "joined_page", "joined_quarantined", "joined_published", "joined_count"]

_C = promotion_candidates.c
_P = promotion_plan_items.c
_UUID_TEXT = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"


def joined() -> Any:
    """Plan items joined to the candidates they plan."""
    return promotion_plan_items.join(
        promotion_candidates,
        and_(_C.workflow_id == _P.workflow_id, _C.run_id == _P.run_id, _C.idx == _P.candidate_idx),
    )


def joined_page(key: PlanKey, offset: int, limit: int) -> Select[Any]:
    """`plan_page`'s rows."""
    target = memories.alias("target")
    target_id = case((_P.target_id.regexp_match(_UUID_TEXT), cast(_P.target_id, UUID)), else_=None)
    return (
        select(
            _P.idx,
            _C.memory_type,
            _C.title,
            _C.content,
            _C.canonical_key,
            _P.decision,
            _P.target_id,
            _P.similarity,
            _P.reason,
            target.c.title.label("target_title"),
            target.c.content.label("target_content"),
            _P.quarantine,
        )
        .select_from(joined().outerjoin(target, target.c.id == target_id))
        .where(of_run(key, promotion_plan_items))
        .order_by(_P.idx)
        .offset(offset)
        .limit(limit)
    )


def joined_quarantined(key: PlanKey, limit: int) -> Select[Any]:
    """`quarantined_items`' rows."""
    return (
        select(_P.idx, _C.title, _P.quarantine)
        .select_from(joined())
        .where(of_run(key, promotion_plan_items), _P.quarantine.is_not(None))
        .order_by(_P.idx)
        .limit(limit)
    )


def joined_published(key: PlanKey, offset: int, limit: int) -> Select[Any]:
    """`published_page`'s rows."""
    return (
        select(
            _P.idx,
            _P.memory_id,
            _P.citation,
            _P.action,
            _P.superseded_id,
            _P.replayed,
            _C.memory_type,
            _C.title,
        )
        .select_from(joined())
        .where(of_run(key, promotion_plan_items), _P.memory_id.is_not(None))
        .order_by(_P.idx)
        .offset(offset)
        .limit(limit)
    )


def joined_count(key: PlanKey, column: Any) -> Select[Any]:
    """How many of the run's plan items have `column` set (the totals beside quarantined and published)."""
    return (
        select(func.count())
        .select_from(promotion_plan_items)
        .where(of_run(key, promotion_plan_items), column.is_not(None))
    )
