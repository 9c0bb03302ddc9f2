"""Changes to a published memory after publication: trust boosts, feedback, supersession, retirement, history.

Each is one SQL statement with its event (feedback: a few under the memory's row lock) in the caller's
transaction; see governance/storage/memory_rows.py. Supersession is composed by
governance/operations/changes.py.
Trust cannot be spammed: a principal's validation of a memory counts once per source (`memory_validations`),
and its feedback is one vote, its latest (`memory_votes`), from which usefulness is computed.
A `request_hash` binds an idempotency key (`idempotency_key`, kept in the event's `idempotency_key` column) to
its request: the same key with another request is a Conflict (events.recorded_payload).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.errors import NotFound
from governance.redaction import redact_free_text
from governance.scopes import ActorType, ValidationSource
from governance.storage.events import REQUEST_HASH, EventType, record_event, recorded_payload
from governance.storage.memory_rows import (
    MemoryTenant,
    MemoryVersion,
    not_found_or_conflict,
    resolve_memory_id,
)
from governance.trust import (
    INDEPENDENT_CONFIRMATIONS,
    MAX_CONFIDENCE,
    MIN_CONFIDENCE,
    PRIOR_VOTES,
    UNREVIEWED_CEILING,
    USEFULNESS_PRIOR,
    VALIDATION_BOOSTS,
)

__all__ = [
    "MemoryTenant",
    "Validation",
    "memory_tenant",
    "boost_memory",
    "record_feedback",
    "retire_head",
    "memory_history",
]


async def memory_tenant(conn: AsyncConnection, ref: str) -> MemoryTenant:
    """The tenant and scope of the memory named by uuid or citation; NotFound otherwise."""
    memory_id = await resolve_memory_id(conn, ref)
    row = (
        await conn.execute(
            text(
                "SELECT id::text AS id, citation, org, project, scope "
                "FROM memories WHERE id = CAST(:i AS uuid)"
            ),
            {"i": memory_id},
        )
    ).first()
    if row is None:
        raise NotFound(f"memory {ref!r} does not exist")
    return MemoryTenant(row.id, row.citation, row.org, row.project, row.scope)


@dataclass(frozen=True)
class Validation:
    """A memory's confidence after a validation, and whether this validation moved it."""

    confidence: float
    counted: bool = True


def _payload(payload: dict[str, Any], request_hash: str | None) -> dict[str, Any]:
    return {**payload, REQUEST_HASH: request_hash} if request_hash is not None else payload


async def boost_memory(
    conn: AsyncConnection,
    memory_id: str,
    source: ValidationSource | str,
    *,
    actor_id: str,
    actor_type: str,
    task_id: str | None = None,
    workflow_id: str | None = None,
    reason: str | None = None,
    idempotency_key: str | None = None,
    request_hash: str | None = None,
) -> Validation:
    """Add the boost of `source` to an active memory (capped at 1.0), once per (memory, actor, source).

    The first validation of a memory by an actor with a source claims its row in `memory_validations` and
    boosts in the same statement, up to `trust.boost_ceiling`: a non-human's boost stops at the unreviewed
    ceiling (0.75) unless the memory is human-approved or `INDEPENDENT_CONFIRMATIONS` distinct principals
    have validated it; `human_approved` as the validation source is sticky (a later boost keeps it);
    concurrent boosts by different actors add up (`confidence + boost` on
    the locked row). The same actor validating again with the same source changes nothing: the answer is
    the current confidence with `counted=False`, and the event records the attempt. Concurrent repeats are
    serialised by the claim's primary key, so exactly one of them counts.
    """
    src = ValidationSource(source)
    recorded = await recorded_payload(conn, idempotency_key, request_hash)
    if recorded is not None:
        return Validation(float(recorded["confidence"]), bool(recorded.get("counted", True)))
    row = (
        await conn.execute(
            text(
                """
                WITH claim AS (
                    INSERT INTO memory_validations (memory_id, actor_id, source)
                    SELECT id, :actor, :source FROM memories
                    WHERE id = CAST(:id AS uuid) AND deprecated_at IS NULL
                    ON CONFLICT DO NOTHING
                    RETURNING memory_id
                ), confirmers AS (
                    SELECT count(DISTINCT actor_id) + 1 AS n FROM memory_validations
                    WHERE memory_id = CAST(:id AS uuid) AND actor_id <> :actor
                ), ceiling AS (
                    SELECT CASE WHEN :human OR m.validation_source = 'human_approved'
                                     OR (SELECT n FROM confirmers) >= :confirmations
                                THEN CAST(:max AS double precision)
                                ELSE GREATEST(m.confidence, :ceiling) END AS value
                    FROM memories m WHERE m.id = CAST(:id AS uuid)
                ), boosted AS (
                    UPDATE memories SET
                        confidence = LEAST(:max, (SELECT value FROM ceiling),
                                           GREATEST(:min, confidence + :boost)),
                        base_confidence = LEAST(:max, (SELECT value FROM ceiling),
                                                GREATEST(:min, confidence + :boost)),
                        validation_source = CASE WHEN validation_source = 'human_approved'
                                                 THEN validation_source ELSE CAST(:source AS text) END,
                        validation_count = validation_count + 1,
                        last_validated_at = now(), updated_at = now()
                    WHERE id IN (SELECT memory_id FROM claim) AND deprecated_at IS NULL
                    RETURNING confidence
                )
                SELECT EXISTS (SELECT 1 FROM claim) AS claimed, (SELECT confidence FROM boosted) AS confidence
                """
            ),
            {
                "id": memory_id,
                "actor": actor_id,
                "boost": VALIDATION_BOOSTS[src],
                "source": src.value,
                "max": MAX_CONFIDENCE,
                "min": MIN_CONFIDENCE,
                "human": actor_type == ActorType.HUMAN.value,
                "ceiling": UNREVIEWED_CEILING,
                "confirmations": INDEPENDENT_CONFIRMATIONS,
            },
        )
    ).one()
    if row.claimed and row.confidence is not None:
        outcome = Validation(float(row.confidence), counted=True)
    elif row.claimed:  # retired between the claim and the boost: the transaction is undone
        raise await not_found_or_conflict(conn, memory_id, "validation")
    else:  # counted before (or the memory is gone or deprecated)
        current = (
            await conn.execute(
                text(
                    "SELECT confidence FROM memories WHERE id = CAST(:id AS uuid) AND deprecated_at IS NULL"
                ),
                {"id": memory_id},
            )
        ).first()
        if current is None:
            raise await not_found_or_conflict(conn, memory_id, "validation")
        outcome = Validation(float(current.confidence), counted=False)
    await record_event(
        conn,
        memory_id=memory_id,
        event_type=EventType.BOOSTED,
        actor_id=actor_id,
        actor_type=actor_type,
        task_id=task_id,
        workflow_id=workflow_id,
        reason=reason,
        payload=_payload(
            {
                "source": src.value,
                "boost": VALIDATION_BOOSTS[src] if outcome.counted else 0.0,
                "confidence": outcome.confidence,
                "counted": outcome.counted,
            },
            request_hash,
        ),
        idempotency_key=idempotency_key,
    )
    return outcome


async def record_feedback(
    conn: AsyncConnection,
    memory_id: str,
    helpful: bool,
    *,
    actor_id: str,
    actor_type: str,
    task_id: str | None = None,
    idempotency_key: str | None = None,
    request_hash: str | None = None,
) -> float:
    """Record `actor_id`'s vote on a memory and return its usefulness, computed from the votes.

    One vote per principal per memory, the latest counts: a new or changed vote replaces the principal's
    earlier one in `memory_votes`, and usefulness becomes `trust.usefulness_from_votes` over the latest
    vote of every principal (a smoothed mean whose first vote moves it as one EMA step did). Repeating a
    vote changes nothing, not even the memory's `updated_at` (its recency).
    The memory's row is locked first, so votes on one memory are serialised: each later statement sees
    every vote committed before it, and parallel voters all count (no read-modify-write race).
    """
    recorded = await recorded_payload(conn, idempotency_key, request_hash)
    if recorded is not None:
        return float(recorded["usefulness"])
    locked = (
        await conn.execute(
            text("SELECT usefulness FROM memories WHERE id = CAST(:id AS uuid) FOR UPDATE"), {"id": memory_id}
        )
    ).first()
    if locked is None:
        raise NotFound(f"memory {memory_id} does not exist")
    vote = (
        await conn.execute(
            text(
                """
                WITH previous AS (
                    SELECT helpful FROM memory_votes WHERE memory_id = CAST(:id AS uuid) AND actor_id = :actor
                ), vote AS (
                    INSERT INTO memory_votes (memory_id, actor_id, helpful)
                    VALUES (CAST(:id AS uuid), :actor, :h)
                    ON CONFLICT (memory_id, actor_id)
                    DO UPDATE SET helpful = EXCLUDED.helpful, updated_at = now()
                    WHERE memory_votes.helpful IS DISTINCT FROM EXCLUDED.helpful
                    RETURNING helpful
                )
                SELECT (SELECT helpful FROM previous) AS previous, EXISTS (SELECT 1 FROM vote) AS changed
                """
            ),
            {"id": memory_id, "actor": actor_id, "h": helpful},
        )
    ).one()
    if vote.changed:
        row = (
            await conn.execute(
                text(
                    """
                    UPDATE memories SET usefulness = (:w * :prior + v.helpful) / (:w + v.votes),
                                        updated_at = now()
                    FROM (
                        SELECT count(*) FILTER (WHERE helpful) AS helpful, count(*) AS votes
                        FROM memory_votes WHERE memory_id = CAST(:id AS uuid)
                    ) v
                    WHERE id = CAST(:id AS uuid)
                    RETURNING usefulness
                    """
                ),
                {"id": memory_id, "w": PRIOR_VOTES, "prior": USEFULNESS_PRIOR},
            )
        ).one()
        usefulness = float(row.usefulness)
    else:
        usefulness = float(locked.usefulness)
    await record_event(
        conn,
        memory_id=memory_id,
        event_type=EventType.FEEDBACK,
        actor_id=actor_id,
        actor_type=actor_type,
        task_id=task_id,
        payload=_payload(
            {
                "helpful": helpful,
                "previous": vote.previous,
                "counted": vote.changed,
                "usefulness": usefulness,
            },
            request_hash,
        ),
        idempotency_key=idempotency_key,
    )
    return usefulness


async def retire_head(conn: AsyncConnection, memory_id: str, reason: str) -> bool:
    """Deprecate an active memory without a successor; False where it is not active (or not there)."""
    row = (
        await conn.execute(
            text(
                """
                UPDATE memories SET deprecated_at = now(), contradiction_note = :reason, updated_at = now()
                WHERE id = CAST(:id AS uuid) AND deprecated_at IS NULL
                RETURNING id
                """
            ),
            {"id": memory_id, "reason": redact_free_text(reason)},
        )
    ).first()
    return row is not None


async def memory_history(conn: AsyncConnection, memory_id: str) -> list[MemoryVersion]:
    """The whole supersession chain through `memory_id`, oldest first."""
    rows = await conn.execute(
        text(
            """
            WITH RECURSIVE back AS (
                SELECT m.id, m.supersedes_id, 0 AS depth FROM memories m WHERE m.id = CAST(:id AS uuid)
                UNION ALL
                SELECT p.id, p.supersedes_id,
                    b.depth - 1 FROM memories p JOIN back b ON p.id = b.supersedes_id
            ), fwd AS (
                SELECT m.id, 0 AS depth FROM memories m WHERE m.id = CAST(:id AS uuid)
                UNION ALL
                SELECT n.id, f.depth + 1 FROM memories n JOIN fwd f ON n.supersedes_id = f.id
            ), chain AS (
                SELECT id, depth FROM back UNION SELECT id, depth FROM fwd
            )
            SELECT m.*, c.depth FROM chain c JOIN memories m ON m.id = c.id ORDER BY c.depth
            """
        ),
        {"id": memory_id},
    )
    chain = [
        MemoryVersion(
            id=str(r.id),
            citation=r.citation,
            version=r.version,
            title=r.title,
            content=r.content,
            canonical_key=r.canonical_key,
            scope_key=r.scope_key,
            confidence=r.confidence,
            supersedes_id=str(r.supersedes_id) if r.supersedes_id else None,
            deprecated_at=r.deprecated_at,
            valid_from_commit=r.valid_from_commit,
            valid_to_commit=r.valid_to_commit,
            contradiction_note=r.contradiction_note,
            created_at=r.created_at,
        )
        for r in rows
    ]
    if not chain:
        raise NotFound(f"memory {memory_id} not found")
    return chain
