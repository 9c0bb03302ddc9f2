"""Request and response models of change requests (a supersede, retire or lift waiting for an approval)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from api.schemas.memories import IdempotencyKey
from api.schemas.text import Text
from governance.limits import MAX_LIFT_ITEMS
from workflows.change_requests_contract import ChangeRequestState

__all__ = [
    "ChangeRequestState",
    "MemorySide",
    "ChangeRequestPublic",
    "ChangeRequestList",
    "ChangeDecisionPublic",
    "LiftTarget",
    "LiftIn",
    "LiftItemPublic",
]


class MemorySide(BaseModel):
    """The memory a request changes, as it is now (the "old" side)."""

    id: str
    citation: str
    title: str
    content: str
    confidence: float
    active: bool


# a memory's uuid or citation (`mem:` marks as readers copy them are accepted)
MemoryRef = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9:-]+$")]


class LiftTarget(BaseModel):
    """Where to lift: a wider scope on the memories' own line; `scope_key`, if given, must be that one."""

    model_config = ConfigDict(extra="forbid")

    scope: Literal["worktree", "project", "org"]
    scope_key: Text | None = Field(
        default=None,
        max_length=600,
        description="Optional check: the target's key (`project:<org>/<project>` …); another is a 422",
    )


class LiftIn(BaseModel):
    """Memories (uuids or citations) to lift to a wider scope, and why."""

    model_config = ConfigDict(extra="forbid")

    memory_ids: list[MemoryRef] = Field(min_length=1, max_length=MAX_LIFT_ITEMS)
    target_scope: LiftTarget
    reason: Text = Field(min_length=1, max_length=2000)
    idempotency_key: Text | None = IdempotencyKey


class LiftItemPublic(BaseModel):
    """One memory of a lift and, once applied, what it became at the target scope."""

    memory_id: str
    citation: str | None = None
    title: str
    outcome: str | None = Field(
        default=None,
        description="lifted (a new memory), duplicate (merged into one already there), superseded "
        "(replaced the target's head for the same canonical key); none until applied",
    )
    result_memory_id: str | None = None
    result_citation: str | None = None


class ChangeRequestPublic(BaseModel):
    """A change request: what would change (old and new side by side), who asked, where it stands.

    `title` and `content` are the proposed ones (already redacted; none for a retirement or a lift, whose
    memories are its `items`, lifted to `target_scope_key`). Approve it with
    `POST /v1/change-requests/{id}/approve` (a principal allowed to approve the memory's scope), or in the
    Temporal UI by signalling its workflow.
    """

    id: str
    workflow_id: str | None
    operation: str = Field(description="supersede | retire | lift")
    memory_id: str
    scope: str
    state: str = Field(description="awaiting_approval, applying, applied, rejected, conflict, expired, …")
    requested_by: str
    reason: str
    title: str | None = None
    content: str | None = None
    canonical_key: str | None = None
    redaction_counts: dict[str, int] = Field(default_factory=dict)
    decided_by: str | None = None
    decision_note: str | None = None
    result_memory_id: str | None = Field(
        default=None, description="The new head (supersede) or the retired memory, once applied"
    )
    created_at: datetime
    decided_at: datetime | None = None
    old: MemorySide | None = None
    target_scope: str | None = Field(default=None, description="A lift's wider scope")
    target_scope_key: str | None = Field(default=None, description="A lift's target, e.g. `project:acme/api`")
    items: list[LiftItemPublic] = Field(
        default_factory=list, description="A lift's memories, in order, with their outcomes once applied"
    )


class ChangeRequestList(BaseModel):
    """Change requests the caller may read, newest first."""

    change_requests: list[ChangeRequestPublic]


class ChangeDecisionPublic(BaseModel):
    """The answer to an approval or rejection: accepted, and where the request stands after it."""

    id: str
    workflow_id: str
    decision: str
    approver: str
    accepted: bool
    state: str = Field(description="Where the request ended (applied, rejected, conflict), or still stands")
    reason: str
    result_memory_id: str | None = None
