"""Request and response models of published memory's trust and lifecycle (validate, supersede, retire...)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from api.schemas.text import Text
from governance.scopes import ValidationSource
from governance.trust import DecayPolicy

__all__ = [
    "ValidateIn",
    "ValidatePublic",
    "FeedbackIn",
    "FeedbackPublic",
    "SupersedeIn",
    "SupersedePublic",
    "RetireIn",
    "RetirePublic",
    "VersionPublic",
    "HistoryPublic",
    "MemoryStateName",
    "MemoryListItemPublic",
    "MemoryListPublic",
]

# where a memory stands: active; superseded (a newer version names it); retired (deprecated without a
# successor); expired (past its expires_at)
MemoryStateName = Literal["active", "superseded", "retired", "expired"]

IdempotencyKey = Field(default=None, max_length=200, description="A retry with the same key changes nothing")


class ValidateIn(BaseModel):
    """Evidence that a memory is right."""

    model_config = ConfigDict(extra="forbid")

    source: ValidationSource
    reason: str | None = Field(default=None, max_length=2000)
    idempotency_key: str | None = IdempotencyKey


class ValidatePublic(BaseModel):
    """The memory's confidence after the boost (capped at 1.0).

    A principal's validations of one memory with one source count once: a repeat answers with the unchanged
    confidence and `counted` false.
    """

    id: str
    citation: str
    confidence: float
    validation_source: ValidationSource
    counted: bool = Field(
        default=True,
        description="False when this principal's validation with this source was already counted",
    )


class FeedbackIn(BaseModel):
    """Whether the memory helped."""

    model_config = ConfigDict(extra="forbid")

    helpful: bool
    idempotency_key: str | None = IdempotencyKey


class FeedbackPublic(BaseModel):
    """The memory's usefulness after the feedback.

    One vote per principal, its latest: usefulness is a smoothed mean of the principals' latest votes
    (governance/trust.py `usefulness_from_votes`; a first vote moves 0.5 to 0.65 or 0.35, as an EMA step
    with alpha 0.3 would).
    """

    id: str
    citation: str
    usefulness: float


class SupersedeIn(BaseModel):
    """New content replacing the memory, and why."""

    model_config = ConfigDict(extra="forbid")

    content: Text = Field(min_length=1, max_length=64 * 1024)
    reason: Text = Field(min_length=1, max_length=2000)
    title: Text | None = Field(default=None, max_length=500)
    canonical_key: Text | None = Field(default=None, max_length=500)
    valid_from_commit: Text | None = Field(default=None, max_length=100)
    idempotency_key: Text | None = IdempotencyKey


class SupersedePublic(BaseModel):
    """The new head of the chain and the memory it replaced."""

    id: str
    citation: str
    superseded_id: str


class RetireIn(BaseModel):
    """Why the memory no longer holds."""

    model_config = ConfigDict(extra="forbid")

    reason: str = Field(min_length=1, max_length=2000)
    idempotency_key: str | None = IdempotencyKey


class RetirePublic(BaseModel):
    """The retired memory."""

    id: str
    citation: str
    retired: bool = True


class VersionPublic(BaseModel):
    """One link of a supersession chain."""

    id: str
    citation: str
    version: int
    title: str
    content: str
    canonical_key: str | None
    scope_key: str
    confidence: float
    supersedes_id: str | None
    active: bool
    deprecated_at: datetime | None
    valid_from_commit: str | None
    valid_to_commit: str | None
    contradiction_note: str | None
    created_at: datetime


class HistoryPublic(BaseModel):
    """The whole chain through the memory, oldest first."""

    id: str
    versions: list[VersionPublic]


class MemoryListItemPublic(BaseModel):
    """A memory as a scope's listing shows it (open it for its content and provenance)."""

    id: str
    citation: str
    type: str
    scope: str
    scope_key: str
    title: str
    confidence: float
    version: int
    state: MemoryStateName
    created_at: datetime
    deprecated_at: datetime | None
    expires_at: datetime | None


class MemoryListPublic(BaseModel):
    """A page of one scope's memories, newest first, and the filters that chose them."""

    scope_key: str
    query: str | None
    types: list[str]
    min_trust: float | None
    max_trust: float | None
    state: MemoryStateName | None
    offset: int
    limit: int
    next_offset: int | None
    memories: list[MemoryListItemPublic]


class DecayPolicyIn(BaseModel):
    """How the memory's confidence should fade without new validation (`manual_only`: it never does)."""

    model_config = ConfigDict(extra="forbid")

    decay_policy: DecayPolicy
    reason: str | None = Field(default=None, max_length=2000)


class DecayPolicyPublic(BaseModel):
    """The memory's decay policy after the request; `changed` is false when it already was this."""

    id: str
    citation: str
    decay_policy: DecayPolicy
    changed: bool
