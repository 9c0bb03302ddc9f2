"""Request and response models of change requests: a supersede or retire waiting for an approval."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from workflows.change_request_contract import ChangeRequestState

__all__ = [
    "ChangeRequestState",
    "MemorySide",
    "ChangeRequestPublic",
    "ChangeRequestList",
    "ChangeDecisionPublic",
]


class MemorySide(BaseModel):
    """The memory a request changes, as it is now (the "old" side)."""

    id: str
    citation: str
    title: str
    content: str
    confidence: float
    active: bool


class ChangeRequestPublic(BaseModel):
    """A change request: what would change (old and new side by side), who asked, where it stands.

    `title` and `content` are the proposed ones (already redacted; none for a retirement). Approve it with
    `POST /v1/change-requests/{id}/approve` (a principal allowed to approve the memory's scope), or in the
    Temporal UI by signalling its workflow.
    """

    id: str
    workflow_id: str | None
    operation: str = Field(description="supersede | retire")
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
