"""Erasure over HTTP: a memory (`DELETE /v1/memories/{id}`), a memory, task or subject (`POST /v1/erasures`).

api/services/erasure.py says who may erase and what goes; the answer lists it (no content) and names the
ERASED receipt event.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from api.http.deps import CurrentPrincipal, Resources
from api.schemas.erasure import EraseMemoryQuery, ErasureIn, ErasurePublic
from api.services import erasure

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["erasure"])

MemoryRef = Annotated[str, Path(description="A memory's uuid or citation", min_length=1, max_length=64)]


@router.delete("/memories/{memory_id}", response_model=ErasurePublic)
async def erase_memory(
    memory_id: MemoryRef,
    principal: CurrentPrincipal,
    resources: Resources,
    query: Annotated[EraseMemoryQuery, Query()],
) -> ErasurePublic:
    """Erase a memory and the memories derived only from it, leaving an ERASED receipt (no content)."""
    return await erasure.erase_memory(resources, principal, memory_id, dry_run=query.dry_run)


@router.post("/erasures", response_model=ErasurePublic)
async def erase(body: ErasureIn, principal: CurrentPrincipal, resources: Resources) -> ErasurePublic:
    """Erase a memory, a task (staging, plans, memories only it produced) or a subject; `dry_run` lists."""
    return await erasure.erasure(resources, principal, body)
