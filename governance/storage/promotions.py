"""What the gateway records about a task's promotion: its workflow id, and approval grants.

An approval grant is the gateway's proof that an approval came from an authenticated caller: a
`memory_events` row of type `APPROVAL_GRANT` with `dedupe_key = <workflow id>:grant:<grant>` and
`actor_id` = the caller. In `approval_mode=api_only` the promotion's approver check accepts an approval only
when such a row exists for the approver it names (activities/promotion.py); the Temporal UI cannot write one.
"""

from __future__ import annotations

from sqlalchemy import update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.identity import Principal
from governance.storage.tables import memory_events, tasks

__all__ = ["APPROVAL_GRANT_EVENT", "grant_dedupe_key", "record_approval_grant", "set_promotion_workflow"]

APPROVAL_GRANT_EVENT = "APPROVAL_GRANT"


def grant_dedupe_key(workflow_id: str, grant: str) -> str:
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
    await conn.execute(
        pg_insert(memory_events)
        .values(
            event_type=APPROVAL_GRANT_EVENT,
            actor_id=principal.id,
            actor_type=principal.actor_type.value,
            task_id=task_id,
            workflow_id=workflow_id,
            reason=f"{decision} requested through the API",
            payload={"decision": decision, "note": note},
            dedupe_key=grant_dedupe_key(workflow_id, grant),
        )
        .on_conflict_do_nothing(index_elements=["dedupe_key"])
    )


async def set_promotion_workflow(conn: AsyncConnection, task_id: str, workflow_id: str) -> None:
    """Remember on the task which workflow promotes it."""
    await conn.execute(update(tasks).where(tasks.c.id == task_id).values(promotion_workflow_id=workflow_id))
