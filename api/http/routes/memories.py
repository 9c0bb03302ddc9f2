"""Trust and lifecycle of published memory over HTTP: validate, feedback, supersede, retire, history.

`{memory_id}` is a memory's uuid or its citation; api/services/memories.py says who may do what.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from api.http.deps import CurrentPrincipal, Resources
from api.schemas.memories import (
    FeedbackIn,
    FeedbackPublic,
    HistoryPublic,
    RetireIn,
    RetirePublic,
    SupersedeIn,
    SupersedePublic,
    ValidateIn,
    ValidatePublic,
)
from api.services import memories

__all__ = ["router"]

router = APIRouter(prefix="/v1/memories", tags=["memory lifecycle"])

MemoryRef = Annotated[str, Path(description="A memory's uuid or citation", min_length=1, max_length=64)]


@router.post("/{memory_id}/validate", response_model=ValidatePublic)
async def validate_memory(
    body: ValidateIn, memory_id: MemoryRef, principal: CurrentPrincipal, resources: Resources
) -> ValidatePublic:
    """Boost a memory's confidence by the validation source's amount (once per principal and source)."""
    return await memories.validate(resources, principal, memory_id, body)


@router.post("/{memory_id}/feedback", response_model=FeedbackPublic)
async def memory_feedback(
    body: FeedbackIn, memory_id: MemoryRef, principal: CurrentPrincipal, resources: Resources
) -> FeedbackPublic:
    """Record whether a memory helped: one vote per principal, the latest counts; usefulness follows them."""
    return await memories.feedback(resources, principal, memory_id, body)


@router.post("/{memory_id}/supersede", status_code=201, response_model=SupersedePublic)
async def supersede(
    body: SupersedeIn, memory_id: MemoryRef, principal: CurrentPrincipal, resources: Resources
) -> SupersedePublic:
    """Replace the head of a chain with new content; 409 if the memory is not the head."""
    return await memories.supersede(resources, principal, memory_id, body)


@router.post("/{memory_id}/retire", response_model=RetirePublic)
async def retire(
    body: RetireIn, memory_id: MemoryRef, principal: CurrentPrincipal, resources: Resources
) -> RetirePublic:
    """Deprecate a memory without a successor; 409 if it is already deprecated."""
    return await memories.retire(resources, principal, memory_id, body)


@router.get("/{memory_id}/history", response_model=HistoryPublic)
async def history(memory_id: MemoryRef, principal: CurrentPrincipal, resources: Resources) -> HistoryPublic:
    """The supersession chain through a memory, oldest first."""
    return await memories.history(resources, principal, memory_id)
