"""The console's pages: sign in, pending decisions, the memory browser, a memory, a task's staging.

(Change requests and the audit trail are in review.py, on the same router.)

Each handler calls the same use case in api/services/ as the matching API route, as the principal whose
API key opened the session; no permission is decided here. Every POST carries the session's CSRF token in
a hidden field and must come from the console's own origin (`CheckedSession`).
"""

from __future__ import annotations

import secrets
from typing import Annotated
from urllib.parse import quote, urlsplit

from fastapi import APIRouter, Depends, Form, Path, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError

from api.http.console.pages import PREFIX, SECURITY_HEADERS, ConsoleRoute, render
from api.http.deps import Resources, TaskId
from api.schemas.approvals import ApprovalTokenPublic
from api.schemas.events import MAX_EVENTS_PAGE
from api.schemas.memories import MemoryStateName
from api.schemas.promotions import MAX_ITEM_DECISIONS, DecisionIn, ItemDecisionIn, PromotionState
from api.services import (
    browse,
    change_requests,
    events,
    knowledge,
    memories,
    promotion_listing,
    promotion_views,
    promotions,
    sessions,
    staging,
)
from api.services import search as reads
from api.services.gateway import authorized_task
from api.services.sessions import ConsoleSession, SessionBook
from governance.errors import InvalidInput, PolicyDenied, Unauthenticated
from governance.scopes import MemoryType

__all__ = [
    "router",
    "SESSION_COOKIE",
    "SIGNIN_COOKIE",
    "Session",
    "CheckedSession",
    "see_other",
    "workflow_url",
    "decision_note",
]

router = APIRouter(prefix=PREFIX, tags=["console"], route_class=ConsoleRoute, include_in_schema=False)

SESSION_COOKIE = "loregate_console"
# the sign-in form's CSRF token before there is a session (double submit: cookie and hidden field)
SIGNIN_COOKIE = "loregate_console_signin"
PLAN_PAGE = 50
STAGING_PAGE = 100
# how deep a paged list goes (200 pages of 50): past it, a filter finds the row; an absurd offset made the
# database skip that many rows to show an empty page, or refuse the number
MAX_OFFSET = 10_000
DECIDED = {"approve": "Your approval was accepted.", "reject": "Your rejection was accepted."}
STATES: tuple[MemoryStateName, ...] = ("active", "superseded", "retired", "expired")


def _book(request: Request) -> SessionBook:
    return request.app.state.console_sessions  # type: ignore[no-any-return]


async def _session(request: Request, resources: Resources) -> ConsoleSession:
    session = await sessions.session_from_token(
        resources, _book(request), request.cookies.get(SESSION_COOKIE)
    )
    request.state.console_session = session
    return session


Session = Annotated[ConsoleSession, Depends(_session)]


def _same_origin(request: Request) -> None:
    """A form post must come from the console's own pages (Origin, else Referer, names this host)."""
    source = request.headers.get("origin") or request.headers.get("referer")
    if source is not None and urlsplit(source).netloc != request.headers.get("host"):
        raise PolicyDenied("a console form was posted from another origin; nothing was done")


async def _checked(
    request: Request, session: Session, csrf_token: Annotated[str | None, Form()] = None
) -> ConsoleSession:
    _same_origin(request)
    sessions.check_csrf(session, csrf_token)
    return session


CheckedSession = Annotated[ConsoleSession, Depends(_checked)]


def see_other(path: str) -> RedirectResponse:
    """A 303 to `path` with the console's security headers (after a form post, or to sign in)."""
    return RedirectResponse(path, status_code=303, headers=SECURITY_HEADERS)


def _cookie(request: Request, response: Response, name: str, value: str, max_age: int) -> None:
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path=PREFIX,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


@router.get("", response_class=HTMLResponse)
@router.get("/", response_class=HTMLResponse)
async def home(request: Request, resources: Resources) -> Response:
    """Pending decisions when signed in, else the sign-in page."""
    try:
        await _session(request, resources)
    except Unauthenticated:
        return see_other(f"{PREFIX}/signin")
    return see_other(f"{PREFIX}/promotions")


def _signin_page(request: Request, status_code: int = 200, error: str | None = None) -> Response:
    token = secrets.token_urlsafe(24)
    response = render(request, "signin.html", status_code=status_code, csrf_token=token, error=error)
    _cookie(request, response, SIGNIN_COOKIE, token, max_age=3600)
    return response


@router.get("/signin", response_class=HTMLResponse)
async def signin_form(request: Request) -> Response:
    """The sign-in form: an API key, posted, never in a URL."""
    return _signin_page(request)


@router.post("/signin", response_class=HTMLResponse)
async def signin(
    request: Request,
    resources: Resources,
    api_key: Annotated[str, Form(max_length=512)],
    csrf_token: Annotated[str | None, Form()] = None,
) -> Response:
    """Check the key (as every API call does) and open a session in an HttpOnly, SameSite=Strict cookie."""
    _same_origin(request)
    expected = request.cookies.get(SIGNIN_COOKIE)
    if not expected or not csrf_token or not secrets.compare_digest(expected, csrf_token):
        raise PolicyDenied("the sign-in form's CSRF token is missing or wrong; reload the page")
    client = request.client.host if request.client is not None else "unknown"
    try:
        session, token = await sessions.sign_in(resources, _book(request), client, api_key)
    except Unauthenticated as exc:
        return _signin_page(request, 401, exc.detail)
    response = see_other(f"{PREFIX}/promotions")
    _cookie(
        request, response, SESSION_COOKIE, token, max_age=int(resources.settings.console_session_hours * 3600)
    )
    response.delete_cookie(SIGNIN_COOKIE, path=PREFIX)
    return response


@router.post("/signout", response_class=HTMLResponse)
async def signout(request: Request, session: CheckedSession) -> Response:
    """End the session and clear its cookie."""
    sessions.sign_out(_book(request), session)
    response = see_other(f"{PREFIX}/signin")
    response.delete_cookie(SESSION_COOKIE, path=PREFIX, httponly=True, samesite="strict")
    return response


@router.get("/promotions", response_class=HTMLResponse)
async def promotion_list(
    request: Request,
    resources: Resources,
    session: Session,
    state: Annotated[PromotionState | None, Query()] = PromotionState.AWAITING_APPROVAL,
    every: Annotated[bool, Query(alias="all")] = False,
) -> Response:
    """Promotions awaiting a decision (or all recent ones) of the tasks this principal may read."""
    chosen = None if every else state
    listed = await promotion_listing.list_promotions(resources, session.principal, chosen, 100)
    # change requests wait for the same people: awaiting approval beside the promotions, or all recent ones
    waiting = "awaiting_approval" if chosen == PromotionState.AWAITING_APPROVAL else None
    changes = await change_requests.list_requests(resources, session.principal, waiting, 100)
    return render(request, "promotions.html", listed=listed, state=chosen, changes=changes.change_requests)


def workflow_url(resources: Resources, workflow_id: str) -> str:
    """The workflow's page in the Temporal UI (`LOREGATE_TEMPORAL_UI_URL`)."""
    settings = resources.settings
    namespace = quote(settings.temporal_namespace, safe="")
    return f"{settings.temporal_ui_base()}/namespaces/{namespace}/workflows/{quote(workflow_id, safe='')}"


@router.get("/promotions/{task_id}", response_class=HTMLResponse)
async def promotion_page(
    request: Request,
    task_id: TaskId,
    resources: Resources,
    session: Session,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    decided: Annotated[str | None, Query()] = None,
    number: Annotated[int | None, Query(ge=1, le=1_000_000)] = None,
) -> Response:
    """A promotion (the task's latest, or `number`): where it stands, its plan, the decision form, and
    every promotion of the task."""
    notice = DECIDED.get(decided or "")
    return await _promotion_page(request, task_id, resources, session, offset, notice, number=number)


async def _promotion_page(
    request: Request,
    task_id: str,
    resources: Resources,
    session: ConsoleSession,
    offset: int,
    notice: str | None,
    approval_token: ApprovalTokenPublic | None = None,
    *,
    number: int | None = None,
) -> Response:
    # the page shows the plan's page below, not the status' first page of it
    status = await promotion_views.promotion_status(
        resources, session.principal, task_id, number, plan_entries=False
    )
    plan = await promotion_views.promotion_plan(
        resources, session.principal, task_id, offset, PLAN_PAGE, number
    )
    listed = await promotion_listing.task_promotions(resources, session.principal, task_id)
    latest = not listed.promotions or status.number == listed.promotions[-1].number
    return render(
        request,
        "promotion.html",
        max_offset=MAX_OFFSET,
        status=status,
        plan=plan,
        task_promotions=listed,
        latest=latest,
        workflow_url=workflow_url(resources, status.workflow_id),
        notice=notice,
        approval_token=approval_token,
    )


@router.post("/promotions/{task_id}/approval-token", response_class=HTMLResponse)
async def approval_token(
    request: Request, task_id: TaskId, resources: Resources, session: CheckedSession
) -> Response:
    """The signal input that decides as the session's principal from the Temporal UI (a short-lived token)."""
    token = await promotions.promotion_approval_token(resources, session.principal, task_id)
    return await _promotion_page(request, task_id, resources, session, 0, None, token)


def decision_note(note: str) -> DecisionIn:
    """A decision form's note as the API's decision body; too long is a 422, as over the API."""
    try:
        return DecisionIn(note=note)
    except ValidationError as exc:
        raise InvalidInput("the note is too long (at most 4000 characters)") from exc


async def _decide(
    resources: Resources,
    session: ConsoleSession,
    task_id: str,
    decision: str,
    note: str,
    items: list[ItemDecisionIn] | None = None,
) -> Response:
    body = decision_note(note)
    if items:
        body = body.model_copy(update={"items": items})
    await promotions.decide_promotion(resources, session.principal, task_id, decision, body)
    return see_other(f"{PREFIX}/promotions/{quote(task_id, safe='')}?decided={decision}")


async def form_items(request: Request) -> list[ItemDecisionIn]:
    """The plan page's per-item choices (`item_<index>`: reject or edit, with `reason_<index>`,
    `title_<index>`, `content_<index>`) as the API's `items`; a malformed one is a 422, as over the API."""
    form = await request.form()
    items: list[ItemDecisionIn] = []
    for name, value in form.multi_items():
        number = name.removeprefix("item_")
        if number == name or value not in ("reject", "edit") or not number.isdigit():
            continue
        n = int(number)

        def field(prefix: str, n: int = n) -> str | None:
            given = form.get(f"{prefix}_{n}")
            return given if isinstance(given, str) else None

        try:
            items.append(
                ItemDecisionIn(
                    index=n,
                    decision="reject" if value == "reject" else "edit",
                    reason=field("reason") or "",
                    title=field("title") if value == "edit" else None,
                    content=field("content") if value == "edit" else None,
                )
            )
        except ValidationError as exc:
            raise InvalidInput(f"plan item {n}: {exc.errors()[0]['msg']}") from exc
    if len(items) > MAX_ITEM_DECISIONS:
        raise InvalidInput(f"at most {MAX_ITEM_DECISIONS} items may be decided one by one")
    return items


@router.post("/promotions/{task_id}/approve", response_class=HTMLResponse)
async def approve(
    request: Request,
    task_id: TaskId,
    resources: Resources,
    session: CheckedSession,
    note: Annotated[str, Form()] = "",
) -> Response:
    """Approve as the session's principal (the same use case as POST /v1/promotions/{id}/approve), with
    the plan items the approver chose to reject or edit."""
    return await _decide(resources, session, task_id, "approve", note, await form_items(request))


@router.post("/promotions/{task_id}/reject", response_class=HTMLResponse)
async def reject(
    task_id: TaskId, resources: Resources, session: CheckedSession, note: Annotated[str, Form()] = ""
) -> Response:
    """Reject as the session's principal; nothing is published."""
    return await _decide(resources, session, task_id, "reject", note)


def _trust(value: str | None, name: str) -> float | None:
    if value is None or not value.strip():
        return None
    try:
        return float(value)
    except ValueError:
        raise InvalidInput(f"{name} must be a number between 0 and 1") from None


@router.get("/memories", response_class=HTMLResponse)
async def memory_browser(
    request: Request,
    resources: Resources,
    session: Session,
    scope_key: Annotated[str | None, Query(max_length=600)] = None,
    q: Annotated[str | None, Query(max_length=500)] = None,
    types: Annotated[list[str], Query(alias="type")] = [],  # noqa: B006 (FastAPI copies defaults)
    min_trust: Annotated[str | None, Query(max_length=20)] = None,
    max_trust: Annotated[str | None, Query(max_length=20)] = None,
    state: Annotated[str | None, Query(max_length=20)] = None,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
) -> Response:
    """One scope's memories, newest first, filtered by text, type, trust and state."""
    principal = session.principal
    own = f"project:{principal.org}/{principal.project}" if principal.project else f"org:{principal.org}"
    chosen_state = next((s for s in STATES if s == state), None)
    if state and chosen_state is None:
        raise InvalidInput(f"state must be one of {', '.join(STATES)}")
    filters = browse.MemoryFilter(
        query=q.strip() if q else None,
        types=tuple(t for t in types if t),
        min_trust=_trust(min_trust, "min_trust"),
        max_trust=_trust(max_trust, "max_trust"),
        state=chosen_state,
        offset=offset,
        limit=50,
    )
    listed = await browse.browse_memories(resources, principal, scope_key or own, filters)
    suggestions = [own] if principal.project is None else [own, f"org:{principal.org}"]
    return render(
        request,
        "memories.html",
        max_offset=MAX_OFFSET,
        listed=listed,
        suggestions=suggestions,
        memory_types=[t.value for t in MemoryType],
        states=STATES,
        min_trust=min_trust or "",
        max_trust=max_trust or "",
    )


@router.get("/knowledge", response_class=HTMLResponse)
async def project_knowledge_page(
    request: Request,
    resources: Resources,
    session: Session,
    project: Annotated[str | None, Query(max_length=128)] = None,
) -> Response:
    """A project's hotspots and statistics as last computed (GET /v1/projects/{project}/knowledge)."""
    chosen = (project or session.principal.project or "").strip()
    if not chosen:
        raise InvalidInput("project: name a project of your org (?project=…)")
    shown = await knowledge.project_knowledge(resources, session.principal, chosen)
    return render(request, "knowledge.html", knowledge=shown)


@router.get("/memories/{ref}", response_class=HTMLResponse)
async def memory_page(
    request: Request,
    resources: Resources,
    session: Session,
    ref: Annotated[str, Path(min_length=1, max_length=64)],
) -> Response:
    """A memory: content, trust, provenance (as GET /v1/memories/{id} shows it), its chain and its events."""
    shown = await reads.show_memory(resources, session.principal, ref)
    chain = await memories.history(resources, session.principal, ref)
    trail = await events.memory_events(resources, session.principal, ref, cursor=None, limit=MAX_EVENTS_PAGE)
    links = await browse.readable_links(resources, session.principal, str(shown.memory.id))
    return render(
        request,
        "memory.html",
        shown=shown,
        memory=shown.memory,
        chain=chain,
        trail=trail,
        links=links,
        trust=browse.trust_history(trail),
        published=await browse.publication(resources, str(shown.memory.id)),
    )


@router.get("/tasks", response_class=HTMLResponse)
async def task_lookup(
    request: Request, session: Session, task_id: Annotated[str | None, Query(max_length=128)] = None
) -> Response:
    """Open a task's staging by its id."""
    if task_id:
        return see_other(f"{PREFIX}/tasks/{quote(task_id.strip(), safe='')}")
    return render(request, "tasks.html")


@router.get("/tasks/{task_id}", response_class=HTMLResponse)
async def task_page(
    request: Request,
    task_id: TaskId,
    resources: Resources,
    session: Session,
    after_seq: Annotated[int, Query(ge=0, le=2**62)] = 0,
) -> Response:
    """A task and its staging, a page at a time (for principals allowed to read it)."""
    task = await authorized_task(resources, session.principal, task_id, "read")
    shown = await staging.show_task(resources, task)
    page = await staging.list_entries(resources, task, after_seq=after_seq, limit=STAGING_PAGE)
    listed = await promotion_listing.task_promotions(resources, session.principal, task_id)
    return render(request, "task.html", task=shown, page=page, after_seq=after_seq, task_promotions=listed)
