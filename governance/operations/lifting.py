"""Apply a lift: copies of memories published at a wider scope, the originals marked lifted.

`apply_lift` runs in the caller's transaction, for the workflow once a lift is approved and for the gateway
when none is needed (one apply path, through governance/operations/changes.py):

1. lock the target scope (exclusive; the wider ones shared) and then the originals' scopes (exclusive),
   widest first like every publisher, so concurrent lifts, promotions and supersessions queue instead of
   racing, and two lifts of one memory never publish two heads for one fact;
2. re-check every original is still active (else nothing is applied: the request ends `conflict`);
3. publish each copy through `publish_candidate` (dedup, supersession of the target's head for the same
   canonical key); link a new copy to its original and to what the original builds on
   (`memory_derivations`), so it goes stale with them (a stale mark stays); a bug pattern's copy takes over
   its occurrences and fix statistics (one merged into a pattern already there counts as one more
   occurrence); move the links of what was derived from the original to what it became; mark the original
   lifted (deprecated, a note naming the copy) and write a LIFTED event at both memories.

Every write is keyed by the request (`lift:<request>:<position>`), so a retried activity changes nothing.
See governance/lifting.py for the rules (targets, trust, what the copy carries).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from governance.changes import ChangeTrust
from governance.lifting import LiftOutcome, lifted_text, lifted_trust
from governance.operations.publishing import lock_for_publication, publish_candidate
from governance.scopes import SCOPE_LEVEL, Scope
from governance.storage.change_requests import ChangeRequest
from governance.storage.derivations import record_derivations
from governance.storage.events import EventType, record_event
from governance.storage.lifting import (
    LiftItem,
    Original,
    carry_bug_statistics,
    carry_derived,
    carry_sources,
    lift_items,
    mark_lifted,
    originals,
    record_item_outcome,
)
from governance.storage.memory_rows import NewMemory, lock_scopes

__all__ = ["LiftRules", "LiftApplied", "line_above", "apply_lift"]


@dataclass(frozen=True)
class LiftRules:
    """The dedup thresholds a lift's publish uses (the promotion's, from settings)."""

    dup_threshold: float
    related_threshold: float


@dataclass(frozen=True)
class LiftApplied:
    """`applied` with the items' outcomes, or `conflict` (nothing changed) with the reason."""

    state: str
    reason: str
    items: list[LiftItem]


def line_above(target_scope: str, org: str, project: str | None) -> list[str]:
    """The scope keys wider than a lift's target (what its dedup also looks at, and locks shared)."""
    level = SCOPE_LEVEL[Scope(target_scope)]
    keys = []
    if level < SCOPE_LEVEL[Scope.PROJECT] and project:
        keys.append(f"project:{org}/{project}")
    if level < SCOPE_LEVEL[Scope.ORG]:
        keys.append(f"org:{org}")
    return keys


_OUTCOME = {
    "promoted": LiftOutcome.LIFTED,
    "merged": LiftOutcome.DUPLICATE,
    "superseded": LiftOutcome.SUPERSEDED,
}


def _level(key: str) -> int:
    return SCOPE_LEVEL[Scope(key.split(":", 1)[0])]


async def apply_lift(
    conn: AsyncConnection,
    request: ChangeRequest,
    *,
    approval: ChangeTrust | None,
    workflow_id: str | None,
    rules: LiftRules,
) -> LiftApplied:
    """Publish the lift's copies at the target scope and mark the originals lifted (module docstring).

    The request's `scope`, `project` and `target_scope_key` are the target's (`project` None at org
    scope); `approval` says whose word stands behind the copies (None: no approval was needed, the copies
    keep the originals' trust).
    """
    assert request.target_scope is not None and request.target_scope_key is not None
    items = await lift_items(conn, request.id)
    target_key = request.target_scope_key
    visible = [target_key, *line_above(request.target_scope, request.org, request.project)]
    await lock_for_publication(conn, request.target_scope, target_key, visible)
    found = await originals(conn, [i.memory_id for i in items])
    for key in sorted({o.scope_key for o in found.values()}, key=lambda k: (-_level(k), k)):
        await lock_scopes(conn, key)
    found = await originals(conn, [i.memory_id for i in items], lock=True)
    gone = [i for i in items if i.memory_id not in found or not found[i.memory_id].active]
    if gone:
        first = gone[0]
        return LiftApplied(
            "conflict",
            f"memory {first.citation or first.memory_id} ({first.title}) is no longer active (lifted, "
            "superseded, retired or expired meanwhile): nothing was lifted",
            items,
        )
    done: list[LiftItem] = []
    for item in items:
        done.append(
            await _lift_one(
                conn,
                request,
                item,
                found[item.memory_id],
                visible=visible,
                approval=approval,
                workflow_id=workflow_id,
                rules=rules,
            )
        )
    return LiftApplied("applied", request.reason, done)


async def _lift_one(
    conn: AsyncConnection,
    request: ChangeRequest,
    item: LiftItem,
    original: Original,
    *,
    visible: list[str],
    approval: ChangeTrust | None,
    workflow_id: str | None,
    rules: LiftRules,
) -> LiftItem:
    assert request.target_scope is not None and request.target_scope_key is not None
    request_id, target_scope_key = request.id, request.target_scope_key
    actor_id, actor_type, reason = request.requested_by, request.actor_type, request.reason
    row = original.row
    copy_text = lifted_text(row.title, row.content)
    confidence, source = lifted_trust(float(row.confidence), row.validation_source, approval)
    mem = NewMemory(
        memory_type=row.memory_type,
        scope=request.target_scope,
        scope_key=target_scope_key,
        org=row.org,
        project=request.project,
        title=copy_text.title,
        content=copy_text.content,
        confidence=confidence,
        canonical_key=row.canonical_key,
        # the same text (redaction of published text changes nothing unless its rules grew)
        embedding=list(row.embedding) if row.embedding is not None else None,
        validation_source=source,
        importance=float(row.importance),
        reward=row.reward,
        success=row.success,
        source_task_ids=list(row.source_task_ids or []),
        source_entry_ids=list(row.source_entry_ids or []),
        decay_policy=row.decay_policy,
        expires_at=row.expires_at,
        valid_from_commit=row.valid_from_commit,
    )
    key = f"lift:{request_id}:{item.position}"
    published = await publish_candidate(
        conn,
        mem,
        visible_scope_keys=visible,
        actor_id=actor_id,
        actor_type=actor_type,
        task_id=None,
        workflow_id=workflow_id,
        idempotency_key=key,
        dup_threshold=rules.dup_threshold,
        related_threshold=rules.related_threshold,
        locked=True,
    )
    outcome = _OUTCOME[published.action]
    original_id, result_id = str(row.id), published.memory_id
    if outcome is not LiftOutcome.DUPLICATE:  # a new memory: it comes from the original
        await record_derivations(conn, [(result_id, original_id)], task_id=None)
        await carry_sources(conn, original_id, result_id)
        await carry_bug_statistics(conn, original_id, result_id)
    # what built on the original builds on what it became
    await carry_derived(conn, original_id, result_id)
    note = f"lifted to {target_scope_key} as mem:{published.citation} ({outcome.value})"
    await mark_lifted(conn, original_id, note)
    common: dict[str, Any] = {"actor_id": actor_id, "actor_type": actor_type, "workflow_id": workflow_id}
    payload = {
        "change_request": request_id,
        "outcome": outcome.value,
        "from": original_id,
        "from_citation": row.citation,
        "from_scope_key": row.scope_key,
        "to": result_id,
        "to_citation": published.citation,
        "to_scope_key": target_scope_key,
    }
    await record_event(
        conn,
        memory_id=original_id,
        event_type=EventType.LIFTED,
        reason=reason,
        payload=payload,
        idempotency_key=f"{key}:from",
        **common,
    )
    await record_event(
        conn,
        memory_id=result_id,
        event_type=EventType.LIFTED,
        reason=reason,
        payload=payload,
        idempotency_key=f"{key}:to",
        **common,
    )
    await record_item_outcome(conn, request_id, item.position, outcome.value, result_id)
    return LiftItem(
        item.position, item.memory_id, item.citation, item.title, outcome.value, result_id, published.citation
    )
