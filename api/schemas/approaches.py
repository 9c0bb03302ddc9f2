"""Request and response models of circular-fix detection: tried approaches and checks of proposals."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from api.schemas.live import LiveWarningPublic
from api.schemas.text import Text
from governance.approaches import ApproachOutcome

__all__ = ["ApproachIn", "CheckIn", "ApproachPublic", "CheckPublic"]


class ApproachIn(BaseModel):
    """One attempted approach and how it ended."""

    model_config = ConfigDict(extra="forbid")

    approach: Text = Field(min_length=1, max_length=8000)
    outcome: ApproachOutcome
    reason: Text | None = Field(default=None, max_length=4000)
    subtask: Text = Field(default="", max_length=500)
    idempotency_key: Text | None = Field(default=None, max_length=200)


class CheckIn(BaseModel):
    """A proposed approach."""

    model_config = ConfigDict(extra="forbid")

    approach: Text = Field(min_length=1, max_length=8000)
    subtask: Text = Field(default="", max_length=500)


class ApproachPublic(BaseModel):
    """An approach as recorded for a task/subtask."""

    model_config = ConfigDict(from_attributes=True)

    approach: str
    attempts: int
    failures: int
    last_outcome: str
    failure_reasons: list[str]
    last_attempt_at: datetime
    similarity: float | None = None


class CheckPublic(BaseModel):
    """`valid: false` when the approach (or a near-duplicate) already failed, with history and suggestion."""

    valid: bool
    reason: str
    suggestion: str | None
    stuck: bool
    refusals: int
    history: list[ApproachPublic]
    elsewhere: list[LiveWarningPublic] = Field(
        default_factory=list,
        description="the same or a near-same approach failed in another task of the project (unreviewed; "
        "informs, never refuses)",
    )
