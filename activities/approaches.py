"""Activities of circular-fix detection, so workflows (and agents driven by them) can ask before trying.

The use case is governance/operations/approaches.py, as for the gateway's routes: the embedder and engine
come from `__init__`, each call carries an idempotency key so a Temporal retry neither counts an attempt
twice nor a refusal twice, and a refusal of the input is a non-retryable failure.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio import activity
from temporalio.exceptions import ApplicationError

from governance.adapters.embedders import Embedder
from governance.approaches import PastApproach
from governance.config import Settings
from governance.errors import InvalidInput, NotFound
from governance.operations.approaches import Attempt, Proposal, check_proposal, record_approach

__all__ = [
    "ApproachActivities",
    "RecordApproachInput",
    "CheckApproachInput",
    "FailedAttempt",
    "ApproachVerdict",
    "attempt_view",
]


@dataclass
class RecordApproachInput:
    """One attempt and how it ended (`outcome`: failed | succeeded)."""

    task_id: str
    approach: str
    outcome: str
    idempotency_key: str
    reason: str | None = None
    subtask: str = ""
    actor_id: str = "system:workflow"
    actor_type: str = "system"


@dataclass
class CheckApproachInput:
    """A proposed approach to check before trying it."""

    task_id: str
    approach: str
    idempotency_key: str
    subtask: str = ""
    actor_id: str = "system:workflow"
    actor_type: str = "system"


@dataclass
class FailedAttempt:
    """One entry of the failed history shown to the agent."""

    approach: str
    attempts: int
    failures: int
    failure_reasons: list[str]
    last_attempt_at: datetime
    similarity: float | None = None


@dataclass
class ApproachVerdict:
    """The check's answer: valid, why, what to do instead, the failed history, and the stuck mark."""

    valid: bool
    reason: str
    suggestion: str | None
    stuck: bool
    refusals: int
    history: list[FailedAttempt] = field(default_factory=list)


def attempt_view(past: PastApproach) -> FailedAttempt:
    """The serialisable view of a stored approach."""
    return FailedAttempt(
        approach=past.approach,
        attempts=past.attempts,
        failures=past.failures,
        failure_reasons=list(past.failure_reasons),
        last_attempt_at=past.last_attempt_at,
        similarity=past.similarity,
    )


def _permanent(exc: NotFound | InvalidInput) -> ApplicationError:
    return ApplicationError(exc.detail, type=type(exc).__name__, non_retryable=True)


class ApproachActivities:
    """Record and check approaches over one engine and embedder, with the thresholds of the settings."""

    def __init__(self, engine: AsyncEngine, embedder: Embedder, settings: Settings) -> None:
        self._engine = engine
        self._embedder = embedder
        self._settings = settings

    @activity.defn(name="approach_record")
    async def record(self, params: RecordApproachInput) -> FailedAttempt:
        """Count one attempt with its outcome."""
        attempt = Attempt(**asdict(params))  # the input is the operation's Attempt, with a required key
        try:
            past = await record_approach(self._engine, self._embedder, attempt)
        except (NotFound, InvalidInput) as exc:
            raise _permanent(exc) from exc
        return attempt_view(past)

    @activity.defn(name="approach_check")
    async def check(self, params: CheckApproachInput) -> ApproachVerdict:
        """Refuse a repeat of a failed approach (same or near-duplicate), with history and a suggestion."""
        proposal = Proposal(**asdict(params))
        try:
            answer = await check_proposal(self._engine, self._embedder, self._settings, proposal)
        except (NotFound, InvalidInput) as exc:
            raise _permanent(exc) from exc
        return ApproachVerdict(
            answer.valid,
            answer.reason,
            answer.suggestion,
            answer.stuck,
            answer.refusals,
            [attempt_view(p) for p in answer.history],
        )
