"""What is recorded about a task's promotions besides their memories: the numbered promotions themselves
(`promotions`, governance/promotions.py), approval grants and the gateway's proof.

The note of a decision made through the API lives in its grant row only: the update the gateway sends
carries the grant's id, not the note, so no Temporal history holds it (`grant_note` reads it back for the
activities that record the decision; `decision_note` for the API's view of the promotion).

An approval grant is the gateway's proof that an approval came from an authenticated caller: an
`APPROVAL_GRANT` event with `idempotency_key = <workflow id>:grant:<grant>` and `actor_id` = the caller. In
`approval_mode=api_only` the promotion's approver check accepts an approval only when such a row exists for
the approver it names and the decision it makes; the Temporal UI cannot write one.

A grant proves one request, once: `use_approval_grant` binds it to the first workflow run that presents it
(`grant_run` in its payload, set by that run's first check and never changed), so a run started again under
the same workflow id cannot reuse a grant its history shows. A start grant also keeps `start_digest`, the
digest of the start input the gateway sent (the contracts' `start_digest`): a start carrying other input
with that grant proves nothing.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.dialects.postgresql import JSONB, insert
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.identity import Principal
from governance.promotions import PromotionRecord
from governance.storage.events import EventType, record_event
from governance.storage.tables import memory_events, promotions, tasks

__all__ = [
    "TaskLock",
    "lock_task_for_promotion",
    "task_promotions",
    "promotion_by_workflow",
    "promotions_by_workflows",
    "promotion_workflows",
    "add_promotion",
    "rerun_promotion",
    "record_snapshot",
    "end_promotion",
    "close_task",
    "grant_idempotency_key",
    "record_approval_grant",
    "approval_grant_exists",
    "use_approval_grant",
    "grant_note",
    "decision_note",
]


def _record(row: Any) -> PromotionRecord:
    return PromotionRecord(
        task_id=row.task_id,
        number=int(row.number),
        workflow_id=row.workflow_id,
        target_scope=row.target_scope,
        after_seq=int(row.after_seq),
        last_seq=int(row.last_seq) if row.last_seq is not None else None,
        outcome=row.outcome,
        requested_by=row.requested_by,
        started_at=row.started_at,
        snapshot_at=row.snapshot_at,
        ended_at=row.ended_at,
    )


class TaskLock:
    """A task's row locked for a promotion's start: its last seq and why it is closed (None: open)."""

    def __init__(self, last_seq: int, closed_reason: str | None) -> None:
        self.last_seq = last_seq
        self.closed_reason = closed_reason


async def lock_task_for_promotion(conn: AsyncConnection, task_id: str) -> TaskLock | None:
    """Lock the task's row until the caller's transaction ends (one start decides at a time); None: no task.

    Appends take the same row lock for their sequence numbers, so the last seq read here is final.
    """
    row = (
        await conn.execute(
            select(tasks.c.next_seq, tasks.c.closed_reason).where(tasks.c.id == task_id).with_for_update()
        )
    ).first()
    if row is None:
        return None
    return TaskLock(int(row.next_seq), row.closed_reason)


async def task_promotions(conn: AsyncConnection, task_id: str) -> list[PromotionRecord]:
    """The task's promotions, by number."""
    rows = await conn.execute(
        select(promotions).where(promotions.c.task_id == task_id).order_by(promotions.c.number)
    )
    return [_record(r) for r in rows]


async def promotion_by_workflow(conn: AsyncConnection, workflow_id: str) -> PromotionRecord | None:
    """The promotion whose workflow id is `workflow_id`, if one was recorded."""
    row = (await conn.execute(select(promotions).where(promotions.c.workflow_id == workflow_id))).first()
    return _record(row) if row is not None else None


async def promotions_by_workflows(
    conn: AsyncConnection, workflow_ids: list[str]
) -> dict[str, PromotionRecord]:
    """The recorded promotions among `workflow_ids`, by workflow id."""
    if not workflow_ids:
        return {}
    rows = await conn.execute(select(promotions).where(promotions.c.workflow_id.in_(workflow_ids)))
    return {r.workflow_id: _record(r) for r in rows}


async def promotion_workflows(conn: AsyncConnection, task_ids: list[str]) -> list[str]:
    """Every workflow id the promotions of these tasks ran under (an erasure deletes their histories)."""
    if not task_ids:
        return []
    rows = await conn.execute(
        select(promotions.c.workflow_id)
        .where(promotions.c.task_id.in_(task_ids))
        .order_by(promotions.c.workflow_id)
    )
    return [r[0] for r in rows]


async def add_promotion(
    conn: AsyncConnection,
    *,
    task_id: str,
    number: int,
    workflow_id: str,
    after_seq: int,
    target_scope: str,
    requested_by: str | None,
) -> None:
    """Record a new promotion of the task (under the task's lock: numbers are taken one at a time)."""
    await conn.execute(
        insert(promotions)
        .values(
            task_id=task_id,
            number=number,
            workflow_id=workflow_id,
            after_seq=after_seq,
            target_scope=target_scope,
            requested_by=requested_by,
        )
        .on_conflict_do_nothing()
    )
    await conn.execute(update(tasks).where(tasks.c.id == task_id).values(promotion_workflow_id=workflow_id))


async def rerun_promotion(
    conn: AsyncConnection, workflow_id: str, *, target_scope: str, requested_by: str | None
) -> None:
    """A failed promotion runs again: no outcome, no snapshot yet, the target scope it is asked for now."""
    await conn.execute(
        update(promotions)
        .where(promotions.c.workflow_id == workflow_id, promotions.c.outcome == "failed")
        .values(
            outcome=None,
            last_seq=None,
            snapshot_at=None,
            ended_at=None,
            target_scope=target_scope,
            requested_by=requested_by,
        )
    )


async def record_snapshot(conn: AsyncConnection, workflow_id: str, last_seq: int) -> None:
    """The last seq the promotion's collect step took (a retried collect takes the same or a later one)."""
    await conn.execute(
        update(promotions)
        .where(promotions.c.workflow_id == workflow_id)
        .values(last_seq=last_seq, snapshot_at=func.now())
    )


async def end_promotion(conn: AsyncConnection, workflow_id: str, outcome: str) -> None:
    """How the promotion ended (`published`, `unverified`, `rejected`, `failed`).

    Entries appended after its snapshot (while it ran) wait for the task's next promotion: the task is then
    not ended (`tasks.ended_at` cleared, as a later append clears it), so the staging archive leaves them
    alone until a promotion that read them ends.
    """
    ended = (
        await conn.execute(
            update(promotions)
            .where(promotions.c.workflow_id == workflow_id)
            .values(outcome=outcome, ended_at=func.now())
            .returning(promotions.c.task_id, promotions.c.last_seq, promotions.c.after_seq)
        )
    ).first()
    if ended is not None and ended.last_seq is not None:
        await conn.execute(
            update(tasks)
            .where(tasks.c.id == ended.task_id, tasks.c.next_seq > ended.last_seq)
            .values(ended_at=None)
        )


async def close_task(conn: AsyncConnection, task_id: str, *, reason: str, by: str | None) -> bool:
    """Close the task (`closed` or `erased`); False when it was closed already (the first reason stays)."""
    result = await conn.execute(
        update(tasks)
        .where(tasks.c.id == task_id, tasks.c.closed_at.is_(None))
        .values(closed_at=func.now(), closed_reason=reason, closed_by=by)
    )
    return bool(result.rowcount)


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
    start_digest: str | None = None,
) -> None:
    """Write the grant row for `principal`'s `decision` ("approve" | "reject") on this promotion; a start
    grant names the digest of the input it starts with (`start_digest`)."""
    payload: dict[str, Any] = {"decision": decision, "note": note}
    if start_digest is not None:
        payload["start_digest"] = start_digest
    await record_event(
        conn,
        event_type=EventType.APPROVAL_GRANT,
        actor_id=principal.id,
        actor_type=principal.actor_type.value,
        task_id=task_id,
        workflow_id=workflow_id,
        reason=f"{decision} requested through the API",
        payload=payload,
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


async def use_approval_grant(
    conn: AsyncConnection,
    *,
    workflow_id: str,
    grant: str,
    principal_id: str,
    decision: str,
    run_id: str,
    start_digest: str | None = None,
) -> str | None:
    """Why `grant` does not prove `principal_id`'s `decision` for run `run_id`, or None when it does.

    The first run to present a grant binds it (`grant_run`, in the caller's transaction, which must
    commit): another run of the same workflow id is refused it. A grant that names a `start_digest` proves
    only a start whose input has that digest.
    """
    e = memory_events.c
    row = (
        await conn.execute(
            select(e.id, e.payload).where(
                e.idempotency_key == grant_idempotency_key(workflow_id, grant),
                e.event_type == EventType.APPROVAL_GRANT.value,
                e.actor_id == principal_id,
                e.payload["decision"].astext == decision,
            )
        )
    ).first()
    if row is None:
        return "no grant the gateway wrote for it matches"
    recorded = (row.payload or {}).get("start_digest")
    if recorded is not None and recorded != start_digest:
        return "the start input is not the one the gateway started with its grant"
    # the first run binds it; a concurrent check waits for that row and then finds it bound
    await conn.execute(
        update(memory_events)
        .where(e.id == row.id, ~e.payload.has_key("grant_run"))
        .values(payload=e.payload.op("||")(func.jsonb_build_object("grant_run", run_id).cast(JSONB)))
    )
    bound = (await conn.execute(select(e.payload["grant_run"].astext).where(e.id == row.id))).scalar_one()
    if bound != run_id:
        return "the grant was given to another run of this workflow; a run started again needs its own"
    return None


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
