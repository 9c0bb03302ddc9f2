"""The read path over HTTP: hybrid search, the cited context block, and a memory by id or citation.

The reader's task fixes org, project and worktree; the caller needs `read` in that tenant (Casbin), and each
scope (task, worktree, project, org) is searched only if the policy lets the caller read it, so a deny row
for one scope hides exactly that scope. Retrieval counts rise in a background task after the response.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, BackgroundTasks, Path, Query, Request
from pydantic import BaseModel, Field

from api import service
from api.deps import AuthorizerDep, CurrentPrincipal, EngineDep
from governance.errors import NotFound
from governance.intent import Intent
from governance.scopes import MemoryType
from governance.storage.retrieval import SearchHit, get_memory

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["search"])


# Ceilings the schema states, so clients (and schemathesis) know them; settings may only lower them.
HARD_MAX_K = 100
HARD_MAX_TOKENS = 16000


class SearchIn(BaseModel):
    """A search from inside a task."""

    query: str = Field(min_length=1, max_length=4000)
    task_id: str = Field(min_length=1, max_length=128, description="The reader's task; fixes its tenant")
    k: int | None = Field(
        default=None,
        ge=1,
        le=HARD_MAX_K,
        description="How many results (default `LOREGATE_SEARCH_DEFAULT_K`, at most `LOREGATE_SEARCH_MAX_K`)",
    )
    types: list[MemoryType] | None = Field(default=None, description="Memory types; overrides the intent")
    intent: Intent | None = Field(default=None, description="Skip intent detection and use this one")
    include_history: bool = Field(
        default=False, description="Also deprecated, superseded and expired memories"
    )
    compact: bool = Field(default=False, description="Same as `?compact=true`")


class ScorePartsPublic(BaseModel):
    """The three axes of the score, each in [0, 1]."""

    similarity: float
    recency: float
    importance: float


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
    types: list[str] | None
    widened: bool = Field(
        default=False, description="The detected intent's types matched nothing, so every type was searched"
    )
    results: list[SearchResultPublic] | list[CompactResultPublic]


class ContextIn(BaseModel):
    """A context block for a prompt, from inside a task."""

    query: str = Field(min_length=1, max_length=4000)
    task_id: str = Field(min_length=1, max_length=128)
    max_tokens: int | None = Field(
        default=None,
        ge=1,
        le=HARD_MAX_TOKENS,
        description="Budget of the block in estimated tokens (at most `LOREGATE_CONTEXT_MAX_TOKENS_LIMIT`)",
    )
    types: list[MemoryType] | None = None
    intent: Intent | None = None


class ContextPublic(BaseModel):
    """The `[MEMORY CONTEXT]` block and the citations in it."""

    context: str
    citations: list[str]
    tokens: int
    max_tokens: int
    intent: Intent


class MemoryPublic(BaseModel):
    """A memory in full, its provenance (source staging entries) and supersession history (oldest first)."""

    memory: dict[str, Any]
    provenance: list[dict[str, Any]]
    history: list[dict[str, Any]]


def public_hit(hit: SearchHit) -> SearchResultPublic:
    """A ranked hit as the API shows it (shared by the HTTP and gRPC gateways through api/service.py)."""
    p = hit.parts
    return SearchResultPublic(
        id=hit.id,
        citation=hit.citation,
        type=hit.memory_type,
        scope=hit.scope,
        title=hit.title,
        content=hit.content,
        score=p.score,
        score_parts=ScorePartsPublic(similarity=p.similarity, recency=p.recency, importance=p.importance),
        confidence=hit.confidence,
        importance=hit.importance,
        cosine=hit.cosine,
        vector_rank=hit.vector_rank,
        text_rank=hit.text_rank,
        created_at=hit.created_at,
        updated_at=hit.updated_at,
        deprecated_at=hit.deprecated_at,
        expires_at=hit.expires_at,
    )


@router.post("/search", response_model=SearchPublic)
async def search(
    body: SearchIn,
    request: Request,
    background: BackgroundTasks,
    principal: CurrentPrincipal,
    compact: Annotated[bool, Query(description="Only citation, title, type and score")] = False,
) -> SearchPublic:
    """Hybrid search (vector + full text, RRF, 3-axis score) over the memories the task can see."""
    answer, hit_ids = await service.search(request.app.state, principal, body, compact=compact)
    background.add_task(service.count_retrievals, request.app.state, hit_ids)
    return answer


@router.post("/context", response_model=ContextPublic)
async def context(
    body: ContextIn,
    request: Request,
    background: BackgroundTasks,
    principal: CurrentPrincipal,
) -> ContextPublic:
    """One `[MEMORY CONTEXT]` block with `[mem:<citation>]` marks, never over `max_tokens`."""
    answer, cited_ids = await service.context(request.app.state, principal, body)
    background.add_task(service.count_retrievals, request.app.state, cited_ids)
    return answer


@router.get("/memories/{ref}", response_model=MemoryPublic)
async def show_memory(
    ref: Annotated[str, Path(max_length=64, description="`mem:<citation>`, the citation, or the memory id")],
    principal: CurrentPrincipal,
    authorizer: AuthorizerDep,
    engine: EngineDep,
) -> MemoryPublic:
    """A memory with its source staging entries and supersession history (progressive disclosure)."""
    async with engine.connect() as conn:
        detail = await get_memory(conn, ref)
    memory = detail.memory
    # an org-wide memory belongs to every project of its org: judge it in the caller's own project
    project = memory["project"] if memory["project"] is not None else principal.project
    if not authorizer.allowed(
        principal, org=memory["org"], project=project, scope=memory["scope"], action="read"
    ):
        # not 403: a caller outside the tenant must not learn that the citation exists
        raise NotFound(f"memory {ref!r} does not exist")
    return MemoryPublic(memory=memory, provenance=detail.provenance, history=detail.history)
