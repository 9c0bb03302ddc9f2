"""Code rules' confidence from observations (an EMA, governance/trust.py), and their retirement candidates."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.errors import InvalidInput, NotFound
from governance.scopes import ActorType, MemoryType, ValidationSource
from governance.storage.events import EventType, record_event
from governance.storage.trust import CONFIRMERS
from governance.trust import RETIREMENT_CANDIDATE, RuleOutcome, capped_rule_confidence

__all__ = ["RuleRow", "Observation", "observe_rule", "retirement_candidates", "established_rules"]

_LIMIT = 200


@dataclass(frozen=True)
class RuleRow:
    """A code rule as the candidates list and the context block show it."""

    id: str
    citation: str
    scope: str
    scope_key: str
    org: str
    project: str | None
    title: str
    content: str
    confidence: float
    created_at: datetime
    updated_at: datetime
    validation_source: str | None = None
    confirmers: int = 0


@dataclass(frozen=True)
class Observation:
    """A code rule's confidence before and after one observation, and whether the observation counted."""

    before: float
    after: float
    counted: bool


async def observe_rule(
    conn: AsyncConnection,
    memory_id: str,
    outcome: RuleOutcome,
    *,
    actor_id: str,
    actor_type: str,
    note: str | None = None,
    task_id: str | None = None,
) -> Observation:
    """Move the rule's confidence one EMA step towards the outcome's target, with an OBSERVED event.

    One observation counts per (principal, rule, task) (`task_id` None is one more "task"): a repeat is
    recorded with `counted: false` and moves nothing. A non-human's observation raises the rule only up to
    the unreviewed ceiling unless a human approved the rule or `INDEPENDENT_CONFIRMATIONS` distinct
    principals observed it (`trust.capped_rule_confidence`). A counted observation is a validation: it
    stamps `last_validated_at` and `base_confidence`, so the nightly decay starts again from it.
    The row is locked first, so parallel observations of one rule are applied one after the other.
    """
    row = (
        await conn.execute(
            text(
                "SELECT memory_type, confidence, validation_source FROM memories "
                "WHERE id = CAST(:id AS uuid) AND deprecated_at IS NULL FOR UPDATE"
            ),
            {"id": memory_id},
        )
    ).first()
    if row is None:
        raise NotFound(f"memory {memory_id} is not an active memory")
    if row.memory_type != MemoryType.CODE_RULE.value:
        raise InvalidInput(
            f"memory {memory_id} is a {row.memory_type}, not a code_rule: it takes no observations"
        )
    before = float(row.confidence)
    seen = (
        await conn.execute(
            text(
                """
                SELECT count(DISTINCT actor_id) FILTER (WHERE actor_id <> :actor) AS others,
                       bool_or(actor_id = :actor AND COALESCE(payload->>'task', '') = :task) AS repeat
                FROM memory_events
                WHERE memory_id = CAST(:id AS uuid) AND event_type = 'OBSERVED'
                  AND COALESCE(payload->>'counted', 'true') = 'true'
                """
            ),
            {"id": memory_id, "actor": actor_id, "task": task_id or ""},
        )
    ).one()
    counted = not seen.repeat
    after = before
    if counted:
        after = capped_rule_confidence(
            before,
            outcome,
            human=actor_type == ActorType.HUMAN.value,
            human_approved=row.validation_source == ValidationSource.HUMAN_APPROVED.value,
            confirmers=int(seen.others) + 1,
        )
        await conn.execute(
            text(
                "UPDATE memories SET confidence = :c, base_confidence = :c, last_validated_at = now(), "
                "updated_at = now() WHERE id = CAST(:id AS uuid)"
            ),
            {"id": memory_id, "c": after},
        )
    await record_event(
        conn,
        memory_id=memory_id,
        event_type=EventType.OBSERVED,
        actor_id=actor_id,
        actor_type=actor_type,
        reason=note,
        payload={
            "outcome": outcome.value,
            "confidence_before": before,
            "confidence": after,
            "task": task_id,
            "counted": counted,
        },
    )
    return Observation(before, after, counted)


def _rows(result: object) -> list[RuleRow]:
    return [
        RuleRow(
            id=r.id,
            citation=r.citation,
            scope=r.scope,
            scope_key=r.scope_key,
            org=r.org,
            project=r.project,
            title=r.title,
            content=r.content,
            confidence=float(r.confidence),
            created_at=r.created_at,
            updated_at=r.updated_at,
            validation_source=r.validation_source,
            confirmers=int(r.confirmers),
        )
        for r in result  # type: ignore[attr-defined]
    ]


_COLUMNS = (
    "id::text AS id, citation, scope, scope_key, org, project, title, content, confidence, "
    "created_at, updated_at, validation_source, " + CONFIRMERS + " AS confirmers"
)


async def retirement_candidates(
    conn: AsyncConnection, *, org: str, project: str | None, limit: int = _LIMIT
) -> list[RuleRow]:
    """Active code rules of a tenant below the retirement threshold, weakest first; the caller filters them
    by what the policy lets it read."""
    result = await conn.execute(
        text(
            f"""
            SELECT {_COLUMNS} FROM memories m
            WHERE org = :org AND memory_type = 'code_rule' AND deprecated_at IS NULL
              AND confidence < :threshold
              AND (CAST(:project AS text) IS NULL OR project IS NULL OR project = :project)
            ORDER BY confidence, id LIMIT :limit
            """
        ),
        {"org": org, "project": project, "threshold": RETIREMENT_CANDIDATE, "limit": limit},
    )
    return _rows(result)


async def established_rules(
    conn: AsyncConnection, *, scope_keys: list[str], threshold: float, limit: int
) -> list[RuleRow]:
    """Active code rules of `scope_keys` above `threshold`, strongest first."""
    result = await conn.execute(
        text(
            f"""
            SELECT {_COLUMNS} FROM memories m
            WHERE scope_key = ANY(:keys) AND memory_type = 'code_rule' AND deprecated_at IS NULL
              AND (expires_at IS NULL OR expires_at > now()) AND confidence > :threshold
            ORDER BY confidence DESC, updated_at DESC, id LIMIT :limit
            """
        ),
        {"keys": scope_keys, "threshold": threshold, "limit": limit},
    )
    return _rows(result)
