"""Activities of `ChangeRequestWorkflow`: describe a stored request, apply it once approved, or close it.

A lift is described by its scopes and its memories' titles only (never their content). Applying a request
is governance/operations/changes.py, the same use case the gateway applies a change through.

The request's content, title and embedding stay in Postgres (governance/storage/change_requests.py); these
activities take its id and return shortened texts and states only. Applying is one transaction that
re-checks the target is still the head (else the request ends `conflict`). Every activity is idempotent: a
retry finds the request already decided and answers as the first attempt did.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from temporalio import activity
from temporalio.exceptions import ApplicationError

from governance.changes import ChangeOperation
from governance.config import Settings
from governance.errors import NotFound
from governance.operations.changes import apply_approved
from governance.operations.lifting import LiftRules
from governance.storage.change_requests import (
    ChangeRequest,
    change_target,
    close_change_request,
    get_change_request,
)
from governance.storage.lifting import lift_items, lift_sources

__all__ = [
    "ChangeRequestActivities",
    "DescribeChangeInput",
    "ChangeDescription",
    "ApplyChangeInput",
    "ApplyChangeResult",
    "CloseChangeInput",
    "PREVIEW_CHARS",
    "LIFT_TITLES",
]

# how much of the old and new texts travels through Temporal (the API serves them whole)
PREVIEW_CHARS = 280
# how many titles of a lift's memories the workflow shows (the API lists them all)
LIFT_TITLES = 20
TITLE_CHARS = 120


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
    # a lift: where to, from which scope keys, and the titles it carries (never their content)
    target_scope_key: str | None = None
    lift_from: list[str] = field(default_factory=list)
    lift_titles: list[str] = field(default_factory=list)
    lift_count: int = 0


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


def _description(
    request: ChangeRequest,
    *,
    old_title: str,
    old_content: str,
    new_title: str | None = None,
    new_content: str | None = None,
) -> ChangeDescription:
    """What every request shows (who asks what, where, why, in which state) and what this one changes."""
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
        old_title=old_title,
        old_content=old_content,
        new_title=new_title,
        new_content=new_content,
    )


class ChangeRequestActivities:
    """The change request's database steps, over one engine."""

    def __init__(self, engine: AsyncEngine, settings: Settings | None = None) -> None:
        self._engine = engine
        # a lift's publish dedups with the promotion's thresholds
        chosen = settings if settings is not None else Settings()
        self._lift_rules = LiftRules(chosen.dedup_similarity_threshold, chosen.related_similarity_threshold)

    @activity.defn(name="change_request_describe")
    async def describe(self, data: DescribeChangeInput) -> ChangeDescription:
        """The request and its target, shortened; a request that does not exist fails the workflow."""
        try:
            async with self._engine.connect() as conn:
                request = await get_change_request(conn, data.request_id)
                if request.operation == ChangeOperation.LIFT:
                    return await self._describe_lift(conn, request)
                target = await change_target(conn, request.memory_id)
        except NotFound as exc:
            raise ApplicationError(str(exc), type=NotFound.__name__, non_retryable=True) from exc
        return _description(
            request,
            old_title=_short(target.title),
            old_content=_short(target.content),
            new_title=_short(request.title) if request.title is not None else None,
            new_content=_short(request.content) if request.content is not None else None,
        )

    async def _describe_lift(self, conn: AsyncConnection, request: ChangeRequest) -> ChangeDescription:
        """A lift as the workflow shows it: from which scopes to which, and titles only."""
        items = await lift_items(conn, request.id)
        sources = await lift_sources(conn, [i.memory_id for i in items])
        titles = [_short(i.title, TITLE_CHARS) for i in items[:LIFT_TITLES]]
        return replace(
            _description(request, old_title=titles[0] if titles else "", old_content=""),
            target_scope_key=request.target_scope_key,
            lift_from=sorted({s.scope_key for s in sources}),
            lift_titles=titles,
            lift_count=len(items),
        )

    @activity.defn(name="change_request_apply")
    async def apply(self, data: ApplyChangeInput) -> ApplyChangeResult:
        """Apply the approved change in one transaction, or end the request `conflict`."""
        applied = await apply_approved(
            self._engine,
            data.request_id,
            approver=data.approver,
            approver_type=data.approver_type,
            note=data.note,
            workflow_id=data.workflow_id,
            lift_rules=self._lift_rules,
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
