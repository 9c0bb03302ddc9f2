"""Request and response models of memory that learns: bug patterns matched to an error, code rules."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from api.schemas.text import Text
from governance.trust import RuleOutcome

__all__ = [
    "BugMatchIn",
    "SolutionPublic",
    "BugPatternPublic",
    "BugMatchPublic",
    "ObservationIn",
    "ObservationPublic",
    "CodeRulePublic",
    "RuleCandidatesPublic",
]


class BugMatchIn(BaseModel):
    """An error met inside a task: its text and, optionally, its stack."""

    model_config = ConfigDict(extra="forbid")

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
    standing: Literal["human", "verified", "unreviewed"] = Field(
        default="unreviewed",
        description="Who stands behind this fix: a human approved a promotion that reported it (human), or "
        "the pattern's own text names it (the pattern's standing); any other fix was merged in on its task's "
        "own word (unreviewed) and is never guidance in a context block",
    )


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


class ObservationIn(BaseModel):
    """What happened when a code rule met the work."""

    model_config = ConfigDict(extra="forbid")

    outcome: RuleOutcome = Field(
        description="`followed_passed` (EMA towards 1), `violated` or `rejected_by_human` (towards 0)"
    )
    note: Text | None = Field(default=None, max_length=2000, description="Why, for the audit trail")
    task_id: Text | None = Field(
        default=None,
        min_length=1,
        max_length=128,
        description="The task the rule met; one observation counts per principal, rule and task",
    )


class ObservationPublic(BaseModel):
    """The rule's confidence before and after the observation, and what it now is."""

    id: str
    citation: str
    outcome: RuleOutcome
    confidence_before: float
    confidence: float
    established: bool = Field(description="Above 0.8: shown in the context block")
    retirement_candidate: bool = Field(description="Below 0.3: listed at GET /v1/code-rules/candidates")
    counted: bool = Field(
        default=True, description="False when this principal already observed the rule in this task"
    )


class CodeRulePublic(BaseModel):
    """A code rule with its confidence."""

    id: str
    citation: str
    scope: str
    scope_key: str
    title: str
    content: str
    confidence: float
    updated_at: datetime


class RuleCandidatesPublic(BaseModel):
    """Code rules below 0.3 the caller may read: candidates for a human to retire, weakest first."""

    rules: list[CodeRulePublic]
