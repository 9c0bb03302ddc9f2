"""Request and response models of the read path: search, the context block, a memory with provenance."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from api.schemas.episodes import EpisodePublic
from api.schemas.live import LiveWarningPublic
from api.schemas.text import Text
from api.schemas.working_memory import CodePath, CodeSymbol
from governance.intent import Intent
from governance.scopes import MemoryType

__all__ = [
    "HARD_MAX_K",
    "HARD_MAX_TOKENS",
    "SearchIn",
    "ScorePartsPublic",
    "SearchResultPublic",
    "CompactResultPublic",
    "SearchPublic",
    "ContextIn",
    "ContextPublic",
    "MemoryDetailPublic",
    "ProvenanceEntryPublic",
    "ChainLinkPublic",
    "MemoryPublic",
]


# Ceilings the schema states, so clients (and schemathesis) know them; settings may only lower them.
HARD_MAX_K = 100
HARD_MAX_TOKENS = 16000


class SearchIn(BaseModel):
    """A search from inside a task."""

    model_config = ConfigDict(extra="forbid")

    query: Text = Field(min_length=1, max_length=4000)
    task_id: Text = Field(min_length=1, max_length=128, description="The reader's task; fixes its tenant")
    k: int | None = Field(
        default=None,
        ge=1,
        le=HARD_MAX_K,
        description="How many results (default `LOREGATE_SEARCH_DEFAULT_K`, at most `LOREGATE_SEARCH_MAX_K`)",
    )
    types: list[MemoryType] | None = Field(default=None, description="Memory types to search (a filter)")
    intent: Intent | None = Field(
        default=None, description="Skip intent detection: weight this intent's types strongly"
    )
    include_history: bool = Field(
        default=False, description="Also deprecated, superseded and expired memories"
    )
    compact: bool = Field(default=False, description="Same as `?compact=true`")
    files: list[CodePath] | None = Field(
        default=None,
        max_length=20,
        description="Files the question is about: memories of tasks that touched them (or naming them) rank "
        "higher; with `code_filter`, only they are returned",
    )
    symbols: list[CodeSymbol] | None = Field(
        default=None, max_length=20, description="Functions, classes or methods, as `files`"
    )
    code_filter: bool = Field(
        default=False, description="Only memories linked to `files` / `symbols` (else they are a boost)"
    )


class ScorePartsPublic(BaseModel):
    """The parts of the score, each in [0, 1] (docs/retrieval.md): relevance first, bounded adjustments."""

    similarity: float = Field(
        description="Fused relevance (RRF of vector and full text), best of the query 1.0"
    )
    recency: float
    importance: float = Field(description="importance x confidence")
    usefulness: float = Field(
        default=0.5,
        description="Readers' feedback weighed by retrievals (docs/retrieval.md); 0.5 before any vote",
    )
    type_weight: float = Field(
        default=1.0, description="What the query's intent made of the relevance: 1.0 for a preferred type"
    )
    stale_weight: float = Field(
        default=1.0, description="1.0, or 1 - the stale penalty (0.8) for a stale memory (docs/retrieval.md)"
    )


class SearchResultPublic(BaseModel):
    """One memory as search returns it, with why it ranked."""

    id: str
    citation: str
    type: str
    scope: str
    title: str
    content: str
    score: float
    score_parts: ScorePartsPublic
    confidence: float
    importance: float
    cosine: float | None
    vector_rank: int | None
    text_rank: int | None
    created_at: datetime
    updated_at: datetime
    deprecated_at: datetime | None
    expires_at: datetime | None
    stale: bool = Field(
        default=False,
        description="A memory it builds on was superseded or retired since; see GET /v1/memories/review",
    )
    stale_reason: str | None = None


class CompactResultPublic(BaseModel):
    """Progressive disclosure: enough to choose what to open with `GET /v1/memories/{citation}`."""

    citation: str
    title: str
    type: str
    score: float


class SearchPublic(BaseModel):
    """Ranked results and how the query was routed."""

    query: str
    intent: Intent
    types: list[str] | None = Field(description="The memory types searched (asked for); None: every type")
    preferred_types: list[str] | None = Field(
        default=None, description="The types the intent weights up; a weight, never a filter"
    )
    results: list[SearchResultPublic] | list[CompactResultPublic]


class ContextIn(BaseModel):
    """A context block for a prompt, from inside a task."""

    model_config = ConfigDict(extra="forbid")

    query: Text = Field(min_length=1, max_length=4000)
    task_id: Text = Field(min_length=1, max_length=128)
    max_tokens: int | None = Field(
        default=None,
        ge=1,
        le=HARD_MAX_TOKENS,
        description="Budget of the block in estimated tokens (at most `LOREGATE_CONTEXT_MAX_TOKENS_LIMIT`)",
    )
    types: list[MemoryType] | None = None
    intent: Intent | None = None
    files: list[CodePath] | None = Field(default=None, max_length=20, description="As in a search")
    symbols: list[CodeSymbol] | None = Field(default=None, max_length=20, description="As in a search")
    code_filter: bool = Field(default=False, description="As in a search")
    short_term: bool = Field(
        default=True,
        description="End the block with the task's own latest decisions and errors, and errors that recur",
    )


class ContextPublic(BaseModel):
    """The `[MEMORY CONTEXT]` block and the citations in it."""

    context: str
    citations: list[str]
    tokens: int
    max_tokens: int
    intent: Intent
    live: list[LiveWarningPublic] = Field(
        default_factory=list,
        description="other tasks' failed approaches and fixes shown in the block's unreviewed section",
    )


class MemoryDetailPublic(BaseModel):
    """A published memory in full: content, trust, lifecycle, validity, and what it was made from."""

    id: str
    citation: str
    memory_type: str
    scope: str
    scope_key: str
    org: str
    project: str | None
    canonical_key: str | None
    title: str
    content: str
    confidence: float
    importance: float
    validation_source: str | None
    validation_count: int
    last_validated_at: datetime | None
    decay_policy: str
    source_task_ids: list[str]
    source_entry_ids: list[int]
    supersedes_id: str | None
    deprecated_at: datetime | None
    contradiction_note: str | None
    expires_at: datetime | None
    retrieval_count: int
    usefulness: float
    version: int
    created_at: datetime
    updated_at: datetime
    valid_from_commit: str | None
    valid_to_commit: str | None
    stale_at: datetime | None
    stale_reason: str | None
    derived_from: list[str] = Field(description="Citations of the memories it builds on")
    related_ids: list[str] = Field(
        default_factory=list,
        description="Ids of memories found close to it when it was published, yet distinct from it",
    )


class ProvenanceEntryPublic(BaseModel):
    """A staging entry the memory came from: as written to readers of its task, else redacted."""

    id: int
    task_id: str
    seq: int
    actor_id: str
    actor_type: str
    kind: str
    content: str
    payload: Any = None
    created_at: datetime
    redacted: bool = Field(description="True: `<private>` spans and secrets removed from content and payload")


class ChainLinkPublic(BaseModel):
    """One version in the memory's supersession chain."""

    id: str
    citation: str
    title: str
    version: int
    created_at: datetime
    deprecated_at: datetime | None
    contradiction_note: str | None
    supersedes_id: str | None
    is_this: bool = Field(description="This link is the memory asked for")


class MemoryPublic(BaseModel):
    """A memory in full, its provenance (source staging entries) and supersession history (oldest first)."""

    memory: MemoryDetailPublic
    provenance: list[ProvenanceEntryPublic]
    history: list[ChainLinkPublic]
    episode: EpisodePublic | None = Field(
        default=None, description="An episode's structured fields (task type, files, tests…); None otherwise"
    )
