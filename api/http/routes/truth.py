"""Keeping memory true over HTTP: the review of stale memories, confirming one, and the audit trail.

api/services/review.py and api/services/events.py say who may do what. Registered before the search router,
so `/v1/memories/review` is not read as a memory called "review".
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Path, Query

from api.http.deps import CurrentPrincipal, Resources
from api.schemas.events import CURSOR_PATTERN, MAX_EVENTS_PAGE, EventKind, EventsPage
from api.schemas.review import ConfirmIn, ConfirmPublic, ReviewPublic
from api.schemas.text import NAME_PATTERN
from api.services import events, review

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["keeping memory true"])

MemoryRef = Annotated[str, Path(description="A memory's uuid or citation", min_length=1, max_length=64)]
Cursor = Annotated[
    str | None, Query(pattern=CURSOR_PATTERN, description="`next_cursor` of the previous page")
]
NO_NUL = r"^[^\x00]+$"  # Postgres text cannot hold U+0000
Limit = Annotated[int, Query(ge=1, le=MAX_EVENTS_PAGE)]


@router.get("/memories/review", response_model=ReviewPublic)
async def review_list(
    principal: CurrentPrincipal,
    resources: Resources,
    scope: Annotated[
        str | None,
        Query(max_length=512, pattern=NO_NUL, description="Only this scope key, e.g. `project:o/p`"),
    ] = None,
) -> ReviewPublic:
    """Stale memories you may read (a memory they build on changed): confirm, rewrite or retire each."""
    return await review.review(resources, principal, scope)


@router.post("/memories/{memory_id}/confirm", response_model=ConfirmPublic)
async def confirm(
    body: ConfirmIn, memory_id: MemoryRef, principal: CurrentPrincipal, resources: Resources
) -> ConfirmPublic:
    """A human confirms a stale memory still holds: the stale mark is cleared (409 if it is not stale)."""
    return await review.confirm(resources, principal, memory_id, body)


@router.get("/memories/{memory_id}/events", response_model=EventsPage)
async def memory_events(
    memory_id: MemoryRef,
    principal: CurrentPrincipal,
    resources: Resources,
    cursor: Cursor = None,
    limit: Limit = 50,
) -> EventsPage:
    """A memory's audit events, oldest first (404 if you may not read the memory)."""
    return await events.memory_events(resources, principal, memory_id, cursor=cursor, limit=limit)


@router.get("/events", response_model=EventsPage)
async def tenant_events(
    principal: CurrentPrincipal,
    resources: Resources,
    type: Annotated[EventKind | None, Query(description="An event type, e.g. STALE")] = None,
    actor: Annotated[
        str | None, Query(max_length=64, pattern=NO_NUL, description="The acting principal's id")
    ] = None,
    since: Annotated[datetime | None, Query(description="At or after this time (ISO 8601)")] = None,
    until: Annotated[datetime | None, Query(description="Before this time (ISO 8601)")] = None,
    org: Annotated[
        str | None,
        Query(max_length=200, pattern=NAME_PATTERN, description="Another org (who may read it)"),
    ] = None,
    project: Annotated[
        str | None,
        Query(max_length=200, pattern=NAME_PATTERN, description="One project of the org (and the org scope)"),
    ] = None,
    cursor: Cursor = None,
    limit: Limit = 50,
) -> EventsPage:
    """Audit events of a tenant's memories and tasks you may read (yours by default), newest first, a page
    at a time."""
    return await events.tenant_events(
        resources,
        principal,
        event_type=type,
        actor=actor,
        since=since,
        until=until,
        cursor=cursor,
        limit=limit,
        org=org,
        project=project,
    )
