"""What the platform holds, counted for `/metrics` at scrape time (api/http/metrics.py caches it briefly).

Each figure is one aggregate over the tables that already record it, so nothing is written to count:
- pending change requests and the age of the oldest (`change_requests.state`);
- promotions by outcome (`tasks.status` of every task whose promotion ended or runs);
- plan decisions by kind (`promotion_plan_items.decision`), and the items quarantined among them
  (`promotion_plan_items.quarantine`);
- redactions by rule (each promotion's summary event, `payload.redaction`, and each change request's
  `redaction_counts`);
- retention prunes (`PRUNED` events);
- approval latency: a change request's `decided_at - created_at`; a promotion's approval event's time less
  its plan's `created_at` (the plan is what the approver reads; planning takes seconds next to a wait).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = ["PlatformCounts", "LatencyHistogram", "platform_counts"]


@dataclass
class LatencyHistogram:
    """Cumulative counts at each bucket's upper bound (seconds), the sum and the count."""

    buckets: list[tuple[float, int]]
    total_seconds: float
    count: int


@dataclass
class PlatformCounts:
    """One snapshot of the platform's queues and totals."""

    change_requests_pending: int = 0
    change_requests_oldest_seconds: float = 0.0
    promotions_by_outcome: dict[str, int] = field(default_factory=dict)
    plan_decisions: dict[str, int] = field(default_factory=dict)
    plan_items_quarantined: int = 0
    redactions_by_rule: dict[str, int] = field(default_factory=dict)
    retention_prunes: int = 0
    approval_latency: dict[str, LatencyHistogram] = field(default_factory=dict)


_PENDING = text(
    """
    SELECT count(*) AS n, coalesce(extract(epoch FROM now() - min(created_at)), 0) AS oldest
    FROM change_requests WHERE state = 'awaiting_approval'
    """
)
_OUTCOMES = text("SELECT status, count(*) AS n FROM tasks WHERE status <> 'open' GROUP BY status")
# one scan for both: the decisions, and the items held for carrying instructions aimed at agents
_DECISIONS = text(
    "SELECT decision, count(*) AS n, count(*) FILTER (WHERE quarantine IS NOT NULL) AS held "
    "FROM promotion_plan_items GROUP BY decision"
)
_REDACTIONS = text(
    """
    SELECT rule, sum(n)::bigint AS n FROM (
        SELECT r.key AS rule, r.value::text::bigint AS n
        FROM memory_events e, jsonb_each(CAST(e.payload AS jsonb) -> 'redaction') r
        WHERE e.event_type = 'PROMOTION' AND jsonb_typeof(CAST(e.payload AS jsonb) -> 'redaction') = 'object'
          AND jsonb_typeof(r.value) = 'number'
        UNION ALL
        SELECT r.key, r.value::text::bigint
        FROM change_requests c, jsonb_each(c.redaction_counts) r
        WHERE jsonb_typeof(r.value) = 'number'
    ) counted GROUP BY rule
    """
)
_PRUNES = text("SELECT count(*) FROM memory_events WHERE event_type = 'PRUNED'")
_LATENCY = text(
    """
    WITH waits AS (
        SELECT 'change_request' AS kind, extract(epoch FROM decided_at - created_at) AS s
        FROM change_requests WHERE decided_at IS NOT NULL
        UNION ALL
        SELECT 'promotion', extract(epoch FROM e.created_at - p.created_at)
        FROM memory_events e
        JOIN LATERAL (
            SELECT min(created_at) AS created_at FROM promotion_plans WHERE workflow_id = e.workflow_id
        ) p ON p.created_at IS NOT NULL
        WHERE e.event_type IN ('APPROVED', 'REJECTED') AND e.workflow_id IS NOT NULL
          AND e.memory_id IS NULL
    )
    SELECT kind, b, count(*) FILTER (WHERE s <= b) AS n, sum(s) AS total, count(*) AS cnt
    FROM waits CROSS JOIN unnest(CAST(:bounds AS float8[])) AS b
    GROUP BY kind, b ORDER BY kind, b
    """
)


async def platform_counts(conn: AsyncConnection, latency_bounds: list[float]) -> PlatformCounts:
    """The snapshot, read in one connection (a handful of aggregates)."""
    counts = PlatformCounts()
    pending = (await conn.execute(_PENDING)).one()
    counts.change_requests_pending = int(pending.n)
    counts.change_requests_oldest_seconds = float(pending.oldest)
    counts.promotions_by_outcome = {r.status: int(r.n) for r in await conn.execute(_OUTCOMES)}
    decisions = (await conn.execute(_DECISIONS)).all()
    counts.plan_decisions = {r.decision: int(r.n) for r in decisions}
    counts.plan_items_quarantined = sum(int(r.held) for r in decisions)
    counts.redactions_by_rule = {r.rule: int(r.n) for r in await conn.execute(_REDACTIONS)}
    counts.retention_prunes = int((await conn.execute(_PRUNES)).scalar_one())
    latency: dict[str, LatencyHistogram] = {}
    for row in await conn.execute(_LATENCY, {"bounds": latency_bounds}):
        hist = latency.setdefault(row.kind, LatencyHistogram([], float(row.total or 0), int(row.cnt)))
        hist.buckets.append((float(row.b), int(row.n)))
    for kind in ("change_request", "promotion"):
        latency.setdefault(kind, LatencyHistogram([(b, 0) for b in latency_bounds], 0.0, 0))
    counts.approval_latency = latency
    return counts
