"""The audit trail: every `memory_events` row is written by `record_events` (one row: `record_event`).

Each change to published memory, each promotion decision and each approval grant writes its event in the
caller's transaction, so a change and its event commit or roll back together. An `idempotency_key`
(unique) makes a retried activity or a replayed request write its event once: by default a second write
with the same key fails (the caller's transaction is undone, so the change is not applied twice); with
`if_absent=True` it is skipped (for events that only record that something happened, such as a
promotion's summary).

A request's idempotency key is bound to the request: its event keeps the hash of what was asked
(`REQUEST_HASH` in the payload: the memory, the operation, the body), and `recorded_payload` with a
`request_hash` answers Conflict when the key comes back with another request, instead of replaying an answer
that belongs to something else.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import insert
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.errors import Conflict
from governance.redaction import redact_free_text
from governance.storage.tables import memory_events

__all__ = [
    "expired_event",
    "EventType",
    "Event",
    "REQUEST_HASH",
    "record_event",
    "record_events",
    "event_rows",
    "insert_event_rows",
    "recorded_payload",
    "recorded_payloads",
]

# the payload field holding the hash of the request an idempotency key was first used for
REQUEST_HASH = "request"


class EventType(StrEnum):
    """Every kind of `memory_events` row."""

    PROMOTED = "PROMOTED"
    MERGED = "MERGED"
    SUPERSEDED = "SUPERSEDED"
    BOOSTED = "BOOSTED"
    DECAYED = "DECAYED"
    EXPIRED = "EXPIRED"
    PRUNED = "PRUNED"
    RETIRED = "RETIRED"
    # a memory it was derived from was superseded or retired (storage/derivations.py); the cause is named
    STALE = "STALE"
    # a human checked a stale memory and found it still true: the stale mark is cleared
    CONFIRMED = "CONFIRMED"
    APPROVED = "APPROVED"
    REJECTED = "REJECTED"
    FEEDBACK = "FEEDBACK"
    STUCK = "STUCK"
    APPROACH = "APPROACH"
    APPROACH_REFUSED = "APPROACH_REFUSED"
    # a promotion's summary: redaction counts, cognify engine, what it published
    PROMOTION = "PROMOTION"
    # the gateway's proof that an approval came from an authenticated caller (storage/promotions.py)
    APPROVAL_GRANT = "APPROVAL_GRANT"
    # a chunk of a task's staging left for an archive file (its path, sha256, count and seq range)
    STAGING_ARCHIVED = "STAGING_ARCHIVED"
    # an erasure's receipt: ids, counts and sha256 of what was erased, who and when, never the content
    ERASED = "ERASED"
    # an orchestrator or human observed a code rule (followed and passed, violated, rejected): its EMA moved
    OBSERVED = "OBSERVED"
    # an admin restore from an export file: its sha256, source scope and counts (api/services/imports.py)
    RESTORED = "RESTORED"
    # a memory was lifted to a wider scope: at the original (where it went) and at the copy (where from)
    LIFTED = "LIFTED"
    # an episode a reflection distilled into insights (storage/reflections.py): a retention candidate
    DISTILLED = "DISTILLED"
    # a memory's decay policy was set (storage/decay_policy.py): from what, to what
    DECAY_POLICY = "DECAY_POLICY"
    # an approver rejected one plan item of the promotion it approved (the reason), or edited it (the
    # word diff): storage/item_decisions.py, written by publish before the plan's items are published
    ITEM_REJECTED = "ITEM_REJECTED"
    ITEM_EDITED = "ITEM_EDITED"


@dataclass(frozen=True)
class Event:
    """One audit row; `payload` holds ids, counts and hashes, never secrets."""

    event_type: EventType
    actor_id: str | None
    actor_type: str | None
    memory_id: str | None = None
    reason: str | None = None
    payload: dict[str, Any] | None = None
    task_id: str | None = None
    workflow_id: str | None = None
    idempotency_key: str | None = None


async def record_events(conn: AsyncConnection, events: Sequence[Event], *, if_absent: bool = False) -> None:
    """Append `events` in the caller's transaction (see the module docstring for `if_absent`)."""
    await insert_event_rows(conn, event_rows(events), if_absent=if_absent)


def event_rows(events: Sequence[Event]) -> list[dict[str, Any]]:
    """`events` as rows of `memory_events`, their free text redacted (CPU work: a caller writing thousands
    runs it off the event loop, then `insert_event_rows`)."""
    rows = [{**asdict(e), "event_type": e.event_type.value} for e in events]
    for row in rows:  # a reason or a note is free text: shown to other projects' readers, so cleaned first
        row["reason"] = redact_free_text(row["reason"])
        if isinstance(row["payload"], dict) and isinstance(row["payload"].get("note"), str):
            row["payload"] = {**row["payload"], "note": redact_free_text(row["payload"]["note"])}
    return rows


async def insert_event_rows(
    conn: AsyncConnection, rows: Sequence[dict[str, Any]], *, if_absent: bool = False
) -> None:
    """Append rows made by `event_rows` in the caller's transaction (`record_events` does both)."""
    if not rows:
        return
    if if_absent:
        await conn.execute(
            pg_insert(memory_events).values(rows).on_conflict_do_nothing(index_elements=["idempotency_key"])
        )
    else:
        await conn.execute(insert(memory_events), rows)


async def record_event(
    conn: AsyncConnection,
    *,
    event_type: EventType,
    actor_id: str | None,
    actor_type: str | None,
    memory_id: str | None = None,
    reason: str | None = None,
    payload: dict[str, Any] | None = None,
    task_id: str | None = None,
    workflow_id: str | None = None,
    idempotency_key: str | None = None,
    if_absent: bool = False,
) -> None:
    """Append one audit event in the caller's transaction."""
    event = Event(
        event_type=EventType(event_type),
        actor_id=actor_id,
        actor_type=actor_type,
        memory_id=memory_id,
        reason=reason,
        payload=payload,
        task_id=task_id,
        workflow_id=workflow_id,
        idempotency_key=idempotency_key,
    )
    await record_events(conn, [event], if_absent=if_absent)


async def recorded_payload(
    conn: AsyncConnection, idempotency_key: str | None, request_hash: str | None = None
) -> dict[str, Any] | None:
    """The payload of the event recorded under `idempotency_key`, or None: how a replay finds its first
    answer.

    With `request_hash`, the recorded event must be of the same request (the same hash in its payload);
    otherwise the key was used for another memory, operation or body, and that is a Conflict. An event
    recorded without a hash (before keys were bound) cannot prove it is the same request: Conflict too.
    """
    if idempotency_key is None:
        return None
    row = (
        await conn.execute(
            memory_events.select()
            .with_only_columns(memory_events.c.payload)
            .where(memory_events.c.idempotency_key == idempotency_key)
        )
    ).first()
    if row is None:
        return None
    payload = dict(row.payload or {})
    if request_hash is not None and payload.get(REQUEST_HASH) != request_hash:
        raise Conflict(
            "this idempotency key was already used for another request (another memory, operation or "
            "body); a new request needs a new key"
        )
    return payload


async def recorded_payloads(
    conn: AsyncConnection, idempotency_keys: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """The payloads recorded under any of `idempotency_keys` (by key): `recorded_payload` for many at once."""
    if not idempotency_keys:
        return {}
    rows = await conn.execute(
        memory_events.select()
        .with_only_columns(memory_events.c.idempotency_key, memory_events.c.payload)
        .where(memory_events.c.idempotency_key.in_(list(idempotency_keys)))
    )
    return {r.idempotency_key: dict(r.payload or {}) for r in rows}


def expired_event(memory_id: str, expires_at: datetime) -> Event:
    """The EXPIRED event of a memory whose `expires_at` passed."""
    return Event(
        event_type=EventType.EXPIRED,
        actor_id="system",
        actor_type="system",
        memory_id=memory_id,
        reason="past expires_at",
        payload={"expires_at": expires_at.isoformat()},
    )
