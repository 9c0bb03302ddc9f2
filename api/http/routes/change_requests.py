"""Change requests over HTTP: list and show them (old and new side by side), approve or reject them.

The approver is the authenticated caller, never a body field (api/services/change_requests.py).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Path, Query

from api.http.deps import CurrentPrincipal, Resources
from api.schemas.approvals import ApprovalTokenPublic
from api.schemas.change_requests import (
    ChangeDecisionPublic,
    ChangeRequestList,
    ChangeRequestPublic,
    ChangeRequestState,
)
from api.schemas.promotions import DecisionIn
from api.services import change_requests

__all__ = ["router"]

router = APIRouter(prefix="/v1/change-requests", tags=["change requests"])

RequestId = Annotated[str, Path(description="The change request's id", min_length=1, max_length=64)]
# approve/reject may be sent without a body (no note)
OptionalDecision = Annotated[DecisionIn | None, Body()]


@router.get("", response_model=ChangeRequestList)
async def list_change_requests(
    resources: Resources,
    principal: CurrentPrincipal,
    state: Annotated[ChangeRequestState | None, Query(description="Only requests in this state")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> ChangeRequestList:
    """Change requests of memories the caller may read, newest first (`state=awaiting_approval`: pending)."""
    return await change_requests.list_requests(resources, principal, state, limit)


@router.get("/{request_id}", response_model=ChangeRequestPublic)
async def show_change_request(
    request_id: RequestId, resources: Resources, principal: CurrentPrincipal
) -> ChangeRequestPublic:
    """A change request: the memory as it is and the proposed change, side by side, and where it stands."""
    return await change_requests.show_request(resources, principal, request_id)


@router.post("/{request_id}/approve", response_model=ChangeDecisionPublic)
async def approve_change_request(
    request_id: RequestId, resources: Resources, principal: CurrentPrincipal, body: OptionalDecision = None
) -> ChangeDecisionPublic:
    """Approve as the key's owner (403 without `approve` at the scope, 409 once decided); then it applies."""
    decision = body or DecisionIn()
    return await change_requests.decide(resources, principal, request_id, "approve", decision)


@router.post("/{request_id}/reject", response_model=ChangeDecisionPublic)
async def reject_change_request(
    request_id: RequestId, resources: Resources, principal: CurrentPrincipal, body: OptionalDecision = None
) -> ChangeDecisionPublic:
    """Reject as the key's owner; nothing changes (403 without `approve` at the scope, 409 once decided)."""
    decision = body or DecisionIn()
    return await change_requests.decide(resources, principal, request_id, "reject", decision)


@router.post("/{request_id}/approval-token", response_model=ApprovalTokenPublic)
async def change_request_approval_token(
    request_id: RequestId, resources: Resources, principal: CurrentPrincipal
) -> ApprovalTokenPublic:
    """A 15-minute token to approve or reject this request as the caller from the Temporal UI's signal."""
    return await change_requests.change_approval_token(resources, principal, request_id)
