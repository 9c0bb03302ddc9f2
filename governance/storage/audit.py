"""Reading the audit trail: a memory's events, and a tenant's events a page at a time.

Events are paged by id (keyset: `after` / `before` an id, never OFFSET), so a page costs the same however deep
it is and rows appended meanwhile neither repeat nor vanish. Each row carries what the caller needs to judge
whether it may read it: the memory's tenant and scope, else the task's tenant (`EventRow`); the service does
the judging (Casbin), not this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = ["EventRow", "EventFilter", "memory_events_page", "tenant_events_page"]

# an erasure's receipt (ERASED) and a PRUNED event outlive the memory they are about, and a restore's
# (RESTORED) is about a whole scope: their payload names the tenant and scope to judge them in
_RECEIPT = "CASE WHEN e.event_type IN ('ERASED', 'PRUNED', 'RESTORED') THEN e.payload->>'{}' END"
_M_ORG = f"COALESCE(m.org, {_RECEIPT.format('org')})"
_M_PROJECT = f"COALESCE(m.project, {_RECEIPT.format('project')})"
_M_SCOPE = f"COALESCE(m.scope, {_RECEIPT.format('scope')})"
_COLUMNS = f"""e.id, e.event_type, e.memory_id::text AS memory_id, e.actor_id, e.actor_type, e.task_id,
    e.workflow_id, e.reason, e.payload, e.created_at,
    COALESCE(m.citation, CASE WHEN e.event_type = 'PRUNED' THEN e.payload->>'citation' END) AS citation,
    {_M_ORG} AS m_org,
    {_M_PROJECT} AS m_project, {_M_SCOPE} AS m_scope, t.org AS t_org, t.project AS t_project"""
_JOINS = """FROM memory_events e
    LEFT JOIN memories m ON m.id = e.memory_id
    LEFT JOIN tasks t ON t.id = e.task_id"""


@dataclass(frozen=True)
class EventRow:
    """One audit event, and the tenant and scope of the memory (or task) it is about."""

    id: int
    event_type: str
    memory_id: str | None
    citation: str | None
    actor_id: str | None
    actor_type: str | None
    task_id: str | None
    workflow_id: str | None
    reason: str | None
    payload: dict[str, Any] | None
    created_at: datetime
    memory_org: str | None
    memory_project: str | None
    memory_scope: str | None
    task_org: str | None
    task_project: str | None


@dataclass(frozen=True)
class EventFilter:
    """What `GET /v1/events` narrows by; None means any."""

    event_type: str | None = None
    actor_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None


def _row(r: Any) -> EventRow:
    return EventRow(
        id=int(r.id),
        event_type=r.event_type,
        memory_id=r.memory_id,
        citation=r.citation,
        actor_id=r.actor_id,
        actor_type=r.actor_type,
        task_id=r.task_id,
        workflow_id=r.workflow_id,
        reason=r.reason,
        payload=dict(r.payload) if isinstance(r.payload, dict) else None,
        created_at=r.created_at,
        memory_org=r.m_org,
        memory_project=r.m_project,
        memory_scope=r.m_scope,
        task_org=r.t_org,
        task_project=r.t_project,
    )


async def memory_events_page(
    conn: AsyncConnection, memory_id: str, *, after_id: int | None, limit: int
) -> list[EventRow]:
    """A memory's events, oldest first, after the event id `after_id`."""
    rows = await conn.execute(
        text(
            f"""SELECT {_COLUMNS} {_JOINS}
            WHERE e.memory_id = CAST(:id AS uuid) AND (CAST(:after AS bigint) IS NULL OR e.id > :after)
            ORDER BY e.id LIMIT :limit"""
        ),
        {"id": memory_id, "after": after_id, "limit": limit},
    )
    return [_row(r) for r in rows]


async def tenant_events_page(
    conn: AsyncConnection,
    *,
    org: str,
    project: str | None,
    where: EventFilter,
    before_id: int | None,
    limit: int,
) -> list[EventRow]:
    """Events of memories and tasks of `org` (of `project` and the org scope, when given), newest first,
    before the event id `before_id`."""
    rows = await conn.execute(
        text(
            f"""SELECT {_COLUMNS} {_JOINS}
            WHERE COALESCE({_M_ORG}, t.org) = :org
              AND (CAST(:project AS text) IS NULL OR COALESCE({_M_PROJECT}, t.project) = :project
                   OR (m.id IS NOT NULL AND m.project IS NULL))
              AND (CAST(:type AS text) IS NULL OR e.event_type = :type)
              AND (CAST(:actor AS text) IS NULL OR e.actor_id = :actor)
              AND (CAST(:since AS timestamptz) IS NULL OR e.created_at >= :since)
              AND (CAST(:until AS timestamptz) IS NULL OR e.created_at < :until)
              AND (CAST(:before AS bigint) IS NULL OR e.id < :before)
            ORDER BY e.id DESC LIMIT :limit"""
        ),
        {
            "org": org,
            "project": project,
            "type": where.event_type,
            "actor": where.actor_id,
            "since": where.since,
            "until": where.until,
            "before": before_id,
            "limit": limit,
        },
    )
    return [_row(r) for r in rows]
