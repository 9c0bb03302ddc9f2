"""The promotion gate over HTTP: start a task's promotion, follow it, give evidence, approve or reject.

The approver of an approval or rejection is the authenticated caller, never a body field
(api/services/promotions.py).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Query

from api.http.deps import CurrentPrincipal, Resources, TaskId
from api.schemas.approvals import ApprovalTokenPublic
from api.schemas.decisions import BatchDecisionIn, BatchDecisionPublic
from api.schemas.promotions import (
    MAX_PROMOTION_NUMBER,
    PLAN_PAGE_MAX,
    PLAN_PAGE_SIZE,
    DecisionIn,
    DecisionPublic,
    PromotionList,
    PromotionPlanPage,
    PromotionPublic,
    PromotionStart,
    PromotionStarted,
    PromotionState,
    TaskPromotions,
    VerificationIn,
)
from api.services import decisions, promotion_listing, promotion_views, promotions

__all__ = ["router"]

router = APIRouter(tags=["promotions"])

# approve/reject may be sent without a body (no note)
OptionalDecision = Annotated[DecisionIn | None, Body()]


@router.post("/v1/tasks/{task_id}/promotion", status_code=202, response_model=PromotionStarted)
async def start_promotion(
    task_id: TaskId, body: PromotionStart, resources: Resources, principal: CurrentPrincipal
) -> PromotionStarted:
    """Start the task's next promotion into `target_scope`; a second start returns the running one."""
    return await promotions.start_promotion(resources, principal, task_id, body)


@router.get("/v1/tasks/{task_id}/promotions", response_model=TaskPromotions)
async def task_promotions(
    task_id: TaskId, resources: Resources, principal: CurrentPrincipal
) -> TaskPromotions:
    """Every promotion of the task, by number: the staging each took and how it ended."""
    return await promotion_listing.task_promotions(resources, principal, task_id)


@router.post("/v1/tasks/{task_id}/close", response_model=TaskPromotions)
async def close_task(task_id: TaskId, resources: Resources, principal: CurrentPrincipal) -> TaskPromotions:
    """Close the task: it takes no more entries and no more promotions (orchestrator or human)."""
    return await promotion_listing.close_task(resources, principal, task_id)


@router.get("/v1/promotions", response_model=PromotionList)
async def list_promotions(
    resources: Resources,
    principal: CurrentPrincipal,
    state: Annotated[PromotionState | None, Query(description="Only promotions in this state")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> PromotionList:
    """Promotions of tasks the caller may read, newest first (`state=awaiting_approval`: pending ones)."""
    return await promotion_listing.list_promotions(resources, principal, state, limit)


@router.get("/v1/promotions/{task_id}", response_model=PromotionPublic)
async def show_promotion(
    task_id: TaskId,
    resources: Resources,
    principal: CurrentPrincipal,
    number: Annotated[
        int | None, Query(ge=1, le=MAX_PROMOTION_NUMBER, description="Which promotion (default: the latest)")
    ] = None,
) -> PromotionPublic:
    """The task's latest promotion (or `number`): state, plan (first page), verification, publication."""
    return await promotion_views.promotion_status(resources, principal, task_id, number)


@router.get("/v1/promotions/{task_id}/plan", response_model=PromotionPlanPage)
async def promotion_plan(
    task_id: TaskId,
    resources: Resources,
    principal: CurrentPrincipal,
    offset: Annotated[int, Query(ge=0, description="Entries to skip")] = 0,
    limit: Annotated[int, Query(ge=1, le=PLAN_PAGE_MAX, description="Entries at most")] = PLAN_PAGE_SIZE,
) -> PromotionPlanPage:
    """A page of the promotion's plan with full contents, in plan order (`next_offset` continues)."""
    return await promotion_views.promotion_plan(resources, principal, task_id, offset, limit)


@router.post("/v1/promotions/{task_id}/verify", response_model=PromotionPublic)
async def verify_promotion(
    task_id: TaskId, body: VerificationIn, resources: Resources, principal: CurrentPrincipal
) -> PromotionPublic:
    """Give the verification evidence a promotion waits for (once)."""
    return await promotions.verify_promotion(resources, principal, task_id, body)


@router.post("/v1/promotions/{task_id}/approve", response_model=DecisionPublic)
async def approve_promotion(
    task_id: TaskId, resources: Resources, principal: CurrentPrincipal, body: OptionalDecision = None
) -> DecisionPublic:
    """Approve a promotion awaiting approval, as the caller; it then publishes its plan."""
    return await promotions.decide_promotion(resources, principal, task_id, "approve", body or DecisionIn())


@router.post("/v1/promotions/{task_id}/reject", response_model=DecisionPublic)
async def reject_promotion(
    task_id: TaskId, resources: Resources, principal: CurrentPrincipal, body: OptionalDecision = None
) -> DecisionPublic:
    """Reject a promotion awaiting approval, as the caller; nothing is published."""
    return await promotions.decide_promotion(resources, principal, task_id, "reject", body or DecisionIn())


@router.post("/v1/promotions/{task_id}/approval-token", response_model=ApprovalTokenPublic)
async def promotion_approval_token(
    task_id: TaskId, resources: Resources, principal: CurrentPrincipal
) -> ApprovalTokenPublic:
    """A 15-minute token to approve or reject this plan as the caller from the Temporal UI's signal."""
    return await promotions.promotion_approval_token(resources, principal, task_id)


@router.post("/v1/decisions", response_model=BatchDecisionPublic)
async def decide_batch(
    body: BatchDecisionIn, resources: Resources, principal: CurrentPrincipal
) -> BatchDecisionPublic:
    """Approve or reject several promotions and change requests, each checked on its own (every outcome)."""
    return await decisions.decide_batch(resources, principal, body)
