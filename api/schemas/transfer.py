"""The records of an export file (`GET /v1/exports`) and the answers of an import (`POST /v1/imports`).

Each line of an export is one of the `*Record` models, told apart by `kind`; governance/transfer.py says
what the file holds and why. The same models read a file back, so a line that is not one of them is refused
naming its line number.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from governance.scopes import Scope, ValidationSource

__all__ = [
    "ImportMode",
    "IMPORT_SCOPE_KEY_PATTERN",
    "HeaderRecord",
    "ProvenanceRecord",
    "BugPatternRecord",
    "MemoryRecord",
    "EventRecord",
    "StagingRecord",
    "WorkingMemoryRecord",
    "TrailerRecord",
    "RECORD_MODELS",
    "ImportOptions",
    "ImportPublic",
]

ImportMode = Literal["gate", "restore"]


class _Record(BaseModel):
    # a field this version does not know is a malformed line, not something to drop silently
    model_config = ConfigDict(extra="forbid")


class HeaderRecord(_Record):
    """The first line: what the file is, whose, and when it was written."""

    kind: Literal["header"] = "header"
    format: Literal["loregate-export"] = "loregate-export"
    version: int
    org: str = Field(min_length=1)
    project: str | None = None
    scope_key: str = Field(min_length=1)
    exported_at: datetime
    exported_by: str
    includes_staging: bool = False


class ProvenanceRecord(_Record):
    """A memory's source staging entry as the exporter may see it (`redacted` as in `GET /v1/memories`)."""

    id: int
    task_id: str
    seq: int
    kind: str
    content: str
    payload: Any = None
    actor_id: str
    actor_type: str
    created_at: datetime
    redacted: bool


class BugPatternRecord(_Record):
    """A bug pattern's signature and fix statistics (table `bug_patterns`)."""

    scope_key: str
    error_type: str
    signature: str
    occurrences: int
    first_seen: datetime
    last_seen: datetime
    solutions: list[Any]


class MemoryRecord(_Record):
    """A published memory with its trust, state and lineage; everything but the embedding."""

    kind: Literal["memory"] = "memory"
    id: str = Field(pattern=r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
    citation: str = Field(min_length=1, max_length=16)
    memory_type: str
    scope: Scope
    scope_key: str
    org: str
    project: str | None
    canonical_key: str | None
    title: str
    content: str
    content_hash: str
    confidence: float
    base_confidence: float | None
    validation_source: str | None
    validation_count: int
    last_validated_at: datetime | None
    decay_policy: str
    importance: float
    reward: float | None
    success: bool | None
    source_task_ids: list[str]
    source_entry_ids: list[int]
    related_ids: list[str]
    supersedes_id: str | None
    deprecated_at: datetime | None
    valid_from_commit: str | None
    valid_to_commit: str | None
    contradiction_note: str | None
    expires_at: datetime | None
    retrieval_count: int
    usefulness: float
    version: int
    created_at: datetime
    updated_at: datetime
    stale_at: datetime | None
    stale_reason: str | None
    derived_from: list[str] = Field(default_factory=list, description="ids of the memories it builds on")
    bug_pattern: BugPatternRecord | None = None
    episode: dict[str, Any] | None = Field(
        default=None, description="An episode's structured fields (docs/episodes.md), restored with it"
    )
    provenance: list[ProvenanceRecord] = Field(default_factory=list)


class EventRecord(_Record):
    """One audit event of an exported memory (`memory_events`)."""

    kind: Literal["event"] = "event"
    id: int
    memory_id: str | None
    event_type: str
    actor_id: str | None
    actor_type: str | None
    task_id: str | None
    workflow_id: str | None
    reason: str | None
    payload: Any = None
    dedupe_key: str | None  # the idempotency key; file format version 1 keeps the column's old name
    created_at: datetime


class StagingRecord(_Record):
    """A staging entry of a task the exported memories came from (only for readers of that staging)."""

    kind: Literal["staging"] = "staging"
    id: int
    task_id: str
    seq: int
    entry_kind: str
    content: str
    payload: Any = None
    actor_id: str
    actor_type: str
    idempotency_key: str | None
    created_at: datetime


class WorkingMemoryRecord(_Record):
    """A task's working memory (hypotheses, files and symbols), beside its staging (only for its readers)."""

    kind: Literal["working_memory"] = "working_memory"
    task_id: str
    hypotheses: list[dict[str, Any]]
    files: list[dict[str, Any]]
    symbols: list[dict[str, Any]]


class TrailerRecord(_Record):
    """The last line: how many records of each kind came before it (a file cut short lacks it)."""

    kind: Literal["trailer"] = "trailer"
    counts: dict[str, int]


RECORD_MODELS: dict[str, type[_Record]] = {
    "header": HeaderRecord,
    "memory": MemoryRecord,
    "event": EventRecord,
    "staging": StagingRecord,
    "working_memory": WorkingMemoryRecord,
    "trailer": TrailerRecord,
}


# the scopes a gate import may target (a task's own scope is no place to import into)
IMPORT_SCOPE_KEY_PATTERN = r"^(worktree:[^/]+/[^/]+/.+|project:[^/]+/[^/]+|org:[^/]+)$"


class ImportOptions(BaseModel):
    """Where an import through the gate goes (the query of `POST /v1/imports`; the body is the file)."""

    model_config = ConfigDict(extra="forbid")

    scope_key: str = Field(
        max_length=600,
        pattern=IMPORT_SCOPE_KEY_PATTERN,
        description="The target scope (worktree:, project: or org:), in the file's org",
    )
    project: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="Into org scope: the project the import task belongs to (default: the caller's)",
    )
    verified: ValidationSource | None = Field(
        default=None, description="Verification evidence to start the promotion with (else it waits for it)"
    )


class ImportPublic(BaseModel):
    """What an import did: per kind, how many records were written, found already there, or left out."""

    mode: ImportMode
    file_sha256: str
    org: str
    source_scope_key: str
    created: dict[str, int] = Field(default_factory=dict)
    unchanged: dict[str, int] = Field(default_factory=dict)
    skipped: dict[str, int] = Field(default_factory=dict)
    # gate mode
    target_scope_key: str | None = None
    task_id: str | None = None
    workflow_id: str | None = None
    promotion_created: bool | None = None
    # restore mode: the RESTORED receipt
    receipt_event_id: int | None = None
