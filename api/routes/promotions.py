"""The promotion gate over HTTP: start a task's promotion, follow it, give evidence, approve or reject.

Handlers only authenticate and hand over to `api/service.py` (the gRPC gateway calls the same functions),
which authorises through Casbin and talks to the task's `PromotionWorkflow` (workflows/promotion.py).
The approver of an approval or rejection is the authenticated caller, never a body field.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Body, Path, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from api import service
from api.deps import CurrentPrincipal
from governance.scopes import Scope, ValidationSource
from governance.staging import TASK_ID_PATTERN

__all__ = [
    "router",
    "PromotionState",
    "VerificationIn",
    "PromotionStart",
    "DecisionIn",
    "PromotionStarted",
    "PromotionPublic",
    "DecisionPublic",
    "PromotionSummary",
    "PromotionList",
]

router = APIRouter(tags=["promotions"])

# The values of the workflow's `LoregateState` search attribute (workflows/promotion.py `State`).
PromotionState = Literal[
    "awaiting_verification",
    "planning",
    "awaiting_approval",
    "publishing",
    "published",
    "rejected",
    "unverified",
    "failed",
]

TaskId = Annotated[str, Path(description="The task id", max_length=128, pattern=TASK_ID_PATTERN)]


class VerificationIn(BaseModel):
    """Evidence the task's work is right (tests passed, PR merged...) and whether it succeeded."""

    model_config = ConfigDict(extra="forbid")

    source: ValidationSource
    success: bool = True


class PromotionStart(BaseModel):
    """Promote a task's staging into `target_scope`, optionally with the verification evidence already."""

    model_config = ConfigDict(extra="forbid")

    target_scope: Scope
    verification: VerificationIn | None = None


class DecisionIn(BaseModel):
    """An approval or rejection; the approver is whoever owns the API key."""

    model_config = ConfigDict(extra="forbid")

    note: str = Field(default="", max_length=4000)


# approve/reject may be sent without a body (no note)
OptionalDecision = Annotated[DecisionIn | None, Body()]


class PromotionStarted(BaseModel):
    """The promotion's workflow; `created` is false when it was already running (a task has one)."""

    task_id: str
    workflow_id: str
    run_id: str | None
    target_scope: str
    created: bool
    requested_by: str


class VerificationPublic(BaseModel):
    source: str
    success: bool


class PlanEntryPublic(BaseModel):
    """One memory the promotion will publish, and what it does to published memory."""

    memory_type: str
    title: str
    content: str
    canonical_key: str | None
    decision: str = Field(description="new, duplicate (merge and boost) or supersede")
    target_id: str | None
    similarity: float | None
    reason: str


class RefusalPublic(BaseModel):
    """An approval or rejection that was not accepted."""

    approver: str
    decision: str
    channel: str = Field(description="signal (Temporal UI) or update (API)")
    reason: str


class PublishedPublic(BaseModel):
    memory_id: str
    citation: str
    action: str
    memory_type: str
    title: str
    superseded_id: str | None
    replayed: bool


class PromotionPublic(BaseModel):
    """Where a promotion stands, with the plan an approver is asked to approve."""

    task_id: str
    workflow_id: str
    run_id: str | None
    workflow_status: str = Field(description="Temporal's execution status: RUNNING, COMPLETED...")
    state: str = Field(
        description="awaiting_verification, planning, awaiting_approval, publishing, "
        "published, rejected, unverified or failed"
    )
    target_scope: str
    live: bool = Field(
        description="False when the worker did not answer; state then comes from "
        "the LoregateState search attribute and the plan is empty"
    )
    requires_approval: bool | None = None
    verification: VerificationPublic | None = None
    plan: list[PlanEntryPublic] = Field(default_factory=list)
    critique: str | None = None
    reward: float | None = None
    cognify_engine: str | None = None
    cognify_fallback: str | None = None
    redaction_counts: dict[str, int] = Field(default_factory=dict)
    decided_by: str | None = None
    decision_note: str | None = None
    refusals: list[RefusalPublic] = Field(default_factory=list)
    published: list[PublishedPublic] = Field(default_factory=list)
    error: str | None = None
    started_at: datetime | None = None
    closed_at: datetime | None = None


class DecisionPublic(BaseModel):
    """The promotion's answer to an approval or rejection."""

    task_id: str
    workflow_id: str
    decision: str
    approver: str
    accepted: bool
    state: str
    reason: str


class PromotionSummary(BaseModel):
    """One promotion in a listing."""

    task_id: str
    workflow_id: str
    state: str | None
    workflow_status: str
    target_scope: str | None
    org: str
    project: str
    description: str
    started_at: datetime | None


class PromotionList(BaseModel):
    promotions: list[PromotionSummary]


@router.post("/v1/tasks/{task_id}/promotion", status_code=202, response_model=PromotionStarted)
async def start_promotion(
    task_id: TaskId, body: PromotionStart, request: Request, principal: CurrentPrincipal
) -> PromotionStarted:
    """Start the task's promotion into `target_scope`; a second start returns the running one."""
    return await service.start_promotion(request.app.state, principal, task_id, body)


@router.get("/v1/promotions", response_model=PromotionList)
async def list_promotions(
    request: Request,
    principal: CurrentPrincipal,
    state: Annotated[PromotionState | None, Query(description="Only promotions in this state")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> PromotionList:
    """Promotions of tasks the caller may read, newest first (`state=awaiting_approval`: pending ones)."""
    return await service.list_promotions(request.app.state, principal, state, limit)


@router.get("/v1/promotions/{task_id}", response_model=PromotionPublic)
async def show_promotion(task_id: TaskId, request: Request, principal: CurrentPrincipal) -> PromotionPublic:
    """The task's promotion: its state, plan, verification, refusals and what it published."""
    return await service.promotion_status(request.app.state, principal, task_id)


@router.post("/v1/promotions/{task_id}/verify", response_model=PromotionPublic)
async def verify_promotion(
    task_id: TaskId, body: VerificationIn, request: Request, principal: CurrentPrincipal
) -> PromotionPublic:
    """Give the verification evidence a promotion waits for (once)."""
    return await service.verify_promotion(request.app.state, principal, task_id, body)


@router.post("/v1/promotions/{task_id}/approve", response_model=DecisionPublic)
async def approve_promotion(
    task_id: TaskId, request: Request, principal: CurrentPrincipal, body: OptionalDecision = None
) -> DecisionPublic:
    """Approve a promotion awaiting approval, as the caller; it then publishes its plan."""
    decision = body or DecisionIn()
    return await service.decide_promotion(request.app.state, principal, task_id, "approve", decision)


@router.post("/v1/promotions/{task_id}/reject", response_model=DecisionPublic)
async def reject_promotion(
    task_id: TaskId, request: Request, principal: CurrentPrincipal, body: OptionalDecision = None
) -> DecisionPublic:
    """Reject a promotion awaiting approval, as the caller; nothing is published."""
    decision = body or DecisionIn()
    return await service.decide_promotion(request.app.state, principal, task_id, "reject", decision)
