"""Patterns from patches (a unified diff in, code-rule proposals staged into a task out) and preferences from
a human's repeated corrections (docs/patch-patterns.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from api.schemas.text import MAX_JSON_DEPTH, WORKTREE_PATTERN, JsonPayload, ScopeName, Text
from governance.staging import TASK_ID_PATTERN

__all__ = ["FromPatchIn", "PatternProposalPublic", "FromPatchPublic", "CorrectionIn", "CorrectionPublic"]


class FromPatchIn(BaseModel):
    """A unified diff and how the change fared; proposals go to `task_id`, or to a task opened for them."""

    model_config = ConfigDict(extra="forbid")

    diff: Text = Field(
        min_length=1,
        description="A unified diff (`git diff`, `diff -u`), at most patch_max_bytes",
        json_schema_extra={"format": "unified-diff"},  # beyond a schema: text that is not one is a 422
    )
    outcome: Literal["success", "failure"] = Field(
        description="success: its patterns are proposed as code rules; failure: staged as failed approaches"
    )
    task_id: str | None = Field(
        default=None, pattern=TASK_ID_PATTERN, description="The task to stage into (write access needed)"
    )
    message: Text | None = Field(default=None, max_length=4000, description="The commit message or a note")
    project: ScopeName | None = Field(
        default=None,
        description="Without task_id: the project of the task opened for the patch (default: your key's)",
    )
    worktree: Text = Field(default="patches", min_length=1, max_length=200, pattern=WORKTREE_PATTERN)
    idempotency_key: Text | None = Field(default=None, min_length=1, max_length=160)


class PatternProposalPublic(BaseModel):
    """One pattern the patch shows, as staged: a `rule` entry (success) or a failed `approach` (failure)."""

    category: str
    languages: list[str]
    title: str
    rule: str
    canonical_key: str
    example: str = Field(description="A short excerpt of the patch's lines showing it, redacted")
    files: list[str]
    entry_id: int
    seq: int
    kind: str
    replayed: bool = False


class FromPatchPublic(BaseModel):
    """What a patch proposed and where it was staged; nothing is published before its promotion."""

    task_id: str | None = Field(description="None when the patch showed no pattern (nothing staged)")
    opened: bool = Field(description="True when a task was opened for the patch")
    outcome: str
    files: int
    languages: list[str]
    proposals: list[PatternProposalPublic]


class CorrectionIn(BaseModel):
    """A human's correction of an agent's work in a task; the same in several tasks proposes a preference."""

    model_config = ConfigDict(extra="forbid")

    content: Text = Field(min_length=1, max_length=10_000, description="What should be done otherwise")
    payload: JsonPayload = Field(
        default=None,
        description="`key` (a canonical key) counts differently worded corrections as one; "
        f"any JSON, at most {MAX_JSON_DEPTH} levels",
    )
    idempotency_key: Text | None = Field(default=None, min_length=1, max_length=200)


class CorrectionPublic(BaseModel):
    """The correction as staged, and how far it is from proposing a preference."""

    task_id: str
    entry_id: int
    seq: int
    replayed: bool
    tasks_seen: int = Field(description="Tasks of the project in which this same correction was written")
    threshold: int = Field(description="preference_corrections: tasks needed before a preference is proposed")
    preference_proposed: bool = Field(
        description="A `preference` entry was staged for it (into the task that reached the threshold)"
    )
