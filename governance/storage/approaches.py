"""Storage of circular-fix detection: attempts per task/subtask, refusals, and the stuck mark.

Every write is one atomic statement (upserts count attempts and refusals in SQL), so parallel agents of
one task never lose a count. A retried activity passes an idempotency key: the attempt or refusal is
recorded with an event carrying it (`memory_events.dedupe_key`), and a replay counts nothing twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.approaches import (
    ApproachCheck,
    ApproachOutcome,
    PastApproach,
    approach_fingerprint,
    check_approach,
)
from governance.errors import InvalidInput, NotFound
from governance.storage.events import EventType, record_event
from governance.storage.memory_rows import vector_literal

__all__ = ["CheckAnswer", "record_attempt", "check_proposal", "stuck_subtasks"]


@dataclass(frozen=True)
class CheckAnswer:
    """The check's decision plus the subtask's refusal count and stuck mark."""

    check: ApproachCheck
    refusals: int
    stuck: bool


async def _ensure_task(conn: AsyncConnection, task_id: str) -> None:
    if (await conn.execute(text("SELECT 1 FROM tasks WHERE id = :t"), {"t": task_id})).first() is None:
        raise NotFound(f"task {task_id!r} not found")


async def _seen(conn: AsyncConnection, key: str | None) -> bool:
    if key is None:
        return False
    return (
        await conn.execute(text("SELECT 1 FROM memory_events WHERE dedupe_key = :k"), {"k": key})
    ).first() is not None


async def record_attempt(
    conn: AsyncConnection,
    *,
    task_id: str,
    subtask: str,
    approach: str,
    outcome: ApproachOutcome | str,
    reason: str | None,
    embedding: Sequence[float] | None,
    actor_id: str,
    actor_type: str,
    idempotency_key: str | None = None,
) -> PastApproach:
    """Count one attempt of `approach` with its outcome; failures keep their reason."""
    result = ApproachOutcome(outcome)
    if not approach.strip():
        raise InvalidInput("the approach is empty")
    await _ensure_task(conn, task_id)
    fingerprint = approach_fingerprint(approach)
    failed = result is ApproachOutcome.FAILED
    if not await _seen(conn, idempotency_key):
        await conn.execute(
            text(
                """
                INSERT INTO approaches (task_id, subtask, fingerprint, text, embedding, attempts, failures,
                                        last_outcome, failure_reasons, last_attempt_at)
                VALUES (:t, :s, :f, :text, CAST(:emb AS vector), 1, :fail, :outcome,
                        CASE WHEN :failed THEN jsonb_build_array(CAST(:reason AS text)) ELSE '[]'::jsonb
                            END, now())
                ON CONFLICT (task_id, subtask, fingerprint) DO UPDATE SET
                    attempts = approaches.attempts + 1,
                    failures = approaches.failures + EXCLUDED.failures,
                    last_outcome = EXCLUDED.last_outcome,
                    failure_reasons = approaches.failure_reasons || EXCLUDED.failure_reasons,
                    embedding = COALESCE(approaches.embedding, EXCLUDED.embedding),
                    last_attempt_at = now()
                """
            ),
            {
                "t": task_id,
                "s": subtask,
                "f": fingerprint,
                "text": approach,
                "emb": vector_literal(embedding),
                "fail": 1 if failed else 0,
                "failed": failed,
                "outcome": result.value,
                "reason": reason or "no reason given",
            },
        )
        await record_event(
            conn,
            memory_id=None,
            event_type=EventType.APPROACH,
            actor_id=actor_id,
            actor_type=actor_type,
            task_id=task_id,
            reason=reason,
            dedupe_key=idempotency_key,
            payload={
                "subtask": subtask,
                "approach": approach,
                "fingerprint": fingerprint,
                "outcome": result.value,
            },
        )
    row = (
        await conn.execute(
            text("SELECT * FROM approaches WHERE task_id = :t AND subtask = :s AND fingerprint = :f"),
            {"t": task_id, "s": subtask, "f": fingerprint},
        )
    ).one()
    return _past(row, None)


def _past(r: Any, similarity: float | None) -> PastApproach:
    return PastApproach(
        approach=r.text,
        fingerprint=r.fingerprint,
        attempts=r.attempts,
        failures=r.failures,
        last_outcome=r.last_outcome,
        failure_reasons=tuple(r.failure_reasons or ()),
        last_attempt_at=r.last_attempt_at,
        similarity=similarity,
    )


async def check_proposal(
    conn: AsyncConnection,
    *,
    task_id: str,
    subtask: str,
    approach: str,
    embedding: Sequence[float] | None,
    similarity_threshold: float,
    refusals_before_stuck: int,
    actor_id: str,
    actor_type: str,
    idempotency_key: str | None = None,
) -> CheckAnswer:
    """Check a proposal against the failed approaches of this task/subtask; count refusals, mark stuck."""
    if not approach.strip():
        raise InvalidInput("the approach is empty")
    await _ensure_task(conn, task_id)
    rows = await conn.execute(
        text(
            """
            SELECT *, CASE WHEN embedding IS NULL OR CAST(:emb AS vector) IS NULL THEN NULL
                           ELSE 1 - (embedding <=> CAST(:emb AS vector)) END AS similarity
            FROM approaches WHERE task_id = :t AND subtask = :s AND last_outcome = 'failed'
            """
        ),
        {"t": task_id, "s": subtask, "emb": vector_literal(embedding)},
    )
    failed = [_past(r, None if r.similarity is None else float(r.similarity)) for r in rows]
    status = (
        await conn.execute(
            text("SELECT refusals, stuck_at FROM subtasks WHERE task_id = :t AND subtask = :s"),
            {"t": task_id, "s": subtask},
        )
    ).first()
    refusals, stuck = (status.refusals, status.stuck_at is not None) if status else (0, False)
    decision = check_approach(
        fingerprint=approach_fingerprint(approach),
        failed=failed,
        similarity_threshold=similarity_threshold,
        stuck=stuck,
    )
    if decision.valid or await _seen(conn, idempotency_key):
        return CheckAnswer(decision, refusals, stuck)

    counted = (
        await conn.execute(
            text(
                """
                INSERT INTO subtasks (task_id, subtask, refusals, stuck_at)
                VALUES (:t, :s, 1, CASE WHEN 1 >= :n THEN now() END)
                ON CONFLICT (task_id, subtask) DO UPDATE SET
                    refusals = subtasks.refusals + 1,
                    stuck_at = CASE WHEN subtasks.stuck_at IS NULL AND subtasks.refusals + 1 >= :n THEN now()
                                    ELSE subtasks.stuck_at END
                RETURNING refusals, stuck_at, stuck_at = now() AS newly_stuck
                """
            ),
            {"t": task_id, "s": subtask, "n": refusals_before_stuck},
        )
    ).one()
    await record_event(
        conn,
        memory_id=None,
        event_type=EventType.APPROACH_REFUSED,
        actor_id=actor_id,
        actor_type=actor_type,
        task_id=task_id,
        reason=decision.reason,
        dedupe_key=idempotency_key,
        payload={"subtask": subtask, "approach": approach, "refusals": counted.refusals},
    )
    if counted.newly_stuck:
        await record_event(
            conn,
            memory_id=None,
            event_type=EventType.STUCK,
            actor_id=actor_id,
            actor_type=actor_type,
            task_id=task_id,
            reason=f"{counted.refusals} approaches refused as repeats of failed ones",
            payload={"subtask": subtask, "refusals": counted.refusals},
        )
    if counted.stuck_at is not None and not stuck:
        decision = check_approach(
            fingerprint=approach_fingerprint(approach),
            failed=failed,
            similarity_threshold=similarity_threshold,
            stuck=True,
        )
    return CheckAnswer(decision, counted.refusals, counted.stuck_at is not None)


async def stuck_subtasks(conn: AsyncConnection, task_id: str) -> dict[str, datetime]:
    """Subtasks of a task marked stuck, with when (for the task's view)."""
    rows = await conn.execute(
        text("SELECT subtask, stuck_at FROM subtasks WHERE task_id = :t AND stuck_at IS NOT NULL"),
        {"t": task_id},
    )
    return {r.subtask: r.stuck_at for r in rows}
