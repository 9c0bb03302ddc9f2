"""Apply a change to published memory: supersede, retire or lift, directly or once approved.

One home for each path. A change request approved in its workflow is applied by `apply_approved` (the
`change_request_apply` activity); the gateway's lift, recorded and applied in one transaction where no
approval is due, calls `apply_change_request` in its own transaction; a direct supersede or retire by a
caller who needs no approval is `supersede` / `retire`, which record an approver's own call as the
approval it is. Applying re-checks the target under its scope's lock (else the request ends `conflict`,
nothing changed) and writes the APPROVED event naming the approver; the trust of what it writes is
`governance/changes.py`'s and `governance/lifting.py`'s.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from governance.changes import ChangeOperation, ChangeTrust, change_trust
from governance.cognify import title_of
from governance.dedup import content_hash
from governance.errors import InvalidInput
from governance.operations.lifting import LiftRules, apply_lift
from governance.redaction import redact_free_text
from governance.scopes import ActorType
from governance.storage.change_requests import (
    AWAITING,
    Applied,
    ChangeRequest,
    NewChangeRequest,
    applied_as,
    citation_of,
    close_applied,
    close_change_request,
    get_change_request,
    is_head,
    proposed_embedding,
    record_change_approval,
)
from governance.storage.derivations import mark_derived_stale
from governance.storage.events import REQUEST_HASH, EventType, record_event, recorded_payload
from governance.storage.memory_changes import retire_head
from governance.storage.memory_rows import (
    MemoryTenant,
    NewMemory,
    PublishOutcome,
    deprecate_head,
    insert_memory,
    lock_scopes,
    not_found_or_conflict,
    outcome_dict,
    replay_outcome,
    scope_key_of,
)

__all__ = [
    "Supersession",
    "Retirement",
    "apply_approved",
    "apply_change_request",
    "supersede",
    "retire",
    "supersede_memory",
    "retire_memory",
    "as_request",
]


@dataclass(frozen=True)
class Supersession:
    """A new head for a memory (content redacted and titled already) and who writes it."""

    memory_id: str
    content: str
    title: str | None
    reason: str
    actor_id: str
    actor_type: str
    canonical_key: str | None = None
    embedding: Sequence[float] | None = None
    valid_from_commit: str | None = None
    idempotency_key: str | None = None
    request_hash: str | None = None


@dataclass(frozen=True)
class Retirement:
    """A memory deprecated without a successor, and who retires it."""

    memory_id: str
    reason: str
    actor_id: str
    actor_type: str
    idempotency_key: str | None = None
    request_hash: str | None = None


def as_request(
    change: Supersession | Retirement, tenant: MemoryTenant, *, redaction_counts: dict[str, int] | None = None
) -> NewChangeRequest:
    """The change request that proposes `change` to a memory of `tenant`, where an approval is due.

    The one mapping from a change to its request (`_requested` maps a stored request back): the caller
    builds the change once and either applies it or proposes it.
    """
    if isinstance(change, Retirement):
        return NewChangeRequest(
            memory_id=change.memory_id,
            org=tenant.org,
            project=tenant.project,
            scope=tenant.scope,
            operation=ChangeOperation.RETIRE,
            reason=change.reason,
            requested_by=change.actor_id,
            actor_type=change.actor_type,
            idempotency_key=change.idempotency_key,
            request_hash=change.request_hash,
        )
    return NewChangeRequest(
        memory_id=change.memory_id,
        org=tenant.org,
        project=tenant.project,
        scope=tenant.scope,
        operation=ChangeOperation.SUPERSEDE,
        reason=change.reason,
        requested_by=change.actor_id,
        actor_type=change.actor_type,
        content=change.content,
        title=change.title,
        canonical_key=change.canonical_key,
        valid_from_commit=change.valid_from_commit,
        embedding=change.embedding,
        redaction_counts=dict(redaction_counts or {}),
        idempotency_key=change.idempotency_key,
        request_hash=change.request_hash,
    )


async def supersede(
    engine: AsyncEngine, change: Supersession, *, trust: ChangeTrust, approved_at: str | None
) -> PublishOutcome:
    """Replace a head at once, in one transaction (`approved_at`: see `_approved_directly`)."""
    async with engine.begin() as conn:
        outcome = await _supersede(conn, change, trust=trust, workflow_id=None)
        await _approved_directly(conn, change, outcome.memory_id, approved_at)
    return outcome


async def retire(engine: AsyncEngine, change: Retirement, *, approved_at: str | None) -> None:
    """Retire a memory at once, in one transaction (`approved_at`: see `_approved_directly`)."""
    async with engine.begin() as conn:
        await _retire(conn, change, workflow_id=None)
        await _approved_directly(conn, change, change.memory_id, approved_at)


async def _approved_directly(
    conn: AsyncConnection, change: Supersession | Retirement, result_id: str, approved_at: str | None
) -> None:
    """`approved_at` (the memory's scope): the writer approves there, and its call is the approval it is."""
    if approved_at is None:
        return
    operation = ChangeOperation.SUPERSEDE if isinstance(change, Supersession) else ChangeOperation.RETIRE
    await record_change_approval(
        conn,
        memory_id=change.memory_id,
        operation=operation.value,
        approver_id=change.actor_id,
        approver_type=change.actor_type,
        note=f"{operation.value} by an approver of {approved_at} scope",
        result_memory_id=result_id,
        idempotency_key=f"{change.idempotency_key}:approved" if change.idempotency_key else None,
    )


async def _supersede(
    conn: AsyncConnection, change: Supersession, *, trust: ChangeTrust | None, workflow_id: str | None
) -> PublishOutcome:
    """The one place a supersede is written, directly or for a request."""
    return await supersede_memory(
        conn,
        change.memory_id,
        content=change.content,
        reason=change.reason,
        title=change.title,
        canonical_key=change.canonical_key,
        embedding=change.embedding,
        valid_from_commit=change.valid_from_commit,
        actor_id=change.actor_id,
        actor_type=change.actor_type,
        idempotency_key=change.idempotency_key,
        request_hash=change.request_hash,
        trust=trust,
        workflow_id=workflow_id,
    )


async def _retire(conn: AsyncConnection, change: Retirement, *, workflow_id: str | None) -> None:
    """The one place a retire is written, directly or for a request."""
    await retire_memory(
        conn,
        change.memory_id,
        reason=change.reason,
        actor_id=change.actor_id,
        actor_type=change.actor_type,
        idempotency_key=change.idempotency_key,
        request_hash=change.request_hash,
        workflow_id=workflow_id,
    )


async def _requested(conn: AsyncConnection, request: ChangeRequest) -> Supersession | Retirement:
    """The change a stored request asks for, written under the request's own key."""
    key = f"change:{request.id}:apply"
    if request.operation == ChangeOperation.RETIRE:
        return Retirement(
            request.memory_id, request.reason, request.requested_by, request.actor_type, idempotency_key=key
        )
    return Supersession(
        memory_id=request.memory_id,
        content=request.content or "",
        title=request.title,
        reason=request.reason,
        actor_id=request.requested_by,
        actor_type=request.actor_type,
        canonical_key=request.canonical_key,
        embedding=await proposed_embedding(conn, request.id),
        valid_from_commit=request.valid_from_commit,
        idempotency_key=key,
    )


async def _approved(
    conn: AsyncConnection,
    request: ChangeRequest,
    approver: str,
    approver_type: str,
    note: str,
    result_id: str | None,
    workflow_id: str | None,
    *,
    direct: bool | None = None,
) -> None:
    """The APPROVED event of a request, once per request."""
    await record_change_approval(
        conn,
        memory_id=request.memory_id,
        operation=request.operation,
        approver_id=approver,
        approver_type=approver_type,
        note=note,
        result_memory_id=result_id,
        change_request=request.id,
        workflow_id=workflow_id,
        idempotency_key=f"change:{request.id}:approved",
        direct=direct,
    )


async def apply_approved(
    engine: AsyncEngine,
    request_id: str,
    *,
    approver: str,
    approver_type: str | None,
    note: str,
    workflow_id: str,
    lift_rules: LiftRules,
) -> Applied:
    """Apply a request its workflow saw approved, in one transaction (a human's approval validates it)."""
    trust = ChangeTrust.HUMAN_VALIDATED if approver_type == ActorType.HUMAN else ChangeTrust.APPROVED
    async with engine.begin() as conn:
        return await apply_change_request(
            conn,
            request_id,
            approver=approver,
            approver_type=approver_type or "",
            note=note,
            workflow_id=workflow_id,
            trust=trust,
            lift_rules=lift_rules,
        )


async def apply_change_request(
    conn: AsyncConnection,
    request_id: str,
    *,
    approver: str,
    approver_type: str,
    note: str,
    workflow_id: str | None,
    trust: ChangeTrust | None,
    lift_rules: LiftRules | None = None,
) -> Applied:
    """Apply an approved request in the caller's transaction, or end it `conflict` if its target moved on.

    The scope's lock is taken first, so no other change to that scope can slip between the head check and
    the change; the request's row lock makes a retried or concurrent apply see the first one's outcome.
    A lift (`lift_rules` required) is applied by governance/operations/lifting.py; `trust` None means no
    approval was needed (a lift into a scope without validation), so no APPROVED event is written.
    """
    current = await get_change_request(conn, request_id, lock=True)
    if current.state != AWAITING:
        return applied_as(current, await citation_of(conn, current.result_memory_id))
    if current.operation == ChangeOperation.LIFT:
        if lift_rules is None:
            raise InvalidInput("applying a lift needs the dedup thresholds (lift_rules)")
        return await _apply_lift(conn, current, approver, approver_type, note, workflow_id, trust, lift_rules)
    await lock_scopes(conn, await scope_key_of(conn, current.memory_id))
    if not await is_head(conn, current.memory_id):
        closed = await close_change_request(
            conn,
            current.id,
            state="conflict",
            decided_by=approver,
            decided_by_type=approver_type,
            note=f"approved, but memory {current.memory_id} is no longer the head of its chain: "
            "nothing applied",
            workflow_id=workflow_id,
        )
        return applied_as(closed, None)
    change = await _requested(conn, current)
    result_id, citation = current.memory_id, None
    if isinstance(change, Supersession):
        outcome = await _supersede(conn, change, trust=trust, workflow_id=workflow_id)
        result_id, citation = outcome.memory_id, outcome.citation
    else:
        await _retire(conn, change, workflow_id=workflow_id)
    await _approved(conn, current, approver, approver_type, note, result_id, workflow_id)
    return await close_applied(conn, current.id, approver, approver_type, note, result_id, citation)


async def _apply_lift(
    conn: AsyncConnection,
    current: ChangeRequest,
    approver: str,
    approver_type: str,
    note: str,
    workflow_id: str | None,
    trust: ChangeTrust | None,
    rules: LiftRules,
) -> Applied:
    """Apply a lift (governance/operations/lifting.py) and close the request `applied` or `conflict`."""
    lifted = await apply_lift(conn, current, approval=trust, workflow_id=workflow_id, rules=rules)
    if lifted.state == "conflict":
        closed = await close_change_request(
            conn,
            current.id,
            state="conflict",
            decided_by=approver,
            decided_by_type=approver_type,
            note=lifted.reason,
            workflow_id=workflow_id,
        )
        return applied_as(closed, None)
    first = lifted.items[0]
    if trust is not None:
        # workflow None: a human approver's own lift, applied by the gateway
        direct = workflow_id is None
        await _approved(
            conn, current, approver, approver_type, note, first.result_memory_id, workflow_id, direct=direct
        )
    return await close_applied(
        conn, current.id, approver, approver_type, note, first.result_memory_id, first.result_citation
    )


def _with_request_hash(payload: dict[str, Any], request_hash: str | None) -> dict[str, Any]:
    return {**payload, REQUEST_HASH: request_hash} if request_hash is not None else payload


async def supersede_memory(
    conn: AsyncConnection,
    old_id: str,
    *,
    content: str,
    reason: str,
    actor_id: str,
    actor_type: str,
    title: str | None = None,
    canonical_key: str | None = None,
    embedding: Sequence[float] | None = None,
    valid_from_commit: str | None = None,
    task_id: str | None = None,
    idempotency_key: str | None = None,
    request_hash: str | None = None,
    trust: ChangeTrust | str | None = None,
    workflow_id: str | None = None,
) -> PublishOutcome:
    """Replace the head `old_id` with new content, in the caller's transaction; Conflict if it is not a head.

    The new head never inherits the old one's trust or title: it starts with `trust` (governance/changes.py;
    by default a human's supersede is a human validation and anyone else's a draft), and its title is
    `title` or the first line of its own content. The caller redacts the content (`proposed_content`).
    """
    recorded = await recorded_payload(conn, idempotency_key, request_hash)
    if recorded is not None:
        return replay_outcome(recorded)
    if not content.strip():
        raise InvalidInput("the superseding content is empty")
    await lock_scopes(conn, await scope_key_of(conn, old_id))
    old = await deprecate_head(
        conn, old_id, note=redact_free_text(reason) or "", valid_to_commit=valid_from_commit
    )
    if old is None:
        raise await not_found_or_conflict(conn, old_id, "supersession")
    if trust is None:
        trust = ChangeTrust.HUMAN_VALIDATED if actor_type == "human" else ChangeTrust.DRAFT
    confidence, validation_source = change_trust(trust)
    mem = NewMemory(
        memory_type=old.memory_type,
        scope=old.scope,
        scope_key=old.scope_key,
        org=old.org,
        project=old.project,
        title=title or title_of(content),
        content=content,
        confidence=confidence,
        embedding=list(embedding) if embedding is not None else None,
        validation_source=validation_source,
        importance=old.importance,
        source_task_ids=[task_id] if task_id else [],
        decay_policy=old.decay_policy,
        valid_from_commit=valid_from_commit,
    )
    memory_id = str(uuid.uuid4())
    citation = await insert_memory(
        conn,
        mem,
        memory_id=memory_id,
        chash=content_hash(content),
        supersedes_id=str(old.id),
        canonical_key=canonical_key or old.canonical_key,
        version=old.version + 1,
        related_ids=(),
    )
    outcome = PublishOutcome(memory_id, citation, "superseded", superseded_id=str(old.id))
    await record_event(
        conn,
        memory_id=memory_id,
        event_type=EventType.SUPERSEDED,
        actor_id=actor_id,
        actor_type=actor_type,
        task_id=task_id,
        workflow_id=workflow_id,
        reason=reason,
        payload=_with_request_hash(
            {
                "outcome": outcome_dict(outcome),
                "old": str(old.id),
                "new": memory_id,
                "old_citation": old.citation,
                "explicit": True,
            },
            request_hash,
        ),
        idempotency_key=idempotency_key,
    )
    await mark_derived_stale(
        conn,
        str(old.id),
        cause="superseded",
        reason=reason,
        successor_id=memory_id,
        actor_id=actor_id,
        actor_type=actor_type,
        task_id=task_id,
    )
    return outcome


async def retire_memory(
    conn: AsyncConnection,
    memory_id: str,
    *,
    reason: str,
    actor_id: str,
    actor_type: str,
    idempotency_key: str | None = None,
    request_hash: str | None = None,
    workflow_id: str | None = None,
) -> None:
    """Deprecate an active memory without a successor (it was wrong or is no longer relevant), in the caller's
    transaction; NotFound or Conflict if it is not there or not active."""
    if await recorded_payload(conn, idempotency_key, request_hash) is not None:
        return
    await lock_scopes(conn, await scope_key_of(conn, memory_id))
    if not await retire_head(conn, memory_id, reason):
        raise await not_found_or_conflict(conn, memory_id, "retirement")
    await record_event(
        conn,
        memory_id=memory_id,
        event_type=EventType.RETIRED,
        actor_id=actor_id,
        actor_type=actor_type,
        workflow_id=workflow_id,
        reason=reason,
        payload=_with_request_hash({}, request_hash),
        idempotency_key=idempotency_key,
    )
    await mark_derived_stale(
        conn, memory_id, cause="retired", reason=reason, actor_id=actor_id, actor_type=actor_type
    )
