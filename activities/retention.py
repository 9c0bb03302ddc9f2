"""Activities of the nightly retention: decay, expire, prune, staging partitions and the staging archive.

Each step is idempotent by construction (decay is computed from the last validation, expiry and pruning
only touch rows still due), so Temporal may retry them freely. Decay and expiry run in one transaction each;
pruning reads every memory (a page per statement), chooses (governance/retention.py), then deletes a batch
per transaction, each batch checked again under its scopes' locks (`prune_report`, which
`loregate retention run` calls directly).

The staging archive works a chunk at a time, each in its own transaction: lock the task row, read the next
chunk of its entries, write them to their archive file (governance/staging_archive.py: the same chunk is
always the same file with the same bytes, written to a temporary name and renamed, 0600), delete them and
record a STAGING_ARCHIVED event naming the file, its sha256 and the count, then commit. A retry after a
commit resumes after that chunk (`tasks.archived_next_seq`); a retry after a crash before it rewrites the
same file and deletes the same rows.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio import activity
from temporalio.exceptions import ApplicationError

from governance.errors import InvalidInput
from governance.operations.retention import PrunedItem, PruneReport, prune
from governance.retention import RetentionPolicy, bolder_than
from governance.staging_archive import archive_path, encode_chunk
from governance.storage.events import EventType, record_event
from governance.storage.retention import decay_confidences, expire_due
from governance.storage.staging_archive import (
    archivable_tasks,
    delete_archived,
    drop_empty_partitions,
    ensure_staging_partitions,
    entries_to_archive,
    lock_archivable_task,
    skip_missing,
)

__all__ = [
    "RetentionActivities",
    "RetentionStepInput",
    "PruneInput",
    "PolicyCheckInput",
    "POLICY_REFUSED",
    "PruneResult",
    "PrunedItem",
    "PruneReport",
    "RESULT_IDS",
    "PartitionsResult",
    "ArchiveInput",
    "ArchiveResult",
    "ARCHIVE_CHUNK",
    "write_private",
    "months_ahead",
]

# staging entries per archive file and transaction
ARCHIVE_CHUNK = 5000
# entries one activity call archives before it hands back to the workflow (which calls again)
_ARCHIVE_BUDGET = 200_000
_ACTOR_ID, _ACTOR_TYPE = "system:retention", "system"
# the failure type of a run whose policy is bolder than the worker's configuration
POLICY_REFUSED = "StartRefused"
# pruned ids a PruneResult names (it lands in the workflow's history); the PRUNED events name them all
RESULT_IDS = 200


@dataclass
class RetentionStepInput:
    """One decay or expiry pass as of `now` (the workflow's clock); `orgs` None means every tenant."""

    now: datetime
    dry_run: bool
    orgs: list[str] | None = None


@dataclass
class PruneInput:
    """One pruning pass with the numbers of the run; `batch_size` memories are deleted per transaction."""

    now: datetime
    dry_run: bool
    policy: RetentionPolicy = field(default_factory=RetentionPolicy)
    orgs: list[str] | None = None
    batch_size: int = 500


@dataclass
class PolicyCheckInput:
    """The policy a run was started with, checked against the worker's configured one."""

    workflow_id: str
    run_id: str
    policy: RetentionPolicy = field(default_factory=RetentionPolicy)


@dataclass
class PruneResult:
    """How many memories went (or would go, in a dry run): the first `RESULT_IDS` ids with their reasons,
    counts by rule, candidates keep-at-least-N spared, and survivors marked stale."""

    pruned: int
    ids: list[str] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)
    by_rule: dict[str, int] = field(default_factory=dict)
    spared: int = 0
    stale_marked: int = 0


@dataclass
class PartitionsResult:
    """The staging partitions this run created (this month and the next two) and the empty ones it dropped."""

    created: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)


@dataclass
class ArchiveInput:
    """Archive the staging of tasks whose promotion ended more than `after_days` before `now`."""

    now: datetime
    dry_run: bool
    after_days: int = RetentionPolicy.staging_archive_after_days
    orgs: list[str] | None = None
    max_tasks: int = 200  # per call: the workflow calls again while `more`


@dataclass
class ArchiveResult:
    """Tasks and entries archived by this call (or due, in a dry run), the first files; `more`: call again."""

    tasks: int
    entries: int
    files: list[str] = field(default_factory=list)
    more: bool = False


def _result(report: PruneReport) -> PruneResult:
    """The short result the workflow's history holds: counts and the first `RESULT_IDS` ids."""
    first = report.items[:RESULT_IDS]
    return PruneResult(
        pruned=len(report.items),
        ids=[i.id for i in first],
        reasons={i.id: i.reason for i in first},
        by_rule=report.by_rule(),
        spared=report.spared,
        stale_marked=report.stale_marked,
    )


def _heartbeat(done: int) -> None:
    if activity.in_activity():  # `loregate retention run` runs it outside a worker
        activity.heartbeat(done)


def months_ahead(now: datetime, count: int = 3) -> list[datetime]:
    """The first instants (UTC) of the month of `now` and the `count - 1` months after it."""
    first = now.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    months = []
    for _ in range(count):
        months.append(first)
        first = (first + timedelta(days=32)).replace(day=1)
    return months


def write_private(path: Path, data: bytes) -> None:
    """Write `data` to `path` atomically (temporary name, fsync, rename), owner-only: dirs 0700, file 0600."""
    missing = [p for p in (path.parent, *path.parent.parents) if not p.exists()]
    path.parent.mkdir(parents=True, exist_ok=True)
    for created in missing:
        os.chmod(created, 0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


class RetentionActivities:
    """Retention steps over one database engine (and the staging archive's directory)."""

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        archive_dir: Path | None = None,
        archive_chunk: int = ARCHIVE_CHUNK,
        policy: RetentionPolicy | None = None,
    ) -> None:
        self._engine = engine
        self._archive_dir = archive_dir
        self._archive_chunk = max(1, archive_chunk)
        # the configured policy (the worker's settings): no run prunes more than it; None checks nothing
        # (`loregate retention run` prunes with the settings themselves)
        self._policy = policy

    def functions(self) -> list[Callable[..., Any]]:
        """Every retention activity, for a worker."""
        return [
            self.check_policy,
            self.decay,
            self.expire,
            self.prune,
            self.staging_partitions,
            self.archive_staging,
        ]

    @activity.defn(name="retention_check_policy")
    async def check_policy(self, data: PolicyCheckInput) -> None:
        """Refuse a run whose policy prunes more than the configured one, recorded as a REJECTED event.

        The schedule carries the settings' policy; a start from the Temporal UI or `temporal workflow
        start` carries whatever its sender typed. Nothing proves who that was, so the audit trail names
        nobody, and the run fails before it decays, expires, prunes or archives anything.
        """
        if self._policy is None:
            return
        bolder = bolder_than(data.policy, self._policy)
        if not bolder:
            return
        reason = "retention refused: its policy prunes more than the configured one: " + ", ".join(bolder)
        async with self._engine.begin() as conn:
            await record_event(
                conn,
                event_type=EventType.REJECTED,
                actor_id=None,
                actor_type=None,
                workflow_id=data.workflow_id,
                reason=reason,
                payload={"refused": "retention", "channel": "start", "checked": True, "bolder": bolder},
                idempotency_key=f"{data.workflow_id}:{data.run_id}:refused-retention",
                if_absent=True,
            )
        raise ApplicationError(reason, type=POLICY_REFUSED, non_retryable=True)

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
        """Prune what the retention rules choose (governance/retention.py), a batch per transaction."""
        return _result(await self.prune_report(step))

    async def prune_report(self, step: PruneInput) -> PruneReport:
        """The pruning pass in full (governance/operations/retention.py), heartbeating after each batch."""
        return await prune(
            self._engine,
            now=step.now,
            policy=step.policy,
            orgs=step.orgs,
            dry_run=step.dry_run,
            batch_size=step.batch_size,
            on_batch=_heartbeat,
        )

    @activity.defn(name="retention_staging_partitions")
    async def staging_partitions(self, step: RetentionStepInput) -> PartitionsResult:
        """Create staging partitions for this month and the next two; drop empty ones before last month."""
        if step.dry_run:
            return PartitionsResult()
        months = months_ahead(step.now)
        last_month = (months[0] - timedelta(days=1)).replace(day=1)
        async with self._engine.begin() as conn:
            created = await ensure_staging_partitions(conn, months)
            dropped = await drop_empty_partitions(conn, before=last_month)
        return PartitionsResult(created=created, dropped=dropped)

    @activity.defn(name="retention_archive_staging")
    async def archive_staging(self, data: ArchiveInput) -> ArchiveResult:
        """Archive, then delete, the staging of tasks whose promotion ended `after_days` ago, by chunks."""
        cutoff = data.now - timedelta(days=data.after_days)
        async with self._engine.connect() as conn:
            due = await archivable_tasks(
                conn, ended_before=cutoff, orgs=data.orgs, limit=max(1, data.max_tasks) + 1
            )
        more = len(due) > data.max_tasks
        due = due[: data.max_tasks]
        if data.dry_run:
            return ArchiveResult(tasks=len(due), entries=sum(t.pending for t in due), more=more)
        if due and self._archive_dir is None:
            raise ApplicationError(
                "no staging archive directory configured", type=InvalidInput.__name__, non_retryable=True
            )
        result = ArchiveResult(tasks=0, entries=0, more=more)
        for task in due:
            if result.entries >= _ARCHIVE_BUDGET:
                result.more = True
                break
            archived = await self._archive_task(task.task_id, cutoff, result)
            result.tasks += 1 if archived else 0
        return result

    async def _archive_task(self, task_id: str, cutoff: datetime, result: ArchiveResult) -> bool:
        assert self._archive_dir is not None
        archived = False
        while True:
            async with self._engine.begin() as conn:
                task = await lock_archivable_task(conn, task_id, ended_before=cutoff)
                if task is None:  # archived meanwhile, or a promotion started: leave it
                    return archived
                entries = await entries_to_archive(conn, task_id, limit=self._archive_chunk)
                if not entries:
                    await skip_missing(conn, task_id)
                    return archived
                chunk = encode_chunk(entries)
                relative = archive_path(task.org, task_id, chunk.first_seq, chunk.last_seq)
                path = self._archive_dir / relative
                await asyncio.to_thread(write_private, path, chunk.data)
                deleted = await delete_archived(
                    conn, task_id, first_seq=chunk.first_seq, last_seq=chunk.last_seq
                )
                if deleted != chunk.count:  # cannot happen under the task's lock; never delete unarchived
                    raise ApplicationError(
                        f"archived {chunk.count} entries of {task_id} but deleting {deleted}"
                    )
                await record_event(
                    conn,
                    event_type=EventType.STAGING_ARCHIVED,
                    actor_id=_ACTOR_ID,
                    actor_type=_ACTOR_TYPE,
                    task_id=task_id,
                    reason=f"archived {chunk.count} staging entries (seq {chunk.first_seq}-{chunk.last_seq}) "
                    f"to {path}",
                    payload={
                        "path": str(path),
                        "relative_path": str(relative),
                        "host": socket.gethostname(),
                        "count": chunk.count,
                        "sha256": chunk.sha256,
                        "bytes": len(chunk.data),
                        "first_seq": chunk.first_seq,
                        "last_seq": chunk.last_seq,
                        "entry_ids": [entries[0].id, entries[-1].id],
                    },
                    idempotency_key=f"staging-archive:{task_id}:{chunk.first_seq}-{chunk.last_seq}",
                    if_absent=True,
                )
            archived = True
            result.entries += chunk.count
            if len(result.files) < 20:
                result.files.append(str(path))
            if activity.in_activity():  # `loregate staging archive` runs it outside a worker
                activity.heartbeat(result.entries)
