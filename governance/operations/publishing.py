"""Publish one candidate memory: lock, find neighbours, classify, then merge, supersede or insert.

Runs in the caller's transaction, so a promotion publishes its whole plan at once and a lift publishes
its copies with the rest of the lift. The decision is the pure rules' (`governance/dedup.py`, over
`governance/supersession.py`'s judge); the trust of a merge is `governance/trust.py`'s; a bug pattern
counts one more occurrence of its signature (`governance/bug_signature.py`). Every statement is
`governance/storage/`'s.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from governance.bug_signature import error_signature, failed_fixes, split_bug_pattern
from governance.dedup import BUG_PATTERN, Decision, DecisionKind, Neighbour, classify, content_hash
from governance.errors import Conflict, InvalidInput
from governance.scopes import ValidationSource
from governance.storage.bug_patterns import record_occurrence
from governance.storage.derivations import mark_derived_stale
from governance.storage.events import EventType, record_event, recorded_payload
from governance.storage.memory_rows import (
    NewMemory,
    PublishOutcome,
    deprecate_head,
    insert_memory,
    lock_scopes,
    merge_into,
    outcome_dict,
    replay_outcome,
    wider_scope_keys,
)
from governance.storage.publish import expire_in_scope, find_neighbours, lock_for_publication
from governance.supersession import ContradictionJudge
from governance.trust import VALIDATION_BOOSTS

__all__ = ["lock_for_publication", "publish_candidate"]


async def publish_candidate(
    conn: AsyncConnection,
    mem: NewMemory,
    *,
    visible_scope_keys: list[str],
    actor_id: str,
    actor_type: str,
    task_id: str | None,
    workflow_id: str | None,
    idempotency_key: str,
    dup_threshold: float,
    related_threshold: float,
    judge: ContradictionJudge | None = None,
    locked: bool = False,
) -> PublishOutcome:
    """Publish one candidate: merge into a duplicate, supersede a contradicted head, or insert it new.

    Runs inside the caller's transaction; idempotent on `idempotency_key` (a replay writes nothing). `locked`:
    the transaction already ran `lock_for_publication` for this scope key (a whole plan publishing).
    """
    recorded = await recorded_payload(conn, idempotency_key)
    if recorded is not None:
        return replay_outcome(recorded)
    if mem.scope_key not in visible_scope_keys:
        raise InvalidInput(f"scope key {mem.scope_key!r} is not among the visible scope keys")
    wider = wider_scope_keys(mem.scope, visible_scope_keys, mem.scope_key)
    if not locked:
        await lock_scopes(conn, mem.scope_key, wider)
        # a concurrent attempt with the same key may have committed while we waited for the lock
        recorded = await recorded_payload(conn, idempotency_key)
        if recorded is not None:
            return replay_outcome(recorded)
        await expire_in_scope(conn, mem.scope_key)

    chash = content_hash(mem.content)
    neighbours = await find_neighbours(
        conn,
        scope_keys=[mem.scope_key, *wider],
        target_scope_key=mem.scope_key,
        content_hash=chash,
        canonical_key=mem.canonical_key,
        embedding=mem.embedding,
    )

    def decide() -> Decision:
        return classify(
            content=mem.content,
            content_hash=chash,
            canonical_key=mem.canonical_key,
            neighbours=neighbours,
            dup_threshold=dup_threshold,
            related_threshold=related_threshold,
            judge=judge,
            scope_key=mem.scope_key,
            memory_type=mem.memory_type,
        )

    # an LLM judge blocks on the network: keep the event loop free (the locks are held meanwhile)
    decision = await asyncio.to_thread(decide) if judge is not None and judge.blocking else decide()
    common: dict[str, Any] = {
        "actor_id": actor_id,
        "actor_type": actor_type,
        "task_id": task_id,
        "workflow_id": workflow_id,
    }
    target = next((n for n in neighbours if n.id == decision.target_id), None)
    if decision.kind is DecisionKind.DUPLICATE and target is not None:
        outcome, event = await _merge(conn, mem, decision, target, chash)
    else:
        outcome, event = await _insert(
            conn, mem, decision, target if decision.kind is DecisionKind.SUPERSEDE else None, chash
        )
    await record_event(conn, idempotency_key=idempotency_key, **event, **common)
    if outcome.superseded_id is not None:
        await mark_derived_stale(
            conn,
            outcome.superseded_id,
            cause="superseded",
            reason=decision.reason,
            successor_id=outcome.memory_id,
            **common,
        )
    if mem.memory_type == BUG_PATTERN:
        # one more occurrence of its signature, with the fix tried
        error, fix = split_bug_pattern(mem.content)
        await record_occurrence(
            conn,
            memory_id=outcome.memory_id,
            scope_key=mem.scope_key,
            signature=error_signature(error),
            solution=fix,
            failed=failed_fixes(mem.content),
            # bug patterns come from verified tasks (cognify); an unknown outcome is not a success
            succeeded=mem.success is True,
        )
    return outcome


async def _merge(
    conn: AsyncConnection, mem: NewMemory, decision: Decision, target: Neighbour, chash: str
) -> tuple[PublishOutcome, dict[str, Any]]:
    """Merge into the duplicate `target` (its trust boosted as a repeated success): the outcome, its event."""
    row = await merge_into(
        conn,
        target.id,
        boost=VALIDATION_BOOSTS[ValidationSource.REPEATED_SUCCESS],
        source_task_ids=mem.source_task_ids,
        source_entry_ids=mem.source_entry_ids,
        approved=mem.validation_source == "human_approved",
    )
    if row is None:
        raise Conflict(f"memory {target.id} was deprecated while merging; retry the publication")
    outcome = PublishOutcome(target.id, row.citation, "merged")
    return outcome, {
        "memory_id": target.id,
        "event_type": EventType.MERGED,
        "reason": decision.reason,
        "payload": {
            "outcome": outcome_dict(outcome),
            "duplicate_of": target.id,
            # the merged candidate's own wording is kept with the memory it joined (its history shows it)
            "candidate": {
                "title": mem.title,
                "content": mem.content,
                "content_hash": chash,
                "scope_key": mem.scope_key,
                "source_task_ids": list(mem.source_task_ids),
                "source_entry_ids": list(mem.source_entry_ids),
            },
            "similarity": decision.similarity,
            "confidence": row.confidence,
        },
    }


async def _insert(
    conn: AsyncConnection, mem: NewMemory, decision: Decision, superseded: Neighbour | None, chash: str
) -> tuple[PublishOutcome, dict[str, Any]]:
    """Insert the candidate as a new memory, superseding the contradicted head `superseded` if any."""
    old = None
    if superseded is not None:
        old = await deprecate_head(
            conn, superseded.id, note=decision.reason, valid_to_commit=mem.valid_from_commit
        )
        if old is None:
            raise Conflict(
                f"memory {superseded.id} is no longer the head of its chain; retry the publication"
            )
    memory_id = str(uuid.uuid4())
    citation = await insert_memory(
        conn,
        mem,
        memory_id=memory_id,
        chash=chash,
        supersedes_id=superseded.id if superseded is not None else None,
        canonical_key=mem.canonical_key if old is None else (mem.canonical_key or old.canonical_key),
        version=old.version + 1 if old is not None else 1,
        related_ids=decision.related_ids if superseded is None else (),
    )
    if superseded is None or old is None:
        outcome = PublishOutcome(memory_id, citation, "promoted")
        payload = {
            "outcome": outcome_dict(outcome),
            "related_ids": list(decision.related_ids),
            "scope_key": mem.scope_key,
            "source_entry_ids": list(mem.source_entry_ids),
        }
        return outcome, {
            "memory_id": memory_id,
            "event_type": EventType.PROMOTED,
            "reason": decision.reason,
            "payload": payload,
        }
    outcome = PublishOutcome(memory_id, citation, "superseded", superseded_id=superseded.id)
    return outcome, {
        "memory_id": memory_id,
        "event_type": EventType.SUPERSEDED,
        "reason": decision.reason,
        "payload": {
            "outcome": outcome_dict(outcome),
            "old": superseded.id,
            "new": memory_id,
            "old_citation": old.citation,
            "similarity": decision.similarity,
        },
    }
