"""Live warnings across tasks as the API shows them: another task's failed approach or fix, unreviewed."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

__all__ = ["LiveWarningPublic", "FixHintPublic"]


class LiveWarningPublic(BaseModel):
    """What another running or ended task of the project learnt, before any promotion: never published
    knowledge, never above the published memory (`standing` is always `unreviewed`)."""

    kind: str = Field(description="failed_approach | fix")
    text: str = Field(description="the approach tried, or the error's signature (type: masked headline)")
    detail: str | None = Field(description="why it failed, or the fix written after the error")
    task_id: str
    agent: str = Field(description="the principal who wrote it")
    at: datetime
    task_status: str
    same_worktree: bool
    similarity: float | None = None
    standing: str = "unreviewed"


class FixHintPublic(LiveWarningPublic):
    """An appended `error` whose signature another task already got past: the fix it wrote (unreviewed)."""

    entry_index: int = Field(description="the position of the error entry in the batch sent")
    seq: int = Field(description="the error entry's sequence number")
