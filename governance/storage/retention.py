"""The nightly retention's writes: decay trust, expire, prune — set-based statements, each row with its event.

Decay recomputes `confidence` from `base_confidence` (the value at the last validation) and the whole days
since `last_validated_at`, so a second run on the same day changes nothing and writes no event. Every
statement can be limited to some orgs (a tenant's own run, and tests that share one database).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.retention import PRUNABLE_TYPES, PruneChoice, RetentionRow
from governance.storage.events import Event, EventType, record_events
from governance.storage.memory_rows import expired_event
from governance.trust import DAYS_PER_MONTH, DECAY_RATES_PER_MONTH, MIN_CONFIDENCE, DecayPolicy

__all__ = ["decay_confidences", "expire_due", "load_retention_rows", "prune_memories"]

_ACTOR_ID, _ACTOR_TYPE = "system:retention", "system"

# the SQL twin of governance.trust.decayed (tested against it)
_DECAYED = """
    GREATEST(:min_conf, LEAST(COALESCE(base_confidence, confidence),
        COALESCE(base_confidence, confidence) * power(1 - CASE decay_policy
                WHEN 'recency_bias' THEN CAST(:rate_recency AS float8)
                WHEN 'stable' THEN CAST(:rate_stable AS float8) ELSE 0 END,
            floor(GREATEST(0, extract(epoch FROM (CAST(:now AS timestamptz)
                - COALESCE(last_validated_at, created_at))) / 86400)) / CAST(:dpm AS float8))))
"""

_ORG_FILTER = "(CAST(:orgs AS text[]) IS NULL OR org = ANY(CAST(:orgs AS text[])))"


def _decay_params(now: datetime, orgs: Sequence[str] | None) -> dict[str, object]:
    return {
        "now": now,
        "orgs": list(orgs) if orgs is not None else None,
        "min_conf": MIN_CONFIDENCE,
        "rate_recency": DECAY_RATES_PER_MONTH[DecayPolicy.RECENCY_BIAS],
        "rate_stable": DECAY_RATES_PER_MONTH[DecayPolicy.STABLE],
        "dpm": DAYS_PER_MONTH,
    }


async def decay_confidences(
    conn: AsyncConnection, *, now: datetime, dry_run: bool, orgs: Sequence[str] | None = None
) -> int:
    """Decay active memories by their policy; one DECAYED event per changed memory. Returns the count."""
    candidates = f"""
        SELECT id, confidence AS old, {_DECAYED} AS new FROM memories
        WHERE deprecated_at IS NULL AND decay_policy <> 'manual_only' AND {_ORG_FILTER}
    """
    params = _decay_params(now, orgs)
    if dry_run:
        sql = f"SELECT count(*) FROM ({candidates}) c WHERE abs(c.new - c.old) > 1e-9"
        return int((await conn.execute(text(sql), params)).scalar_one())
    sql = f"""
        WITH c AS ({candidates} FOR UPDATE),
        changed AS (
            UPDATE memories m SET confidence = c.new, base_confidence = COALESCE(m.base_confidence, c.old),
                   updated_at = CAST(:now AS timestamptz)
            FROM c WHERE m.id = c.id AND abs(c.new - c.old) > 1e-9
            RETURNING m.id::text AS id, c.old, c.new, m.decay_policy
        )
        SELECT * FROM changed
    """
    changed = (await conn.execute(text(sql), params)).all()
    await record_events(
        conn,
        [
            Event(
                event_type=EventType.DECAYED,
                memory_id=r.id,
                reason=f"decay policy {r.decay_policy}",
                payload={"from": r.old, "to": r.new, "policy": r.decay_policy},
                actor_id=_ACTOR_ID,
                actor_type=_ACTOR_TYPE,
            )
            for r in changed
        ],
    )
    return len(changed)


async def expire_due(
    conn: AsyncConnection, *, now: datetime, dry_run: bool, orgs: Sequence[str] | None = None
) -> int:
    """Deprecate active memories whose `expires_at` has passed; one EXPIRED event each. Returns the count."""
    where = f"deprecated_at IS NULL AND expires_at <= CAST(:now AS timestamptz) AND {_ORG_FILTER}"
    params: dict[str, object] = {"now": now, "orgs": list(orgs) if orgs is not None else None}
    if dry_run:
        return int(
            (await conn.execute(text(f"SELECT count(*) FROM memories WHERE {where}"), params)).scalar_one()
        )
    sql = f"""
        UPDATE memories SET deprecated_at = CAST(:now AS timestamptz), updated_at = CAST(:now AS timestamptz)
        WHERE {where}
        RETURNING id::text AS id, expires_at
    """
    expired = (await conn.execute(text(sql), params)).all()
    await record_events(
        conn,
        [
            replace(expired_event(r.id, r.expires_at), actor_id=_ACTOR_ID, actor_type=_ACTOR_TYPE)
            for r in expired
        ],
    )
    return len(expired)


async def load_retention_rows(
    conn: AsyncConnection, *, orgs: Sequence[str] | None = None
) -> list[RetentionRow]:
    """Episodes and skills with what the pruning rules read (a skill's success rate is its usefulness)."""
    rows = await conn.execute(
        text(
            f"""
            SELECT id::text AS id, memory_type, COALESCE(source_task_ids[1], '') AS task_id, created_at,
                reward,
                   CASE WHEN memory_type = 'skill' THEN usefulness END AS success_rate
            FROM memories WHERE memory_type = ANY(:types) AND {_ORG_FILTER}
            """
        ),
        {"types": list(PRUNABLE_TYPES), "orgs": list(orgs) if orgs is not None else None},
    )
    return [
        RetentionRow(r.id, r.memory_type, r.task_id, r.created_at, r.reward, r.success_rate) for r in rows
    ]


async def prune_memories(conn: AsyncConnection, choices: Sequence[PruneChoice]) -> int:
    """Delete the chosen memories, each with a PRUNED event keeping its reason and a snapshot.

    A memory another one supersedes stays (its history is part of the newer memory's).
    """
    if not choices:
        return 0
    sql = """
        WITH chosen AS (
            SELECT * FROM unnest(CAST(:ids AS uuid[]), CAST(:reasons AS text[])) AS r(id, reason)
        ),
        d AS (
            DELETE FROM memories m USING chosen
            WHERE m.id = chosen.id AND NOT EXISTS (SELECT 1 FROM memories s WHERE s.supersedes_id = m.id)
            RETURNING m.id::text AS id, m.citation, m.memory_type, m.title, m.content_hash,
                      m.source_task_ids, m.reward, chosen.reason
        )
        SELECT * FROM d
    """
    pruned = (
        await conn.execute(
            text(sql), {"ids": [c.id for c in choices], "reasons": [c.reason for c in choices]}
        )
    ).all()
    await record_events(
        conn,
        [
            Event(
                event_type=EventType.PRUNED,
                memory_id=r.id,
                reason=r.reason,
                payload={
                    "citation": r.citation,
                    "memory_type": r.memory_type,
                    "title": r.title,
                    "content_hash": r.content_hash,
                    "source_task_ids": list(r.source_task_ids or []),
                    "reward": r.reward,
                },
                actor_id=_ACTOR_ID,
                actor_type=_ACTOR_TYPE,
            )
            for r in pruned
        ],
    )
    return len(pruned)
