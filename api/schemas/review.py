"""Request and response models of the review of stale memories (derived memories whose source changed)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from api.schemas.text import Text

__all__ = ["StaleMemoryPublic", "ReviewPublic", "ConfirmIn", "ConfirmPublic"]


class StaleMemoryPublic(BaseModel):
    """A stale memory: what it is, why it is stale, and the citations it builds on."""

    id: str
    citation: str
    type: str
    scope: str
    scope_key: str
    title: str
    stale_at: datetime
    stale_reason: str | None
    derived_from: list[str]


class ReviewPublic(BaseModel):
    """Stale memories the caller may read, oldest mark first: confirm them, rewrite them or retire them."""

    memories: list[StaleMemoryPublic]


class ConfirmIn(BaseModel):
    """A human's word that a stale memory is still true."""

    model_config = ConfigDict(extra="forbid")

    note: Text | None = Field(default=None, max_length=2000, description="Why it still holds")


class ConfirmPublic(BaseModel):
    """The confirmed memory and the stale reason that was cleared."""

    id: str
    citation: str
    was_stale: str | None
