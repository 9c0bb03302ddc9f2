"""Circular-fix detection: record an attempted approach, check a proposal against the failed ones.

Each call embeds the approach (outside the transaction), then decides and records in one transaction.
An idempotency key makes a replay count nothing twice: the attempt or refusal is recorded with an event
carrying it, and an event already under that key means it was counted. With a `request_hash` the key is
bound to one request: the same key with another body is a Conflict, never taken for its replay.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from governance.adapters.embedders import Embedder, embed_one
from governance.approaches import (
    ApproachCheck,
    ApproachOutcome,
    PastApproach,
    approach_fingerprint,
    check_approach,
)
from governance.config import Settings
from governance.errors import InvalidInput, NotFound
from governance.redaction import redact_free_text
from governance.storage.approaches import (
    count_refusal,
    failed_attempts,
    get_attempt,
    subtask_status,
    task_exists,
    upsert_attempt,
)
from governance.storage.events import REQUEST_HASH, EventType, record_event, recorded_payload

__all__ = ["Attempt", "Proposal", "CheckAnswer", "record_approach", "check_proposal"]


@dataclass(frozen=True)
class Proposal:
    """An approach proposed on a task's subtask, to check before trying it."""

    task_id: str
    subtask: str
    approach: str
    actor_id: str
    actor_type: str
    idempotency_key: str | None = None
    # what the key is bound to (the gateway's hash of the task and the body); None: the key alone
    request_hash: str | None = None


@dataclass(frozen=True, kw_only=True)
class Attempt(Proposal):
    """A proposal tried, and how it ended (`outcome`: failed | succeeded; a failure's `reason`)."""

    outcome: str
    reason: str | None


@dataclass(frozen=True)
class CheckAnswer:
    """The check's decision plus the subtask's refusal count and stuck mark.

    It reads as the answer every face gives (`valid`, `reason`, `suggestion`, `history`, `stuck`,
    `refusals`), so a schema or a payload is built from its attributes, not field by field.
    """

    check: ApproachCheck
    refusals: int
    stuck: bool
    # what identified the proposal, for looking it up beyond this task (api/services/live.py)
    fingerprint: str = ""
    embedding: list[float] | None = None

    @property
    def valid(self) -> bool:
        """Whether the approach may be tried."""
        return self.check.valid

    @property
    def reason(self) -> str:
        """Why it may or may not."""
        return self.check.reason

    @property
    def suggestion(self) -> str | None:
        """What to try instead, for a refusal."""
        return self.check.suggestion

    @property
    def history(self) -> tuple[PastApproach, ...]:
        """The failed approaches it repeats, nearest first."""
        return self.check.history


def _bound(payload: dict[str, Any], request_hash: str | None) -> dict[str, Any]:
    """The event's payload, carrying the request hash its idempotency key is bound to (if any)."""
    return {**payload, REQUEST_HASH: request_hash} if request_hash is not None else payload


def _outcome(value: str) -> ApproachOutcome:
    try:
        return ApproachOutcome(value)
    except ValueError:
        raise InvalidInput(f"unknown outcome {value!r}: failed or succeeded") from None


async def record_approach(engine: AsyncEngine, embedder: Embedder, attempt: Attempt) -> PastApproach:
    """Count one attempt with its outcome; failures keep their reason (the approach, its subtask and the
    reason redacted like any free text: the event shows them to every reader of the tenant's trail)."""
    attempt = replace(
        attempt,
        approach=redact_free_text(attempt.approach) or "",
        subtask=redact_free_text(attempt.subtask) or "",
        reason=redact_free_text(attempt.reason),
    )
    outcome = _outcome(attempt.outcome)
    if not attempt.approach.strip():
        raise InvalidInput("the approach is empty")
    embedding = await embed_one(embedder, attempt.approach)
    fingerprint = approach_fingerprint(attempt.approach)
    async with engine.begin() as conn:
        if not await task_exists(conn, attempt.task_id):
            raise NotFound(f"task {attempt.task_id!r} not found")
        if await recorded_payload(conn, attempt.idempotency_key, attempt.request_hash) is None:
            await upsert_attempt(
                conn,
                task_id=attempt.task_id,
                subtask=attempt.subtask,
                fingerprint=fingerprint,
                approach=attempt.approach,
                embedding=embedding,
                outcome=outcome.value,
                failed=outcome is ApproachOutcome.FAILED,
                reason=attempt.reason,
            )
            await record_event(
                conn,
                memory_id=None,
                event_type=EventType.APPROACH,
                actor_id=attempt.actor_id,
                actor_type=attempt.actor_type,
                task_id=attempt.task_id,
                reason=attempt.reason,
                idempotency_key=attempt.idempotency_key,
                payload=_bound(
                    {
                        "subtask": attempt.subtask,
                        "approach": attempt.approach,
                        "fingerprint": fingerprint,
                        "outcome": outcome.value,
                    },
                    attempt.request_hash,
                ),
            )
        return await get_attempt(conn, attempt.task_id, attempt.subtask, fingerprint)


async def check_proposal(
    engine: AsyncEngine, embedder: Embedder, settings: Settings, proposal: Proposal
) -> CheckAnswer:
    """Refuse a repeat of a failed approach (or a near-duplicate); count refusals, mark stuck. The proposal
    is redacted as a recorded attempt is, so it meets the attempts under the same fingerprint and subtask,
    and its refusal's event holds no secret."""
    proposal = replace(
        proposal,
        approach=redact_free_text(proposal.approach) or "",
        subtask=redact_free_text(proposal.subtask) or "",
    )
    if not proposal.approach.strip():
        raise InvalidInput("the approach is empty")
    embedding = await embed_one(embedder, proposal.approach)
    fingerprint = approach_fingerprint(proposal.approach)
    task_id, subtask = proposal.task_id, proposal.subtask
    async with engine.begin() as conn:
        if not await task_exists(conn, task_id):
            raise NotFound(f"task {task_id!r} not found")
        failed = await failed_attempts(conn, task_id, subtask, embedding)
        refusals, stuck = await subtask_status(conn, task_id, subtask)

        def decide(stuck: bool) -> ApproachCheck:
            return check_approach(
                fingerprint=fingerprint,
                failed=failed,
                similarity_threshold=settings.approach_similarity_threshold,
                stuck=stuck,
            )

        decision = decide(stuck)
        if decision.valid or (
            await recorded_payload(conn, proposal.idempotency_key, proposal.request_hash) is not None
        ):
            return CheckAnswer(decision, refusals, stuck, fingerprint, embedding)
        counted = await count_refusal(conn, task_id, subtask, settings.approach_refusals_before_stuck)
        await record_event(
            conn,
            memory_id=None,
            event_type=EventType.APPROACH_REFUSED,
            actor_id=proposal.actor_id,
            actor_type=proposal.actor_type,
            task_id=task_id,
            reason=decision.reason,
            idempotency_key=proposal.idempotency_key,
            payload=_bound(
                {"subtask": subtask, "approach": proposal.approach, "refusals": counted.refusals},
                proposal.request_hash,
            ),
        )
        if counted.newly_stuck:
            await record_event(
                conn,
                memory_id=None,
                event_type=EventType.STUCK,
                actor_id=proposal.actor_id,
                actor_type=proposal.actor_type,
                task_id=task_id,
                reason=f"{counted.refusals} approaches refused as repeats of failed ones",
                payload={"subtask": subtask, "refusals": counted.refusals},
            )
        if counted.stuck and not stuck:
            decision = decide(True)
        return CheckAnswer(decision, counted.refusals, counted.stuck, fingerprint, embedding)
