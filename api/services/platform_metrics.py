"""The platform's queues and totals for `/metrics`: Postgres aggregates plus Temporal's pending approvals.

Read at scrape time and kept for `SNAPSHOT_SECONDS`, so several scrapers (or a scrape storm) cost one read.
A promotion awaiting approval is known to Temporal alone (its `LoregateState` search attribute), so those
two gauges come from Temporal's visibility; when Temporal cannot be reached they are left out of the
scrape and `loregate_metrics_source_up{source="temporal"}` is 0.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from api.services.gateway import GatewayResources, temporal_client
from governance.storage.metrics import PlatformCounts, platform_counts
from workflows.promotion_contract import STATE_ATTRIBUTE, WORKFLOW_TYPE, PromotionState

__all__ = ["APPROVAL_LATENCY_BOUNDS", "SNAPSHOT_SECONDS", "PlatformSnapshot", "platform_snapshot"]

SNAPSHOT_SECONDS = 15.0
# approvals are human: minutes to days
APPROVAL_LATENCY_BOUNDS = [
    60.0,
    300.0,
    900.0,
    3600.0,
    4 * 3600.0,
    12 * 3600.0,
    86400.0,
    3 * 86400.0,
    7 * 86400.0,
]
# a scrape waits at most this long for Temporal's visibility
_TEMPORAL_TIMEOUT = 3.0
# pending approvals scanned for the oldest one (more than this many pending is an alert already)
_PENDING_SCAN = 1000


@dataclass
class PlatformSnapshot:
    """Postgres' counts; Temporal's pending promotions (None: Temporal was not reachable)."""

    counts: PlatformCounts
    promotions_pending: int | None = None
    promotions_oldest_seconds: float | None = None
    taken_at: float = field(default_factory=time.monotonic)


async def _pending_promotions(resources: GatewayResources) -> tuple[int, float]:
    client = await temporal_client(resources)
    query = (
        f'WorkflowType = "{WORKFLOW_TYPE}" AND ExecutionStatus = "Running" '
        f'AND {STATE_ATTRIBUTE} = "{PromotionState.AWAITING_APPROVAL.value}"'
    )
    now = datetime.now(UTC)
    count, oldest = 0, 0.0
    async for execution in client.list_workflows(query, limit=_PENDING_SCAN):
        count += 1
        oldest = max(oldest, (now - execution.start_time).total_seconds())
    return count, oldest


async def platform_snapshot(
    resources: GatewayResources, cache: dict[str, PlatformSnapshot]
) -> PlatformSnapshot:
    """The snapshot, fresh or at most `SNAPSHOT_SECONDS` old (`cache` is the caller's, per process)."""
    held = cache.get("snapshot")
    if held is not None and time.monotonic() - held.taken_at < SNAPSHOT_SECONDS:
        return held
    async with resources.engine.connect() as conn:
        counts = await platform_counts(conn, APPROVAL_LATENCY_BOUNDS)
    snapshot = PlatformSnapshot(counts)
    if resources.settings.temporal_address:
        try:
            found = await asyncio.wait_for(_pending_promotions(resources), _TEMPORAL_TIMEOUT)
            snapshot.promotions_pending, snapshot.promotions_oldest_seconds = found
        except Exception:  # Temporal down or slow: the Postgres figures still go out
            pass
    cache["snapshot"] = snapshot
    return snapshot
