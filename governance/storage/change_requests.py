"""Change requests: a supersede, retire or lift of published memory awaiting an approval (`change_requests`).

The gateway writes the request (content already redacted, its embedding computed) and starts its
`ChangeRequestWorkflow`, which carries only the id. Applying an approved one is
governance/operations/changes.py; the statements it composes are here. Rejection, a timeout and a refused
requester close the request without a change. Every step is idempotent: a retried activity finds the
request already decided and answers the same.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.changes import ChangeOperation
from governance.errors import Conflict, NotFound
from governance.redaction import redact_free_text
from governance.storage.events import EventType, record_event
from governance.storage.tables import change_requests, memories

__all__ = [
    "AWAITING",
    "NewChangeRequest",
    "ChangeRequest",
    "Applied",
    "Target",
    "change_target",
    "create_change_request",
    "set_change_workflow",
    "get_change_request",
    "list_change_requests",
    "close_change_request",
    "record_change_approval",
    "close_applied",
    "citation_of",
    "applied_as",
    "is_head",
    "proposed_embedding",
]

# the state a request is written in; the workflow's contract names every state
AWAITING = "awaiting_approval"


@dataclass(frozen=True)
class NewChangeRequest:
    """What the gateway proposes (content and title already redacted)."""

    memory_id: str
    org: str
    project: str | None
    scope: str
    operation: ChangeOperation
    reason: str
    requested_by: str
    actor_type: str
    content: str | None = None
    title: str | None = None
    canonical_key: str | None = None
    valid_from_commit: str | None = None
    embedding: Sequence[float] | None = None
    redaction_counts: dict[str, int] = field(default_factory=dict)
    idempotency_key: str | None = None
    request_hash: str | None = None
    # a lift's wider scope; its `scope`/`project` above are the target's (storage/lifting.py)
    target_scope: str | None = None
    target_scope_key: str | None = None


@dataclass(frozen=True)
class ChangeRequest:
    """A stored change request (no embedding)."""

    id: str
    memory_id: str
    org: str
    project: str | None
    scope: str
    operation: str
    content: str | None
    title: str | None
    canonical_key: str | None
    reason: str
    valid_from_commit: str | None
    redaction_counts: dict[str, int]
    requested_by: str
    actor_type: str
    state: str
    workflow_id: str | None
    decided_by: str | None
    decided_by_type: str | None
    decision_note: str | None
    result_memory_id: str | None
    created_at: datetime
    decided_at: datetime | None
    target_scope: str | None = None
    target_scope_key: str | None = None
    replayed: bool = False


@dataclass(frozen=True)
class Applied:
    """What applying a request did: `applied`, or `conflict` when its target was no longer the head."""

    state: str
    result_memory_id: str | None
    citation: str | None
    reason: str


@dataclass(frozen=True)
class Target:
    """The memory a request would change, as it is now (the "old" side of the request)."""

    id: str
    citation: str
    title: str
    content: str
    confidence: float
    active: bool


_COLUMNS = [c for c in change_requests.c if c.name not in {"embedding", "idempotency_key", "request_hash"}]


def _request(row: Any, replayed: bool = False) -> ChangeRequest:
    values = {c.name: getattr(row, c.name) for c in _COLUMNS}
    for key in ("id", "memory_id", "result_memory_id"):
        values[key] = str(values[key]) if values[key] is not None else None
    values["redaction_counts"] = dict(values["redaction_counts"] or {})
    return ChangeRequest(**values, replayed=replayed)


async def create_change_request(conn: AsyncConnection, new: NewChangeRequest) -> ChangeRequest:
    """Write a request in state `awaiting_approval`; with an idempotency key seen before, the first request.

    The same key with another request (another memory, operation or body: another `request_hash`) is a
    Conflict, as for every idempotency key.
    """
    if new.idempotency_key is not None:
        seen = (
            await conn.execute(
                select(*_COLUMNS, change_requests.c.request_hash).where(
                    change_requests.c.idempotency_key == new.idempotency_key
                )
            )
        ).first()
        if seen is not None:
            if seen.request_hash != new.request_hash:
                raise Conflict(
                    "this idempotency key was already used for another request (another memory, operation "
                    "or body); a new request needs a new key"
                )
            return _request(seen, replayed=True)
    values = {
        "id": str(uuid.uuid4()),
        "memory_id": new.memory_id,
        "org": new.org,
        "project": new.project,
        "scope": new.scope,
        "operation": ChangeOperation(new.operation).value,
        "content": new.content,
        "title": new.title,
        "canonical_key": new.canonical_key,
        "reason": redact_free_text(new.reason),
        "valid_from_commit": new.valid_from_commit,
        "embedding": list(new.embedding) if new.embedding is not None else None,
        "redaction_counts": new.redaction_counts,
        "requested_by": new.requested_by,
        "actor_type": new.actor_type,
        "state": AWAITING,
        "idempotency_key": new.idempotency_key,
        "request_hash": new.request_hash,
        "target_scope": new.target_scope,
        "target_scope_key": new.target_scope_key,
    }
    row = (await conn.execute(insert(change_requests).values(**values).returning(*_COLUMNS))).one()
    return _request(row)


async def set_change_workflow(conn: AsyncConnection, request_id: str, workflow_id: str) -> None:
    """Name the workflow that decides the request."""
    await conn.execute(
        update(change_requests).where(change_requests.c.id == request_id).values(workflow_id=workflow_id)
    )


def _uuid_or_none(ref: str) -> str | None:
    try:
        return str(uuid.UUID(ref))
    except ValueError:
        return None


async def get_change_request(conn: AsyncConnection, request_id: str, *, lock: bool = False) -> ChangeRequest:
    """The request, or NotFound (also for a malformed id)."""
    as_uuid = _uuid_or_none(request_id)
    if as_uuid is None:
        raise NotFound(f"change request {request_id!r} does not exist")
    query = select(*_COLUMNS).where(change_requests.c.id == as_uuid)
    row = (await conn.execute(query.with_for_update() if lock else query)).first()
    if row is None:
        raise NotFound(f"change request {request_id!r} does not exist")
    return _request(row)


async def list_change_requests(
    conn: AsyncConnection, *, org: str, state: str | None, limit: int
) -> list[ChangeRequest]:
    """Requests of one org (optionally in one state), newest first; the caller filters what it may read."""
    query = select(*_COLUMNS).where(change_requests.c.org == org)
    if state is not None:
        query = query.where(change_requests.c.state == state)
    rows = await conn.execute(
        query.order_by(change_requests.c.created_at.desc(), change_requests.c.id).limit(limit)
    )
    return [_request(row) for row in rows]


async def change_target(conn: AsyncConnection, memory_id: str) -> Target:
    """The memory a request names, as it is now; NotFound if it is gone."""
    row = (
        await conn.execute(
            select(
                memories.c.citation,
                memories.c.title,
                memories.c.content,
                memories.c.confidence,
                memories.c.deprecated_at,
            ).where(memories.c.id == memory_id)
        )
    ).first()
    if row is None:
        raise NotFound(f"memory {memory_id} not found")
    return Target(
        memory_id, row.citation, row.title, row.content, float(row.confidence), row.deprecated_at is None
    )


async def close_change_request(
    conn: AsyncConnection,
    request_id: str,
    *,
    state: str,
    decided_by: str | None,
    decided_by_type: str | None,
    note: str,
    workflow_id: str | None,
) -> ChangeRequest:
    """End an awaiting request without a change (rejected, expired, refused); a REJECTED event records it.

    A request already closed is answered as it is (a retried activity changes nothing).
    """
    current = await get_change_request(conn, request_id, lock=True)
    if current.state != AWAITING:
        return current
    row = (
        await conn.execute(
            update(change_requests)
            .where(change_requests.c.id == current.id)
            .values(
                state=state,
                decided_by=decided_by,
                decided_by_type=decided_by_type,
                decision_note=redact_free_text(note),
                decided_at=func.now(),
            )
            .returning(*_COLUMNS)
        )
    ).one()
    await record_event(
        conn,
        memory_id=current.memory_id,
        event_type=EventType.REJECTED,
        actor_id=decided_by,
        actor_type=decided_by_type,
        workflow_id=workflow_id,
        reason=note,
        payload={"change_request": current.id, "operation": current.operation, "state": state},
        idempotency_key=f"change:{current.id}:closed",
        if_absent=True,
    )
    return _request(row)


async def record_change_approval(
    conn: AsyncConnection,
    *,
    memory_id: str,
    operation: str,
    approver_id: str,
    approver_type: str,
    note: str,
    result_memory_id: str | None = None,
    change_request: str | None = None,
    workflow_id: str | None = None,
    idempotency_key: str | None = None,
    direct: bool | None = None,
) -> None:
    """The APPROVED event of a change: who approved which operation (a direct call by an approver, too).

    `direct` (default: no change request) says the approver's own call was the approval.
    """
    await record_event(
        conn,
        memory_id=memory_id,
        event_type=EventType.APPROVED,
        actor_id=approver_id,
        actor_type=approver_type,
        workflow_id=workflow_id,
        reason=note or f"{operation} approved",
        payload={
            "operation": operation,
            "change_request": change_request,
            "result": result_memory_id,
            "direct": change_request is None if direct is None else direct,
        },
        idempotency_key=idempotency_key,
        if_absent=True,
    )


async def close_applied(
    conn: AsyncConnection,
    request_id: str,
    approver: str,
    approver_type: str,
    note: str,
    result_id: str | None,
    citation: str | None,
) -> Applied:
    """Close the request `applied` by its approver, naming the memory the change produced."""
    row = (
        await conn.execute(
            update(change_requests)
            .where(change_requests.c.id == request_id)
            .values(
                state="applied",
                decided_by=approver,
                decided_by_type=approver_type,
                decision_note=redact_free_text(note),
                decided_at=func.now(),
                result_memory_id=result_id,
            )
            .returning(*_COLUMNS)
        )
    ).one()
    return applied_as(_request(row), citation)


async def citation_of(conn: AsyncConnection, memory_id: str | None) -> str | None:
    """The citation of a memory (None for none)."""
    if memory_id is None:
        return None
    return (
        await conn.execute(select(memories.c.citation).where(memories.c.id == memory_id))
    ).scalar_one_or_none()


def applied_as(request: ChangeRequest, citation: str | None) -> Applied:
    """What a decided request did, as `Applied`."""
    return Applied(request.state, request.result_memory_id, citation, request.decision_note or request.state)


async def is_head(conn: AsyncConnection, memory_id: str) -> bool:
    """Whether the memory is there and not deprecated (still the head of its chain)."""
    head = (await conn.execute(select(memories.c.deprecated_at).where(memories.c.id == memory_id))).first()
    return head is not None and head.deprecated_at is None


async def proposed_embedding(conn: AsyncConnection, request_id: str) -> list[float] | None:
    """The embedding of a request's proposed content (stored with it)."""
    embedding = (
        await conn.execute(select(change_requests.c.embedding).where(change_requests.c.id == request_id))
    ).scalar_one()
    return list(embedding) if embedding is not None else None
