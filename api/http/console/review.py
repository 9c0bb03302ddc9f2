"""The console's change requests, batch decisions and audit trail: decide, read what happened.

As in routes.py, each handler calls the same use case as the matching API route, as the session's
principal (`POST /console/changes/{id}/approve` is `POST /v1/change-requests/{id}/approve`), and every POST
carries the session's CSRF token and must come from the console's own origin. The word diff between a
memory and its proposed successor is the pure rule the promotion plan uses (governance/word_diff.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Form, Path, Query, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import ValidationError

from api.errors import validation_detail
from api.http.console.pages import PREFIX, ConsoleRoute, render
from api.http.console.routes import CheckedSession, Session, decision_note, see_other, workflow_url
from api.http.deps import Resources
from api.schemas.decisions import BatchDecisionIn
from api.schemas.events import MAX_EVENTS_PAGE
from api.services import change_requests, decisions, events
from governance.errors import InvalidInput
from governance.storage.events import EventType
from governance.word_diff import word_diff

__all__ = ["router", "EVENTS_PAGE"]

# included in routes.py's router (its prefix, /console, applies): see api/http/console/__init__.py
router = APIRouter(tags=["console"], route_class=ConsoleRoute, include_in_schema=False)

EVENTS_PAGE = 50
DECIDED = {"approve": "Your approval was accepted.", "reject": "Your rejection was accepted."}
RequestId = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[0-9a-fA-F-]+$")]


@router.get("/changes/{request_id}", response_class=HTMLResponse)
async def change_page(
    request: Request,
    request_id: RequestId,
    resources: Resources,
    session: Session,
    decided: Annotated[str | None, Query()] = None,
) -> Response:
    """A change request: the memory as published beside the proposed change, a word diff, the decision."""
    change = await change_requests.show_request(resources, session.principal, request_id)
    diff = (
        word_diff(change.old.content, change.content)
        if change.old is not None and change.content is not None
        else None
    )
    return render(
        request,
        "change.html",
        change=change,
        diff=diff,
        workflow_url=workflow_url(resources, change.workflow_id) if change.workflow_id else None,
        notice=DECIDED.get(decided or ""),
    )


async def _decide(
    resources: Resources, session: CheckedSession, request_id: str, decision: str, note: str
) -> Response:
    await change_requests.decide(resources, session.principal, request_id, decision, decision_note(note))
    return see_other(f"{PREFIX}/changes/{quote(request_id, safe='')}?decided={decision}")


@router.post("/changes/{request_id}/approve", response_class=HTMLResponse)
async def approve_change(
    request_id: RequestId, resources: Resources, session: CheckedSession, note: Annotated[str, Form()] = ""
) -> Response:
    """Approve as the session's principal (the same use case as POST /v1/change-requests/{id}/approve)."""
    return await _decide(resources, session, request_id, "approve", note)


@router.post("/changes/{request_id}/reject", response_class=HTMLResponse)
async def reject_change(
    request_id: RequestId, resources: Resources, session: CheckedSession, note: Annotated[str, Form()] = ""
) -> Response:
    """Reject as the session's principal; the memory stays as it is."""
    return await _decide(resources, session, request_id, "reject", note)


@router.post("/decisions", response_class=HTMLResponse)
async def decide_selected(
    request: Request,
    resources: Resources,
    session: CheckedSession,
    decision: Annotated[str, Form()] = "",
    note: Annotated[str, Form()] = "",
    promotion: Annotated[list[str] | None, Form()] = None,
    change: Annotated[list[str] | None, Form()] = None,
) -> Response:
    """The selected promotions and change requests decided in one action (POST /v1/decisions), each on its
    own; the page lists every item's outcome."""
    try:
        body = BatchDecisionIn(
            decision=decision,  # type: ignore[arg-type]  # checked by the model: approve or reject
            note=note,
            promotions=promotion or [],
            change_requests=change or [],
        )
    except ValidationError as exc:
        raise InvalidInput(validation_detail(exc.errors())) from None
    outcome = await decisions.decide_batch(resources, session.principal, body)
    return render(request, "decisions.html", outcome=outcome)


def _when(value: str | None, name: str) -> datetime | None:
    if value is None or not value.strip():
        return None
    try:
        return datetime.fromisoformat(value.strip())
    except ValueError:
        raise InvalidInput(f"{name} must be a date and time, e.g. 2026-05-01T09:30") from None


@router.get("/events", response_class=HTMLResponse)
async def audit_trail(
    request: Request,
    resources: Resources,
    session: Session,
    type_: Annotated[str | None, Query(alias="type", max_length=32)] = None,
    actor: Annotated[str | None, Query(max_length=64)] = None,
    since: Annotated[str | None, Query(max_length=40)] = None,
    until: Annotated[str | None, Query(max_length=40)] = None,
    cursor: Annotated[str | None, Query(max_length=20)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_EVENTS_PAGE)] = EVENTS_PAGE,
) -> Response:
    """The audit trail of the tenant (GET /v1/events): filtered by type, actor and time, newest first."""
    chosen = (type_ or "").strip() or None
    who = (actor or "").strip() or None
    if who is not None and "\x00" in who:
        raise InvalidInput("actor must not contain NUL characters")
    page = await events.tenant_events(
        resources,
        session.principal,
        event_type=chosen,
        actor=who,
        since=_when(since, "since"),
        until=_when(until, "until"),
        cursor=(cursor or "").strip() or None,
        limit=limit,
    )
    filters = {"type": chosen or "", "actor": who or "", "since": since or "", "until": until or ""}
    if limit != EVENTS_PAGE:
        filters["limit"] = str(limit)
    following = (
        f"?{urlencode({**filters, 'cursor': page.next_cursor})}" if page.next_cursor is not None else None
    )
    return render(
        request,
        "events.html",
        page=page,
        filters=filters,
        event_types=[t.value for t in EventType],
        next_page=following,
        first_page=f"?{urlencode(filters)}" if cursor else None,
    )
