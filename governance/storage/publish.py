"""Publishing one candidate memory: lock, find neighbours, classify, then merge, supersede or insert.

See governance/storage/lifecycle.py for the concurrency design (advisory locks, unique indexes).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.bug_signature import error_signature, failed_fixes, split_bug_pattern
from governance.dedup import BUG_PATTERN, Decision, DecisionKind, Neighbour, classify, content_hash
from governance.errors import Conflict, InvalidInput
from governance.scopes import ValidationSource
from governance.storage.bug_patterns import record_occurrence
from governance.storage.derivations import mark_derived_stale
from governance.storage.events import EventType, record_event, recorded_payload
from governance.storage.memory_rows import (
    NEIGHBOURS_K,
    NewMemory,
    PublishOutcome,
    expire_in_scope,
    insert_memory,
    lock_scopes,
    outcome_dict,
    replay_outcome,
    vector_literal,
    wider_scope_keys,
)
from governance.supersession import ContradictionJudge
from governance.trust import MAX_CONFIDENCE, MIN_CONFIDENCE, VALIDATION_BOOSTS

__all__ = ["find_neighbours", "lock_for_publication", "publish_candidate"]


async def find_neighbours(
    conn: AsyncConnection,
    *,
    scope_keys: Sequence[str],
    target_scope_key: str,
    content_hash: str,
    canonical_key: str | None,
    embedding: Sequence[float] | None,
    k: int = NEIGHBOURS_K,
) -> list[Neighbour]:
    """Active memories of `scope_keys` with the same hash, the canonical-key head, and the k nearest.

    The nearest are searched exactly within the visible scopes (a materialised CTE): pgvector 0.6's HNSW
    filters after the index scan and could miss a duplicate when other scopes dominate the index; a
    reader's visible set is small enough for an exact scan and dedup must not miss.
    """
    rows = await conn.execute(
        text(
            """
            WITH visible AS MATERIALIZED (
                SELECT id, scope_key, canonical_key, content_hash, title, content, embedding, memory_type
                FROM memories
                WHERE scope_key = ANY(:keys) AND deprecated_at IS NULL
                  AND (expires_at IS NULL OR expires_at > now())
            ),
            scored AS (
                SELECT id::text AS id, scope_key, canonical_key, content_hash, title, content, memory_type,
                       CASE WHEN embedding IS NULL OR CAST(:emb AS vector) IS NULL THEN 0.0
                            ELSE 1 - (embedding <=> CAST(:emb AS vector)) END AS similarity
                FROM visible
            )
            (SELECT * FROM scored
              WHERE content_hash = :hash OR (canonical_key = :ck AND scope_key = :target))
            UNION
            (SELECT * FROM scored WHERE CAST(:emb AS vector) IS NOT NULL
              ORDER BY similarity DESC LIMIT :k)
            """
        ),
        {
            "keys": list(scope_keys),
            "emb": vector_literal(embedding),
            "hash": content_hash,
            "ck": canonical_key,
            "target": target_scope_key,
            "k": k,
        },
    )
    return [
        Neighbour(
            id=r.id,
            scope_key=r.scope_key,
            canonical_key=r.canonical_key,
            content_hash=r.content_hash,
            similarity=float(r.similarity),
            title=r.title,
            content=r.content,
            memory_type=r.memory_type,
        )
        for r in rows
    ]


async def lock_for_publication(
    conn: AsyncConnection, scope: str, scope_key: str, visible_scope_keys: list[str]
) -> None:
    """What `publish_candidate` does before each candidate, done once for a transaction publishing many.

    Lock the target scope (exclusive) and the wider visible ones (shared), and expire the target scope's
    memories whose time passed. Both hold for the rest of the transaction (advisory locks until commit,
    `now()` is the transaction's start), so `publish_candidate(..., locked=True)` need not repeat them.
    """
    await lock_scopes(conn, scope_key, wider_scope_keys(scope, visible_scope_keys, scope_key))
    await expire_in_scope(conn, scope_key)


async def publish_candidate(
    conn: AsyncConnection,
    mem: NewMemory,
    *,
    visible_scope_keys: list[str],
    actor_id: str,
    actor_type: str,
    task_id: str | None,
    workflow_id: str | None,
    dedupe_key: str,
    dup_threshold: float,
    related_threshold: float,
    judge: ContradictionJudge | None = None,
    locked: bool = False,
) -> PublishOutcome:
    """Publish one candidate: merge into a duplicate, supersede a contradicted head, or insert it new.

    Runs inside the caller's transaction; idempotent on `dedupe_key` (a replay writes nothing). `locked`:
    the transaction already ran `lock_for_publication` for this scope key (a whole plan publishing).
    """
    recorded = await recorded_payload(conn, dedupe_key)
    if recorded is not None:
        return replay_outcome(recorded)
    if mem.scope_key not in visible_scope_keys:
        raise InvalidInput(f"scope key {mem.scope_key!r} is not among the visible scope keys")
    wider = wider_scope_keys(mem.scope, visible_scope_keys, mem.scope_key)
    if not locked:
        await lock_scopes(conn, mem.scope_key, wider)
        # a concurrent attempt with the same key may have committed while we waited for the lock
        recorded = await recorded_payload(conn, dedupe_key)
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
    by_id = {n.id: n for n in neighbours}

    if decision.kind is DecisionKind.DUPLICATE and decision.target_id is not None:
        merged = await _merge(conn, mem, decision, by_id[decision.target_id], chash, dedupe_key, common)
        await _count_bug_occurrence(conn, mem, merged.memory_id)
        return merged
    if decision.kind is DecisionKind.SUPERSEDE and decision.target_id is not None:
        superseding = await _supersede_by_publish(
            conn, mem, decision, by_id[decision.target_id], chash, dedupe_key, common
        )
        await _count_bug_occurrence(conn, mem, superseding.memory_id)
        return superseding

    memory_id = str(uuid.uuid4())
    citation = await insert_memory(
        conn,
        mem,
        memory_id=memory_id,
        chash=chash,
        supersedes_id=None,
        canonical_key=mem.canonical_key,
        version=1,
        related_ids=decision.related_ids,
    )
    outcome = PublishOutcome(memory_id, citation, "promoted")
    await record_event(
        conn,
        memory_id=memory_id,
        event_type=EventType.PROMOTED,
        reason=decision.reason,
        payload={
            "outcome": outcome_dict(outcome),
            "related_ids": list(decision.related_ids),
            "scope_key": mem.scope_key,
            "source_entry_ids": list(mem.source_entry_ids),
        },
        dedupe_key=dedupe_key,
        **common,
    )
    await _count_bug_occurrence(conn, mem, memory_id)
    return outcome


async def _count_bug_occurrence(conn: AsyncConnection, mem: NewMemory, memory_id: str) -> None:
    """A bug pattern published or merged: one more occurrence of its signature, with the fix tried."""
    if mem.memory_type != BUG_PATTERN:
        return
    error, fix = split_bug_pattern(mem.content)
    await record_occurrence(
        conn,
        memory_id=memory_id,
        scope_key=mem.scope_key,
        signature=error_signature(error),
        solution=fix,
        failed=failed_fixes(mem.content),
        # bug patterns come from verified tasks (cognify); an unknown outcome is not a success
        succeeded=mem.success is True,
    )


async def _merge(
    conn: AsyncConnection,
    mem: NewMemory,
    decision: Decision,
    target: Neighbour,
    chash: str,
    dedupe_key: str,
    common: dict[str, Any],
) -> PublishOutcome:
    boost = VALIDATION_BOOSTS[ValidationSource.REPEATED_SUCCESS]
    row = (
        await conn.execute(
            text(
                """
                UPDATE memories SET
                    confidence = LEAST(:max, GREATEST(:min, confidence + :boost)),
                    base_confidence = LEAST(:max, GREATEST(:min, confidence + :boost)),
                    validation_source = 'repeated_success',
                    validation_count = validation_count + 1,
                    last_validated_at = now(),
                    source_task_ids = ARRAY(SELECT DISTINCT unnest(source_task_ids || CAST(:tasks AS text[]))
                                            ORDER BY 1),
                    source_entry_ids = ARRAY(SELECT DISTINCT unnest(source_entry_ids || CAST(:entries AS
                        bigint[]))
                                             ORDER BY 1),
                    updated_at = now()
                WHERE id = CAST(:id AS uuid) AND deprecated_at IS NULL
                RETURNING citation, confidence
                """
            ),
            {
                "id": target.id,
                "boost": boost,
                "max": MAX_CONFIDENCE,
                "min": MIN_CONFIDENCE,
                "tasks": list(mem.source_task_ids),
                "entries": list(mem.source_entry_ids),
            },
        )
    ).first()
    if row is None:
        raise Conflict(f"memory {target.id} was deprecated while merging; retry the publication")
    outcome = PublishOutcome(target.id, row.citation, "merged")
    await record_event(
        conn,
        memory_id=target.id,
        event_type=EventType.MERGED,
        reason=decision.reason,
        payload={
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
        dedupe_key=dedupe_key,
        **common,
    )
    return outcome


async def _deprecate_head(
    conn: AsyncConnection, old_id: str, *, note: str, valid_to_commit: str | None
) -> Any:
    return (
        await conn.execute(
            text(
                """
                UPDATE memories SET deprecated_at = now(), valid_to_commit = :commit,
                       contradiction_note = :note, updated_at = now()
                WHERE id = CAST(:id AS uuid) AND deprecated_at IS NULL
                RETURNING citation, version, canonical_key
                """
            ),
            {"id": old_id, "commit": valid_to_commit, "note": note},
        )
    ).first()


async def _supersede_by_publish(
    conn: AsyncConnection,
    mem: NewMemory,
    decision: Decision,
    target: Neighbour,
    chash: str,
    dedupe_key: str,
    common: dict[str, Any],
) -> PublishOutcome:
    old = await _deprecate_head(conn, target.id, note=decision.reason, valid_to_commit=mem.valid_from_commit)
    if old is None:
        raise Conflict(f"memory {target.id} is no longer the head of its chain; retry the publication")
    memory_id = str(uuid.uuid4())
    citation = await insert_memory(
        conn,
        mem,
        memory_id=memory_id,
        chash=chash,
        supersedes_id=target.id,
        canonical_key=mem.canonical_key or old.canonical_key,
        version=old.version + 1,
        related_ids=(),
    )
    outcome = PublishOutcome(memory_id, citation, "superseded", superseded_id=target.id)
    await record_event(
        conn,
        memory_id=memory_id,
        event_type=EventType.SUPERSEDED,
        reason=decision.reason,
        payload={
            "outcome": outcome_dict(outcome),
            "old": target.id,
            "new": memory_id,
            "old_citation": old.citation,
            "similarity": decision.similarity,
        },
        dedupe_key=dedupe_key,
        **common,
    )
    await mark_derived_stale(
        conn, target.id, cause="superseded", reason=decision.reason, successor_id=memory_id, **common
    )
    return outcome
