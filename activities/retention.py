"""Activities of the nightly retention: decay trust, expire, prune — thin wrappers over governance/.

Each step is idempotent by construction (decay is computed from the last validation, expiry and pruning
only touch rows still due), so Temporal may retry them freely. Each runs in its own transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio import activity

from governance.retention import RetentionPolicy, select_for_pruning
from governance.storage.retention import decay_confidences, expire_due, load_retention_rows, prune_memories

__all__ = ["RetentionActivities", "RetentionStepInput", "PruneInput", "PruneResult"]


@dataclass
class RetentionStepInput:
    """One decay or expiry pass as of `now` (the workflow's clock); `orgs` None means every tenant."""

    now: datetime
    dry_run: bool
    orgs: list[str] | None = None


@dataclass
class PruneInput:
    """One pruning pass with the numbers of the run."""

    now: datetime
    dry_run: bool
    policy: RetentionPolicy = field(default_factory=RetentionPolicy)
    orgs: list[str] | None = None


@dataclass
class PruneResult:
    """How many memories went (or would go, in a dry run), and which."""

    pruned: int
    ids: list[str] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)


class RetentionActivities:
    """Retention steps over one database engine."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine

    @activity.defn(name="retention_decay")
    async def decay(self, step: RetentionStepInput) -> int:
        """Decay trust of active memories; returns how many changed (or would)."""
        async with self._engine.begin() as conn:
            return await decay_confidences(conn, now=step.now, dry_run=step.dry_run, orgs=step.orgs)

    @activity.defn(name="retention_expire")
    async def expire(self, step: RetentionStepInput) -> int:
        """Deprecate memories past `expires_at`; returns how many (or would)."""
        async with self._engine.begin() as conn:
            return await expire_due(conn, now=step.now, dry_run=step.dry_run, orgs=step.orgs)

    @activity.defn(name="retention_prune")
    async def prune(self, step: PruneInput) -> PruneResult:
        """Remove stale episodes and failing skills, keeping the most recent per task."""
        async with self._engine.begin() as conn:
            rows = await load_retention_rows(conn, orgs=step.orgs)
            choices = select_for_pruning(rows, step.policy, step.now)
            pruned = len(choices) if step.dry_run else await prune_memories(conn, choices)
        return PruneResult(
            pruned=pruned, ids=[c.id for c in choices], reasons={c.id: c.reason for c in choices}
        )
