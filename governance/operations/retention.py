"""Retention's pruning: choose by the rules, then delete a batch per transaction, rechecked under its locks.

`prune` reads every memory of the tenants (never content), lets `governance.retention.select_for_pruning`
choose, and (unless a dry run) deletes the choice a batch per transaction: each batch locks the scopes it
deletes from and checks its choice again on the rows as they are now (`governance.retention.recheck`), so
what changed since the first reading (a vote, a new derivation, a retirement in the group) is respected;
when nothing did, the run deletes exactly what a dry run lists. A retry after a crash resumes: committed
batches are gone. `prune_memories` is one batch: what survives but builds on a pruned memory is marked
stale (when the rule says so), then storage deletes the batch with its PRUNED events.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from governance.retention import (
    MARKS_DERIVED_STALE,
    PruneChoice,
    RetentionPolicy,
    recheck,
    select_for_pruning,
)
from governance.storage.derivations import mark_derived_stale
from governance.storage.retention import (
    MemoryLabel,
    PruneOutcome,
    active_group_counts,
    delete_pruned,
    derivation_sources_among,
    load_retention_rows,
    lock_for_pruning,
    lock_prune_scopes,
)

__all__ = ["PrunedItem", "PruneReport", "prune", "prune_memories"]

_ACTOR_ID, _ACTOR_TYPE = "system:retention", "system"


@dataclass(frozen=True)
class PrunedItem:
    """One memory a pruning pass removed (or would): how a report lists it, without content."""

    id: str
    citation: str
    memory_type: str
    scope: str
    scope_key: str
    title: str
    rule: str
    reason: str


@dataclass
class PruneReport:
    """A pruning pass in full, for `loregate retention run` (the activity returns the short PruneResult)."""

    dry_run: bool
    items: list[PrunedItem] = field(default_factory=list)
    spared: int = 0
    stale_marked: int = 0

    def by_rule(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for item in self.items:
            counts[item.rule] = counts.get(item.rule, 0) + 1
        return dict(sorted(counts.items()))


def _item(label: MemoryLabel, choice: PruneChoice) -> PrunedItem:
    return PrunedItem(
        label.id,
        label.citation,
        label.memory_type,
        label.scope,
        label.scope_key,
        label.title,
        choice.rule,
        choice.reason,
    )


async def prune(
    engine: AsyncEngine,
    *,
    now: datetime,
    policy: RetentionPolicy,
    orgs: Sequence[str] | None,
    dry_run: bool,
    batch_size: int,
    on_batch: Callable[[int], None] = lambda done: None,
) -> PruneReport:
    """Choose from every memory of `orgs`, then (unless a dry run) delete the choice a batch at a time.

    `on_batch` hears how many are gone after each committed batch (the activity heartbeats with it).
    """
    async with engine.connect() as conn:
        rows, labels = await load_retention_rows(conn, now=now, orgs=orgs)
    selection = select_for_pruning(rows, policy, now)
    report = PruneReport(dry_run=dry_run, spared=selection.spared)
    if dry_run:
        report.items = [_item(labels[c.id], c) for c in selection.chosen]
        return report
    group_of = {r.id: r.group for r in rows}
    ordered = sorted(selection.chosen, key=lambda c: (group_of[c.id], c.id))
    size = max(1, batch_size)
    for start in range(0, len(ordered), size):
        batch = ordered[start : start + size]
        async with engine.begin() as conn:
            await lock_prune_scopes(conn, [labels[c.id].scope_key for c in batch])
            fresh, _ = await load_retention_rows(conn, now=now, ids=[c.id for c in batch])
            active = await active_group_counts(conn, now=now, groups=sorted({r.group for r in fresh}))
            done = await prune_memories(conn, recheck(batch, fresh, active, policy, now))
        report.items += [_item(p.label, PruneChoice(p.label.id, p.reason, p.rule)) for p in done.pruned]
        report.stale_marked += len(done.stale_marked)
        on_batch(len(report.items))
    report.items.sort(key=lambda i: i.id)
    return report


async def prune_memories(conn: AsyncConnection, choices: Sequence[PruneChoice]) -> PruneOutcome:
    """Delete the chosen memories in the caller's transaction, each with a PRUNED event (no content)."""
    outcome = PruneOutcome()
    if not choices:
        return outcome
    by_id = {c.id: c for c in choices}
    found = await lock_for_pruning(conn, sorted(by_id))
    if not found:
        return outcome
    gone = [r.id for r in found]
    sources = await derivation_sources_among(conn, gone)
    for r in found:
        choice = by_id[r.id]
        if choice.rule in MARKS_DERIVED_STALE and r.id in sources:
            outcome.stale_marked += await mark_derived_stale(
                conn,
                r.id,
                cause="pruned",
                reason=choice.reason,
                actor_id=_ACTOR_ID,
                actor_type=_ACTOR_TYPE,
                exclude=gone,
            )
    outcome.pruned = await delete_pruned(conn, found, by_id)
    return outcome
