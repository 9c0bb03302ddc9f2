"""The read path over HTTP: hybrid search, the cited context block, and a memory by id or citation.

Retrieval counts rise in a background task after the response (api/services/search.py).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, BackgroundTasks, Path, Query

from api.http.deps import CurrentPrincipal, Resources
from api.schemas.search import ContextIn, ContextPublic, MemoryPublic, SearchIn, SearchPublic
from api.services import search as reads

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["search"])


@router.post("/search", response_model=SearchPublic)
async def search(
    body: SearchIn,
    resources: Resources,
    background: BackgroundTasks,
    principal: CurrentPrincipal,
    compact: Annotated[bool, Query(description="Only citation, title, type and score")] = False,
) -> SearchPublic:
    """Hybrid search (vector + full text, RRF, 3-axis score) over the memories the task can see."""
    answer, hit_ids = await reads.search(resources, principal, body, compact=compact)
    background.add_task(reads.count_retrievals, resources, hit_ids)
    return answer


@router.post("/context", response_model=ContextPublic)
async def context(
    body: ContextIn, resources: Resources, background: BackgroundTasks, principal: CurrentPrincipal
) -> ContextPublic:
    """One `[MEMORY CONTEXT]` block with `[mem:<citation>]` marks, never over `max_tokens`."""
    answer, cited_ids = await reads.context(resources, principal, body)
    background.add_task(reads.count_retrievals, resources, cited_ids)
    return answer


@router.get("/memories/{ref}", response_model=MemoryPublic)
async def show_memory(
    ref: Annotated[str, Path(max_length=64, description="`mem:<citation>`, the citation, or the memory id")],
    resources: Resources,
    principal: CurrentPrincipal,
) -> MemoryPublic:
    """A memory with its source staging entries and supersession history (progressive disclosure)."""
    return await reads.show_memory(resources, principal, ref)
