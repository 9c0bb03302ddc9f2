"""The readable audit trail: a memory's events, and a tenant's events with filters, a page at a time.

`GET /v1/memories/{id}/events` answers whoever may read the memory (anyone else: 404, as for an unknown id).
`GET /v1/events` answers the events of the caller's tenant (its org; a project-bound caller: its project and
the org scope) about memories and tasks the policy lets it read: an event about a memory is judged at the
memory's scope, one about a task alone (an approval grant, a refused approach) at task scope. Pages are
keyset-paged by event id, newest first; `next_cursor` is opaque to the client.
"""

from __future__ import annotations

from datetime import UTC, datetime

from api.schemas.events import MAX_EVENTS_PAGE, EventPublic, EventsPage
from api.services.gateway import GatewayResources, authorize_memory, judged_project
from governance.errors import InvalidInput, PolicyDenied
from governance.identity import Principal
from governance.scopes import Scope
from governance.staging import public_task_id
from governance.storage.audit import EventFilter, EventRow, memory_events_page, tenant_events_page
from governance.storage.events import EventType
from governance.storage.memory_changes import memory_tenant

__all__ = ["memory_events", "tenant_events"]

# how many batches a filtered page may read before it answers with what it found (and a cursor)
_MAX_BATCHES = 20


def _cursor(raw: str | None) -> int | None:
    if raw is None:
        return None
    if not raw.isdigit() or len(raw) > 18:
        raise InvalidInput(f"cursor {raw[:40]!r} is not a cursor this API gave out")
    return int(raw)


def _limit(limit: int) -> int:
    if not 1 <= limit <= MAX_EVENTS_PAGE:
        raise InvalidInput(f"limit must lie between 1 and {MAX_EVENTS_PAGE}")
    return limit


def _public(row: EventRow) -> EventPublic:
    return EventPublic(
        id=row.id,
        type=row.event_type,
        memory_id=row.memory_id,
        citation=row.citation,
        actor_id=row.actor_id,
        actor_type=row.actor_type,
        task_id=public_task_id(row.task_id) if row.task_id is not None else None,  # its tenant's id
        workflow_id=row.workflow_id,
        reason=row.reason,
        payload=row.payload,
        created_at=row.created_at,
    )


async def memory_events(
    resources: GatewayResources, principal: Principal, ref: str, *, cursor: str | None, limit: int
) -> EventsPage:
    """A memory's events, oldest first; 404 for a memory the caller may not read."""
    after, size = _cursor(cursor), _limit(limit)
    async with resources.engine.connect() as conn:
        memory = await memory_tenant(conn, ref)
        authorize_memory(
            resources,
            principal,
            ref,
            org=memory.org,
            project=memory.project,
            scope=memory.scope,
            action="read",
        )
        rows = await memory_events_page(conn, memory.id, after_id=after, limit=size)
    return EventsPage(
        events=[_public(r) for r in rows], next_cursor=str(rows[-1].id) if len(rows) == size else None
    )


def _tenant(
    resources: GatewayResources, principal: Principal, org: str | None, project: str | None
) -> tuple[str, str | None]:
    """The tenant whose events are listed: the caller's, or the one it names and may read (PolicyDenied)."""
    if org is None and project is None:
        return principal.org, principal.project
    org = principal.org if org is None else org
    if org == principal.org and project in (None, principal.project):  # its own, however it names it
        return org, principal.project
    scope = Scope.ORG if project is None else Scope.PROJECT
    if not resources.authorizer.allowed(principal, org=org, project=project, scope=scope, action="read"):
        where = org if project is None else f"{org}/{project}"
        raise PolicyDenied(
            f"{principal.actor_type} '{principal.name}' ({principal.id}) may not read the events of {where}: "
            "without `org` and `project`, your own tenant's are listed"
        )
    return org, project


def _readable(resources: GatewayResources, principal: Principal, row: EventRow) -> bool:
    allowed = resources.authorizer.allowed
    if row.memory_org is not None and row.memory_scope is not None:
        project = judged_project(principal, row.memory_org, row.memory_project)
        return allowed(principal, org=row.memory_org, project=project, scope=row.memory_scope, action="read")
    if row.task_org is not None:
        return allowed(principal, org=row.task_org, project=row.task_project, scope=Scope.TASK, action="read")
    return False


async def tenant_events(
    resources: GatewayResources,
    principal: Principal,
    *,
    event_type: str | None,
    actor: str | None,
    since: datetime | None,
    until: datetime | None,
    cursor: str | None,
    limit: int,
    org: str | None = None,
    project: str | None = None,
) -> EventsPage:
    """A tenant's events the caller may read, newest first, filtered by type, actor and time.

    The tenant is the caller's own (its org; a project-bound caller: its project and the org scope) unless
    `org` or `project` name another, which the caller must be allowed to read at that tenant's widest scope
    (an admin anywhere; an org-wide caller, any project of its org): else PolicyDenied, before any event is
    read, so neither the events nor their ids and count of a tenant out of reach are looked at."""
    org, project = _tenant(resources, principal, org, project)
    if event_type is not None and event_type.upper() not in EventType.__members__:
        raise InvalidInput(f"type {event_type[:40]!r} is not an event type; one of: {', '.join(EventType)}")
    # a time without a timezone is UTC (and naive and aware times must not meet in one comparison)
    since = since.replace(tzinfo=UTC) if since is not None and since.tzinfo is None else since
    until = until.replace(tzinfo=UTC) if until is not None and until.tzinfo is None else until
    if since is not None and until is not None and since >= until:
        return EventsPage(events=[])  # an empty window holds no events
    before, size = _cursor(cursor), _limit(limit)
    where = EventFilter(event_type.upper() if event_type else None, actor, since, until)
    found: list[EventRow] = []
    more = False
    async with resources.engine.connect() as conn:
        for _ in range(_MAX_BATCHES):
            batch = await tenant_events_page(
                conn, org=org, project=project, where=where, before_id=before, limit=size
            )
            for row in batch:
                before = row.id
                if _readable(resources, principal, row):
                    found.append(row)
                    if len(found) == size:
                        break
            more = len(batch) == size
            if len(found) == size or not more:
                break
    # the cursor is the last event looked at, so events the caller may not read are not looked at again
    next_cursor = str(before) if more or len(found) == size else None
    return EventsPage(events=[_public(r) for r in found], next_cursor=next_cursor)
