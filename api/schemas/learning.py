"""Request and response models of memory that learns: matching an error against bug patterns."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from api.schemas.text import Text

__all__ = ["BugMatchIn", "SolutionPublic", "BugPatternPublic", "BugMatchPublic"]


class BugMatchIn(BaseModel):
    """An error met inside a task: its text and, optionally, its stack."""

    task_id: Text = Field(min_length=1, max_length=128, description="The reader's task; fixes its tenant")
    error: Text = Field(min_length=1, max_length=20000, description="The error message or whole traceback")
    stack: Text | None = Field(default=None, max_length=50000, description="The stack trace, if apart")
    k: int | None = Field(default=None, ge=1, le=50, description="How many patterns (default 5)")


class SolutionPublic(BaseModel):
    """A fix tried against a pattern, with how often the task then passed verification."""

    solution: str
    successes: int
    attempts: int
    success_rate: float


class BugPatternPublic(BaseModel):
    """A published bug pattern matching the error, its best solutions first."""

    id: str
    citation: str
    scope_key: str
    title: str
    content: str
    confidence: float
    error_type: str | None
    signature: str | None
    same_signature: bool = Field(description="The error's signature equals the pattern's")
    similarity: float
    occurrences: int
    last_seen: datetime | None
    solutions: list[SolutionPublic]


class BugMatchPublic(BaseModel):
    """The error's signature and the patterns it matches: same signature first, then nearest."""

    error_type: str
    signature: str
    patterns: list[BugPatternPublic]
