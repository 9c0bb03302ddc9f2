"""Activities of `ChangeRequestWorkflow`: describe a stored request, apply it once approved, or close it.

A request is described by ids, scopes, counts and states only: no reason, title or content of the old or
new memory, no note (a Temporal history is out of erasure's reach once written, docs/privacy.md); the
approver reads the texts in loregate's console, CLI or API, which the workflow's details link to. Applying
a request is governance/operations/changes.py, the same use case the gateway applies a change through.

The request's content, title, reason and embedding stay in Postgres (governance/storage/change_requests.py);
a decision's note made through the API is read from the gateway's grant row. Applying is one transaction that
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
from governance.storage.promotions import grant_note

__all__ = [
    "ChangeRequestActivities",
    "DescribeChangeInput",
    "ChangeDescription",
    "ApplyChangeInput",
    "ApplyChangeResult",
    "CloseChangeInput",
]


@dataclass
class DescribeChangeInput:
    """Which request to describe."""

    request_id: str


@dataclass
class ChangeDescription:
    """A request as the workflow shows it: tenant and scope for the checks, ids and counts.

    `reason`, `old_*`, `new_*` and `lift_titles` stay empty (older histories carry them shortened).
    """

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
    # the request's page in loregate's console (the workflow's details link there)
    console_url: str = ""


@dataclass
class ApplyChangeInput:
    """Apply an approved request (the request id is the idempotency key)."""

    request_id: str
    workflow_id: str
    approver: str
    approver_type: str | None
    note: str = ""
    grant: str | None = None  # the gateway's grant: its row holds the note of an API decision


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
    grant: str | None = None  # the gateway's grant: its row holds the note of an API decision


def _description(request: ChangeRequest, console: str) -> ChangeDescription:
    """What every request shows: who asks what, where, in which state, and where to read it; no text.

    Titles, contents and the reason stay in Postgres (the console link and the API serve them), so erasing
    them there leaves no copy in a history.
    """
    return ChangeDescription(
        request_id=request.id,
        memory_id=request.memory_id,
        operation=request.operation,
        org=request.org,
        project=request.project,
        scope=request.scope,
        requested_by=request.requested_by,
        reason="",
        state=request.state,
        old_title="",
        old_content="",
        new_title=None,
        new_content=None,
        console_url=f"{console}/changes/{request.id}",
    )


class ChangeRequestActivities:
    """The change request's database steps, over one engine."""

    def __init__(self, engine: AsyncEngine, settings: Settings | None = None) -> None:
        self._engine = engine
        # a lift's publish dedups with the promotion's thresholds
        chosen = settings if settings is not None else Settings()
        self._lift_rules = LiftRules(chosen.dedup_similarity_threshold, chosen.related_similarity_threshold)
        self._console = chosen.console_base()

    @activity.defn(name="change_request_describe")
    async def describe(self, data: DescribeChangeInput) -> ChangeDescription:
        """The request and its target, shortened; a request that does not exist fails the workflow."""
        try:
            async with self._engine.connect() as conn:
                request = await get_change_request(conn, data.request_id)
                if request.operation == ChangeOperation.LIFT:
                    return await self._describe_lift(conn, request)
                await change_target(conn, request.memory_id)  # a request about a memory now gone fails
        except NotFound as exc:
            raise ApplicationError(str(exc), type=NotFound.__name__, non_retryable=True) from exc
        return _description(request, self._console)

    async def _describe_lift(self, conn: AsyncConnection, request: ChangeRequest) -> ChangeDescription:
        """A lift as the workflow shows it: from which scope keys to which, and how many memories."""
        items = await lift_items(conn, request.id)
        sources = await lift_sources(conn, [i.memory_id for i in items])
        return replace(
            _description(request, self._console),
            target_scope_key=request.target_scope_key,
            lift_from=sorted({s.scope_key for s in sources}),
            lift_titles=[],
            lift_count=len(items),
        )

    @activity.defn(name="change_request_apply")
    async def apply(self, data: ApplyChangeInput) -> ApplyChangeResult:
        """Apply the approved change in one transaction, or end the request `conflict`.

        The result names the state only: the stored reason may quote a title or the note."""
        applied = await apply_approved(
            self._engine,
            data.request_id,
            approver=data.approver,
            approver_type=data.approver_type,
            note=data.note or await self._note(data.workflow_id, data.grant),
            workflow_id=data.workflow_id,
            lift_rules=self._lift_rules,
        )
        reason = (
            applied.state
            if applied.state != "conflict"
            else "the memory changed meanwhile (superseded, retired or lifted): nothing was applied"
        )
        return ApplyChangeResult(applied.state, applied.result_memory_id, applied.citation, reason)

    async def _note(self, workflow_id: str, grant: str | None) -> str:
        async with self._engine.connect() as conn:
            return await grant_note(conn, workflow_id=workflow_id, grant=grant) or ""

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
                note=data.note
                or await grant_note(conn, workflow_id=data.workflow_id, grant=data.grant)
                or data.state,
                workflow_id=data.workflow_id,
            )
        return closed.state
