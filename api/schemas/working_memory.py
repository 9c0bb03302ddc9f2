"""Request and response models of a task's working memory and of recall by code location."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints

# NO_NUL and NOT_BLANK live with the patterns whose refusals are worded (api/schemas/text.py)
from api.schemas.text import NO_NUL, NOT_BLANK, refuse_lone_surrogates

__all__ = [
    "NO_NUL",
    "NOT_BLANK",
    "CodePath",
    "CodeSymbol",
    "HypothesisIn",
    "WorkingMemoryIn",
    "HypothesisPublic",
    "LocationPublic",
    "BufferedEntryPublic",
    "WorkingStatsPublic",
    "WorkingMemoryPublic",
    "FileHistoryIn",
    "FileHistoryItemPublic",
    "FileHistoryPublic",
    "FileStatsPublic",
    "CommonErrorPublic",
    "ProjectStatsPublic",
]

MAX_ITEMS = 100
# the constraints come before the validator, so the OpenAPI schema states them
CodePath = Annotated[
    str,
    StringConstraints(min_length=1, max_length=400, pattern=NO_NUL),
    BeforeValidator(refuse_lone_surrogates),
]
CodeSymbol = Annotated[
    str,
    StringConstraints(min_length=1, max_length=200, pattern=NO_NUL),
    BeforeValidator(refuse_lone_surrogates),
]


class HypothesisIn(BaseModel):
    """A hypothesis: what the agent believes, how firmly, and the staging entries that support it."""

    model_config = ConfigDict(extra="forbid")

    text: Annotated[
        str,
        StringConstraints(min_length=1, max_length=2000, pattern=NO_NUL),
        BeforeValidator(refuse_lone_surrogates),
    ]
    confidence: float = Field(ge=0.0, le=1.0, description="At 0.9 or more it is appended once as a decision")
    evidence_ids: list[Annotated[int, Field(ge=1, le=2**63 - 1)]] = Field(
        default_factory=list, max_length=MAX_ITEMS, description="Ids of this task's staging entries"
    )


class WorkingMemoryIn(BaseModel):
    """What an agent adds to its task's working memory (each part optional; all or nothing)."""

    model_config = ConfigDict(extra="forbid")

    hypotheses: list[HypothesisIn] = Field(default_factory=list, max_length=MAX_ITEMS)
    files: list[CodePath] = Field(
        default_factory=list,
        max_length=MAX_ITEMS,
        description="Paths the agent tracks (repository-relative where it can)",
    )
    symbols: list[CodeSymbol] = Field(
        default_factory=list, max_length=MAX_ITEMS, description="Names it tracks"
    )


class HypothesisPublic(BaseModel):
    """A hypothesis as stored; `decision_entry_id` is the decision it became (confidence ≥ 0.9)."""

    id: int
    text: str
    confidence: float
    evidence_ids: list[int]
    decision_entry_id: int | None
    created_by: str
    created_at: datetime
    updated_at: datetime


class LocationPublic(BaseModel):
    """A file or symbol of the task: tracked by the agent, and how often its entries named it."""

    value: str
    tracked: bool
    touches: int = Field(description="Staging entries that named it")
    error_touches: int = Field(description="...of which errors")
    first_seq: int | None
    last_seq: int | None


class BufferedEntryPublic(BaseModel):
    """A staging entry in a recent buffer."""

    id: int
    seq: int
    kind: str
    content: str
    payload: Any = None
    created_at: datetime


class WorkingStatsPublic(BaseModel):
    """Counts over the task."""

    entries: int
    by_kind: dict[str, int]
    tool_calls: int
    first_at: datetime | None
    last_at: datetime | None
    files: int
    symbols: int
    hypotheses: int
    decided_hypotheses: int


class WorkingMemoryPublic(BaseModel):
    """A task's working memory in one answer: hypotheses, files and symbols, recent buffers, statistics."""

    task_id: str
    hypotheses: list[HypothesisPublic]
    files: list[LocationPublic]
    symbols: list[LocationPublic]
    recent_errors: list[BufferedEntryPublic] = Field(description="The latest 10 errors, newest first")
    recent_decisions: list[BufferedEntryPublic] = Field(description="The latest 5 decisions, newest first")
    recent_tool_calls: list[BufferedEntryPublic] = Field(description="The latest 10 tool calls, newest first")
    statistics: WorkingStatsPublic


class FileHistoryIn(BaseModel):
    """A file's history asked from inside a task (the query of `GET /v1/files/history`; gRPC's body)."""

    model_config = ConfigDict(extra="forbid")

    path: CodePath
    task_id: str = Field(min_length=1, max_length=128, description="The reader's task; fixes its tenant")
    limit: int = Field(default=20, ge=1, le=100)


class FileHistoryItemPublic(BaseModel):
    """A published memory about a file: from a task that touched it, or naming it."""

    citation: str
    type: str
    scope: str
    title: str
    content: str
    confidence: float
    success: bool | None = Field(description="An episode's outcome (None for other types)")
    created_at: datetime
    stale: bool
    via: str = Field(
        description="`task` (its source task touched the file), `episode` (an episode whose structured "
        "files name it) or `text` (it names the file)"
    )
    touches: int = Field(description="How often its source tasks' entries named the file (0 via text)")
    task_type: str | None = Field(default=None, description="An episode's task type (docs/episodes.md)")
    error_types: list[str] = Field(
        default_factory=list, description="An episode's error types, most frequent first"
    )


class FileHistoryPublic(BaseModel):
    """What happened around a file, newest first, each cited."""

    path: str
    task_id: str
    items: list[FileHistoryItemPublic]


class FileStatsPublic(BaseModel):
    """A file of the project: tasks that touched it, how many of them failed, errors naming it."""

    path: str
    tasks: int
    failed_tasks: int
    touches: int
    error_touches: int


class CommonErrorPublic(BaseModel):
    """A bug pattern seen often."""

    citation: str
    signature: str
    occurrences: int


class ProjectStatsPublic(BaseModel):
    """A project's knowledge, computed when asked: tasks, episodes and their success rate, most-touched
    files, hotspots (files with the most failed tasks, then errors), most common errors."""

    org: str
    project: str
    tasks: int
    episodes: int
    success_rate: float | None = Field(description="Succeeded episodes / episodes with an outcome")
    most_touched: list[FileStatsPublic]
    hotspots: list[FileStatsPublic]
    common_errors: list[CommonErrorPublic]
