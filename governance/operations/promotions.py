"""A task's numbered promotions: claim the next one, check a started one's claim, close a task.

Each call is one transaction that holds the task's row lock while it decides (governance/promotions.py has
the rules), so two start requests arriving together take one number, never two: the second finds the
first's promotion. The gateway claims before it starts the workflow; the workflow's start check claims
again (`check_started`) for what arrives through Temporal (a raw `temporal workflow start`), against the
same rows: a workflow id that is not the task's current or next promotion, or names a promotion that
ended, is refused.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine

from governance.errors import Conflict, NotFound
from governance.promotions import (
    ENDED_OUTCOMES,
    RERUN_OUTCOME,
    NextPromotion,
    PromotionRecord,
    closed_refusal,
    next_promotion,
)
from governance.staging import public_task_id
from governance.storage.promotions import (
    add_promotion,
    close_task,
    end_promotion,
    lock_task_for_promotion,
    promotion_by_workflow,
    rerun_promotion,
    task_promotions,
)

__all__ = [
    "claim_promotion",
    "check_started",
    "close",
    "promotions_of",
    "record_end",
]


async def _claim(
    engine: AsyncEngine,
    task_key: str,
    target_scope: str,
    requested_by: str | None,
    only_for: str | None = None,
) -> NextPromotion:
    """Decide under the task's lock; record the choice, unless `only_for` names another workflow id."""
    async with engine.begin() as conn:
        lock = await lock_task_for_promotion(conn, task_key)
        if lock is None:
            raise NotFound(f"task {public_task_id(task_key)!r} does not exist")
        if lock.closed_reason is not None:
            raise closed_refusal(public_task_id(task_key), lock.closed_reason, doing="promotion")
        records = await task_promotions(conn, task_key)
        chosen = next_promotion(task_key, records, lock.last_seq)
        if only_for is not None and chosen.workflow_id != only_for:
            return chosen  # a start of another id: refused by the caller, nothing recorded
        if chosen.new:
            await add_promotion(
                conn,
                task_id=task_key,
                number=chosen.number,
                workflow_id=chosen.workflow_id,
                after_seq=chosen.after_seq,
                target_scope=target_scope,
                requested_by=requested_by,
            )
        elif records[-1].outcome == RERUN_OUTCOME:
            await rerun_promotion(
                conn, chosen.workflow_id, target_scope=target_scope, requested_by=requested_by
            )
        return chosen


async def claim_promotion(
    engine: AsyncEngine, task_key: str, target_scope: str, requested_by: str | None
) -> NextPromotion:
    """The promotion a start request of the task runs: recorded when new, found again when it runs.

    Conflict when the task is closed, or its last promotion ended and nothing was appended since.
    """
    return await _claim(engine, task_key, target_scope, requested_by)


async def check_started(
    engine: AsyncEngine, task_key: str, workflow_id: str, target_scope: str, requested_by: str | None
) -> str | None:
    """Why a promotion workflow started as `workflow_id` for `task_key` may not run (None: it may).

    A recorded promotion must be the task's, not ended, and into the scope it was claimed for. An
    unrecorded id is claimed here when it is the task's next promotion (a raw start in a trusting setup,
    a reflection's own task); any other id is refused, so no forged id runs a promotion twice or out of
    turn.
    """
    async with engine.connect() as conn:
        recorded = await promotion_by_workflow(conn, workflow_id)
    if recorded is not None:
        if recorded.task_id != task_key:
            return (
                f"{workflow_id} is promotion {recorded.number} of task {public_task_id(recorded.task_id)!r}, "
                f"not of task {public_task_id(task_key)!r}"
            )
        if recorded.outcome in ENDED_OUTCOMES:
            return (
                f"promotion {recorded.number} of task {public_task_id(task_key)!r} ({workflow_id}) already "
                f"ended ({recorded.outcome}); its task's next promotion is started through loregate"
            )
        if recorded.target_scope is not None and recorded.target_scope != target_scope:
            return (
                f"promotion {recorded.number} of task {public_task_id(task_key)!r} was requested into "
                f"{recorded.target_scope} scope, not {target_scope}"
            )
        return None
    try:
        chosen = await _claim(engine, task_key, target_scope, requested_by, only_for=workflow_id)
    except (Conflict, NotFound) as exc:
        return str(exc)
    if chosen.workflow_id != workflow_id:
        state = "next" if chosen.new else "current"
        return (
            f"{workflow_id} is not a promotion of task {public_task_id(task_key)!r} that may run now: its "
            f"{state} promotion is {chosen.number} ({chosen.workflow_id})"
        )
    return None


async def close(engine: AsyncEngine, task_key: str, *, reason: str, by: str | None) -> bool:
    """Close the task: no more entries, no more promotions. False when it was closed already."""
    async with engine.begin() as conn:
        return await close_task(conn, task_key, reason=reason, by=by)


async def promotions_of(engine: AsyncEngine, task_key: str) -> list[PromotionRecord]:
    """The task's promotions, by number."""
    async with engine.connect() as conn:
        return await task_promotions(conn, task_key)


async def record_end(engine: AsyncEngine, workflow_id: str, outcome: str) -> None:
    """Record how a promotion ended when its workflow could not (Temporal's state says it)."""
    async with engine.begin() as conn:
        await end_promotion(conn, workflow_id, outcome)
