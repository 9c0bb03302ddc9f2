"""Memory that learns, over HTTP: matching an error against the bug patterns the task can see."""

from __future__ import annotations

from fastapi import APIRouter

from api.http.deps import CurrentPrincipal, Resources
from api.schemas.learning import BugMatchIn, BugMatchPublic
from api.services import bug_patterns

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["learning"])


@router.post("/bug-patterns/match", response_model=BugMatchPublic)
async def match_bug_patterns(
    body: BugMatchIn, resources: Resources, principal: CurrentPrincipal
) -> BugMatchPublic:
    """Bug patterns matching an error: same signature first, then nearest, best solutions first."""
    return await bug_patterns.match(resources, principal, body)
