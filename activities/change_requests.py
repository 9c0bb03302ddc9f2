"""Activities of `ChangeRequestWorkflow`: describe a stored request, apply it once approved, or close it.

The request's content, title and embedding stay in Postgres (governance/storage/change_requests.py); these
activities take its id and return shortened texts and states only. Applying is one transaction that
re-checks the target is still the head (else the request ends `conflict`). Every activity is idempotent: a
retry finds the request already decided and answers as the first attempt did.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio import activity
from temporalio.exceptions import ApplicationError

from governance.changes import ChangeTrust
from governance.errors import NotFound
from governance.scopes import ActorType
from governance.storage.change_requests import (
    apply_change_request,
    change_target,
    close_change_request,
    get_change_request,
)

__all__ = [
    "ChangeRequestActivities",
    "DescribeChangeInput",
    "ChangeDescription",
    "ApplyChangeInput",
    "ApplyChangeResult",
    "CloseChangeInput",
    "PREVIEW_CHARS",
]

# how much of the old and new texts travels through Temporal (the API serves them whole)
PREVIEW_CHARS = 280


def _short(text: str | None, limit: int = PREVIEW_CHARS) -> str:
    text = text or ""
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class DescribeChangeInput:
    """Which request to describe."""

    request_id: str


@dataclass
class ChangeDescription:
    """A request as the workflow shows it: tenant and scope for the checks, old and new shortened."""

    request_id: str
    memory_id: str
    operation: str
    org: str
    project: str | None
    scope: str
    requested_by: str
    reason: str
    state: str
    old_title: str
    old_content: str
    new_title: str | None
    new_content: str | None


@dataclass
class ApplyChangeInput:
    """Apply an approved request (the request id is the idempotency key)."""

    request_id: str
    workflow_id: str
    approver: str
    approver_type: str | None
    note: str = ""


@dataclass
class ApplyChangeResult:
    """`applied` (with the resulting memory) or `conflict` (nothing applied), and why."""

    state: str
    result_memory_id: str | None
    citation: str | None
    reason: str


@dataclass
class CloseChangeInput:
    """Close a request without a change: rejected, expired or refused."""

    request_id: str
    workflow_id: str
    state: str
    decided_by: str | None
    decided_by_type: str | None
    note: str


class ChangeRequestActivities:
    """The change request's database steps, over one engine."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine

    @activity.defn(name="change_request_describe")
    async def describe(self, data: DescribeChangeInput) -> ChangeDescription:
        """The request and its target, shortened; a request that does not exist fails the workflow."""
        try:
            async with self._engine.connect() as conn:
                request = await get_change_request(conn, data.request_id)
                target = await change_target(conn, request.memory_id)
        except NotFound as exc:
            raise ApplicationError(str(exc), type=NotFound.__name__, non_retryable=True) from exc
        return ChangeDescription(
            request_id=request.id,
            memory_id=request.memory_id,
            operation=request.operation,
            org=request.org,
            project=request.project,
            scope=request.scope,
            requested_by=request.requested_by,
            reason=_short(request.reason),
            state=request.state,
            old_title=_short(target.title),
            old_content=_short(target.content),
            new_title=_short(request.title) if request.title is not None else None,
            new_content=_short(request.content) if request.content is not None else None,
        )

    @activity.defn(name="change_request_apply")
    async def apply(self, data: ApplyChangeInput) -> ApplyChangeResult:
        """Apply the approved change in one transaction, or end the request `conflict`."""
        trust = ChangeTrust.HUMAN_VALIDATED if data.approver_type == ActorType.HUMAN else ChangeTrust.APPROVED
        async with self._engine.begin() as conn:
            applied = await apply_change_request(
                conn,
                data.request_id,
                approver=data.approver,
                approver_type=data.approver_type or "",
                note=data.note,
                workflow_id=data.workflow_id,
                trust=trust,
            )
        return ApplyChangeResult(applied.state, applied.result_memory_id, applied.citation, applied.reason)

    @activity.defn(name="change_request_close")
    async def close(self, data: CloseChangeInput) -> str:
        """Close the request without a change; answers the state it ends in."""
        async with self._engine.begin() as conn:
            closed = await close_change_request(
                conn,
                data.request_id,
                state=data.state,
                decided_by=data.decided_by,
                decided_by_type=data.decided_by_type,
                note=data.note,
                workflow_id=data.workflow_id,
            )
        return closed.state
