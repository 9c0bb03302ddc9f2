"""End a promotion that publishes nothing: a rejection (a human's, or the approval's timeout), or an outcome
(`unverified` by timeout, `failed`).

The activities map their inputs and failures; these are the use cases, each one transaction. A rejection
writes its REJECTED event once (the note from the gateway's grant row, the critique from the run's plan
header: the history carries neither), then the task's status and the promotion's outcome; an outcome only
the status and the outcome.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from governance.errors import InvalidInput
from governance.operations.promotion_publish import with_critique
from governance.storage.events import EventType, record_event
from governance.storage.plans import PlanKey, get_plan
from governance.storage.promotions import end_promotion, grant_note
from governance.storage.staging import ENDED_STATUSES, set_task_status

__all__ = ["record_rejection", "record_outcome"]


async def record_rejection(
    engine: AsyncEngine,
    *,
    workflow_id: str,
    task_id: str,
    actor_id: str | None,
    actor_type: str | None,
    reason: str,
    payload: dict[str, Any],
    grant: str | None,
    run_id: str,
) -> None:
    """Record the rejection of the promotion `workflow_id` (its run `run_id` has the critique, when given)."""
    async with engine.begin() as conn:
        note = await grant_note(conn, workflow_id=workflow_id, grant=grant)
        header = await get_plan(conn, PlanKey(workflow_id, run_id)) if run_id else None
        await record_event(
            conn,
            event_type=EventType.REJECTED,
            actor_id=actor_id,
            actor_type=actor_type,
            task_id=task_id,
            workflow_id=workflow_id,
            reason=note or reason,
            payload=with_critique(payload, header),
            idempotency_key=f"{workflow_id}:rejected",
            if_absent=True,
        )
        await set_task_status(conn, task_id, "rejected")
        await end_promotion(conn, workflow_id, "rejected")


async def record_outcome(engine: AsyncEngine, *, workflow_id: str, task_id: str, status: str) -> None:
    """Record on the task that its promotion ended with `status` without publishing or deciding.

    Raises `InvalidInput` for a status that is not how a promotion ends (nothing is written then)."""
    if status not in ENDED_STATUSES:
        raise InvalidInput(f"{status!r} is not how a promotion ends")
    async with engine.begin() as conn:
        await set_task_status(conn, task_id, status)
        await end_promotion(conn, workflow_id, status)
