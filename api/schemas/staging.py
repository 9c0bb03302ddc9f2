"""Public request/response models of the staging API (field names are part of the stable v1 API)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from api.schemas.live import FixHintPublic
from api.schemas.text import MAX_JSON_DEPTH, NAME_PATTERN, WORKTREE_PATTERN, JsonPayload, Text
from governance.scopes import EntryKind
from governance.staging import TASK_ID_PATTERN

__all__ = [
    "TaskCreate",
    "TaskPublic",
    "EntryIn",
    "EntriesIn",
    "EntryAck",
    "EntriesAck",
    "EntryPublic",
    "EntriesPage",
]

_Name = Field(min_length=1, max_length=200, pattern=NAME_PATTERN)


class TaskCreate(BaseModel):
    """Open a task in a tenant (org, project) and worktree."""

    model_config = ConfigDict(extra="forbid")

    org: Text = _Name
    project: Text = _Name
    worktree: Text = Field(min_length=1, max_length=200, pattern=WORKTREE_PATTERN)
    description: Text = Field(min_length=1, max_length=10_000)
    task_id: str | None = Field(
        default=None, pattern=TASK_ID_PATTERN, description="Optional client-chosen id"
    )


class TaskPublic(BaseModel):
    """A task and where it stands."""

    model_config = ConfigDict(from_attributes=True)

    task_id: str = Field(validation_alias=AliasChoices("task_id", "id"))
    org: str
    project: str
    worktree: str
    description: str
    status: str = Field(
        description="open, promoting, then how its last promotion ended (promoted, unverified, rejected, "
        "failed); closed or erased for a task closed before any promotion ended"
    )
    created_by: str
    created_at: datetime
    promotion_workflow_id: str | None = None
    closed_reason: str | None = Field(
        default=None, description="Why the task takes no more entries or promotions (closed, erased)"
    )


class EntryIn(BaseModel):
    """One staging entry. The actor is the authenticated principal, so there is no actor field."""

    model_config = ConfigDict(extra="forbid")

    kind: EntryKind
    content: Text
    payload: JsonPayload = Field(
        default=None,
        description="Any JSON value: finite numbers only (no NaN or Infinity), valid Unicode, "
        f"at most {MAX_JSON_DEPTH} levels of nesting",
    )
    idempotency_key: Text | None = Field(default=None, min_length=1, max_length=200)


class EntriesIn(BaseModel):
    """A batch: stored all or nothing."""

    model_config = ConfigDict(extra="forbid")

    entries: list[EntryIn] = Field(min_length=1)


class EntryAck(BaseModel):
    id: int
    seq: int
    replayed: bool = Field(description="True when an idempotency key returned an earlier write")


class EntriesAck(BaseModel):
    task_id: str
    entries: list[EntryAck]
    promotion: int = Field(
        default=1,
        description="The task's promotion these entries belong to: the running one until it takes its "
        "snapshot, then the next (a follow-up promotion)",
    )
    hints: list[FixHintPublic] = Field(
        default_factory=list,
        description="fixes other tasks of the project wrote after an error of this signature (unreviewed)",
    )


class EntryPublic(BaseModel):
    """A staging entry as read back; `actor` is the principal that wrote it."""

    model_config = ConfigDict(from_attributes=True)

    id: int
    seq: int
    kind: str
    content: str
    payload: Any = None
    actor: str
    actor_type: str
    idempotency_key: str | None = None
    created_at: datetime


class EntriesPage(BaseModel):
    task_id: str
    entries: list[EntryPublic]
    next_after_seq: int | None = Field(description="Pass as after_seq for the next page; null at the end")
