"""What is recorded about a task's promotion besides its memories: approval grants and the gateway's proof.

The note of a decision made through the API lives in its grant row only: the update the gateway sends
carries the grant's id, not the note, so no Temporal history holds it (`grant_note` reads it back for the
activities that record the decision; `decision_note` for the API's view of the promotion).

An approval grant is the gateway's proof that an approval came from an authenticated caller: an
`APPROVAL_GRANT` event with `idempotency_key = <workflow id>:grant:<grant>` and `actor_id` = the caller. In
`approval_mode=api_only` the promotion's approver check accepts an approval only when such a row exists for
the approver it names and the decision it makes; the Temporal UI cannot write one.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.identity import Principal
from governance.storage.events import EventType, record_event
from governance.storage.tables import memory_events

__all__ = [
    "grant_idempotency_key",
    "record_approval_grant",
    "approval_grant_exists",
    "grant_note",
    "decision_note",
]


def grant_idempotency_key(workflow_id: str, grant: str) -> str:
    """The unique key of a grant row; the approver check looks the grant up by it."""
    return f"{workflow_id}:grant:{grant}"


async def record_approval_grant(
    conn: AsyncConnection,
    *,
    workflow_id: str,
    task_id: str,
    grant: str,
    principal: Principal,
    decision: str,
    note: str,
) -> None:
    """Write the grant row for `principal`'s `decision` ("approve" | "reject") on this promotion."""
    await record_event(
        conn,
        event_type=EventType.APPROVAL_GRANT,
        actor_id=principal.id,
        actor_type=principal.actor_type.value,
        task_id=task_id,
        workflow_id=workflow_id,
        reason=f"{decision} requested through the API",
        payload={"decision": decision, "note": note},
        idempotency_key=grant_idempotency_key(workflow_id, grant),
        if_absent=True,
    )


async def approval_grant_exists(
    conn: AsyncConnection, *, workflow_id: str, grant: str, principal_id: str, decision: str
) -> bool:
    """Whether the gateway wrote `grant` for `principal_id`'s `decision` on this workflow."""
    row = (
        await conn.execute(
            select(memory_events.c.id).where(
                memory_events.c.idempotency_key == grant_idempotency_key(workflow_id, grant),
                memory_events.c.event_type == EventType.APPROVAL_GRANT.value,
                memory_events.c.actor_id == principal_id,
                # a grant written for a rejection cannot be replayed as an approval
                memory_events.c.payload["decision"].astext == decision,
            )
        )
    ).first()
    return row is not None


async def grant_note(conn: AsyncConnection, *, workflow_id: str, grant: str | None) -> str | None:
    """The note the gateway kept with `grant` on this workflow (None: no such grant)."""
    if not grant:
        return None
    row = (
        await conn.execute(
            select(memory_events.c.payload["note"].astext).where(
                memory_events.c.idempotency_key == grant_idempotency_key(workflow_id, grant),
                memory_events.c.event_type == EventType.APPROVAL_GRANT.value,
            )
        )
    ).first()
    return row[0] if row is not None else None


async def decision_note(conn: AsyncConnection, workflow_id: str) -> str | None:
    """The note recorded with a promotion's decision (its APPROVED or REJECTED event), if any."""
    row = (
        await conn.execute(
            select(memory_events.c.reason)
            .where(
                memory_events.c.idempotency_key.in_([f"{workflow_id}:approved", f"{workflow_id}:rejected"]),
                memory_events.c.event_type.in_([EventType.APPROVED.value, EventType.REJECTED.value]),
            )
            .order_by(memory_events.c.id.desc())
            .limit(1)
        )
    ).first()
    return row[0] if row is not None else None
