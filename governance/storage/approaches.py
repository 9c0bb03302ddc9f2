"""Statements of circular-fix detection: attempts per task/subtask, refusals, and the stuck mark.

Every write is one atomic statement (upserts count attempts and refusals in SQL), so parallel agents of
one task never lose a count. What to record when, the decision and its events are composed by
governance/operations/approaches.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.approaches import PastApproach
from governance.storage.tables import vector_literal

__all__ = [
    "Refusal",
    "task_exists",
    "upsert_attempt",
    "get_attempt",
    "failed_attempts",
    "subtask_status",
    "count_refusal",
    "stuck_subtasks",
]


@dataclass(frozen=True)
class Refusal:
    """A subtask's refusal count after one more, whether it is stuck, and whether this refusal made it so."""

    refusals: int
    stuck: bool
    newly_stuck: bool


async def task_exists(conn: AsyncConnection, task_id: str) -> bool:
    """Whether the task is there."""
    return (await conn.execute(text("SELECT 1 FROM tasks WHERE id = :t"), {"t": task_id})).first() is not None


async def upsert_attempt(
    conn: AsyncConnection,
    *,
    task_id: str,
    subtask: str,
    fingerprint: str,
    approach: str,
    embedding: Sequence[float] | None,
    outcome: str,
    failed: bool,
    reason: str | None,
) -> None:
    """Count one attempt of the approach under its fingerprint; a failure appends its reason."""
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
            "outcome": outcome,
            "reason": reason or "no reason given",
        },
    )


async def get_attempt(conn: AsyncConnection, task_id: str, subtask: str, fingerprint: str) -> PastApproach:
    """The stored approach under its fingerprint."""
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


async def failed_attempts(
    conn: AsyncConnection, task_id: str, subtask: str, embedding: Sequence[float] | None
) -> list[PastApproach]:
    """The failed approaches of this task/subtask, with their similarity to `embedding` (if both have one)."""
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
    return [_past(r, None if r.similarity is None else float(r.similarity)) for r in rows]


async def subtask_status(conn: AsyncConnection, task_id: str, subtask: str) -> tuple[int, bool]:
    """The subtask's refusal count and whether it is stuck."""
    status = (
        await conn.execute(
            text("SELECT refusals, stuck_at FROM subtasks WHERE task_id = :t AND subtask = :s"),
            {"t": task_id, "s": subtask},
        )
    ).first()
    return (status.refusals, status.stuck_at is not None) if status else (0, False)


async def count_refusal(
    conn: AsyncConnection, task_id: str, subtask: str, refusals_before_stuck: int
) -> Refusal:
    """Count one refusal; the subtask becomes stuck at `refusals_before_stuck`."""
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
    return Refusal(counted.refusals, counted.stuck_at is not None, bool(counted.newly_stuck))


async def stuck_subtasks(conn: AsyncConnection, task_id: str) -> dict[str, datetime]:
    """Subtasks of a task marked stuck, with when (for the task's view)."""
    rows = await conn.execute(
        text("SELECT subtask, stuck_at FROM subtasks WHERE task_id = :t AND stuck_at IS NOT NULL"),
        {"t": task_id},
    )
    return {r.subtask: r.stuck_at for r in rows}
