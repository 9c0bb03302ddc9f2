"""RetentionWorkflow: the nightly upkeep of published memory (docs/architecture.md).

Started by the `loregate-retention` Temporal Schedule (see workflows/schedules.py), or by hand. It decays
trust, expires memories past `expires_at`, then prunes what the retention rules choose (governance/
retention.py: old or low-reward episodes, distilled episodes, failing skills, memories retrieved often and
judged useless, long-inactive rows) while keeping at least N per (org, project, scope, type). Then
staging: it creates the monthly partitions of this month and the next two
(dropping old ones the archive emptied), and archives the staging of tasks whose promotion ended more
than `staging_archive_after_days` ago, a batch of tasks per activity call until none is left. Each step is
an idempotent activity; a dry run reports the counts and writes nothing. The clock is the workflow's, so a
replay or a late start works as of the scheduled run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from activities.retention import (
        ArchiveInput,
        ArchiveResult,
        PartitionsResult,
        PolicyCheckInput,
        PruneInput,
        PruneResult,
        RetentionActivities,
        RetentionStepInput,
    )
    from governance.retention import RetentionPolicy

__all__ = [
    "RetentionWorkflow",
    "RetentionInput",
    "RetentionResult",
    "RETENTION_RETRY",
    "RETENTION_WORKFLOW_ID",
    "POLICY_CHECK_PATCH",
]

RETENTION_WORKFLOW_ID = "loregate-retention"
# set-based statements over the whole table: give them time, retry a few times, then fail the run
RETENTION_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=2), maximum_interval=timedelta(minutes=1), maximum_attempts=5
)
STEP_TIMEOUT = timedelta(minutes=10)
# the archive heartbeats after each chunk (a few seconds each): a dead worker is noticed after this
ARCHIVE_HEARTBEAT = timedelta(minutes=1)
# runs that started before the staging steps existed replay without them
_STAGING_PATCH = "staging-partitions-and-archive"
# runs from then on first check their policy against the worker's configured one (a start from the Temporal
# UI or the CLI may carry any numbers): a bolder one fails the run before anything changes; a dry run,
# which changes nothing, may try any policy. Runs that began before replay without the check
POLICY_CHECK_PATCH = "retention-policy-check"


@dataclass
class RetentionInput:
    """One run: its retention policy (governance/retention.py) and `orgs`, the tenants it covers."""

    dry_run: bool = False
    policy: RetentionPolicy = field(default_factory=RetentionPolicy)
    orgs: list[str] | None = None


@dataclass
class RetentionResult:
    """What the run did (or would do, in a dry run)."""

    dry_run: bool
    decayed: int
    expired: int
    pruned: int
    pruned_ids: list[str] = field(default_factory=list)  # the first 200; PRUNED events name every one
    pruned_by_rule: dict[str, int] = field(default_factory=dict)
    pruned_spared: int = 0  # candidates kept because at least `keep_per_group` must stay
    stale_marked: int = 0  # survivors marked stale because what they build on was pruned
    staging_partitions_created: list[str] = field(default_factory=list)
    staging_partitions_dropped: list[str] = field(default_factory=list)
    archived_tasks: int = 0  # tasks whose staging went to archive files (or would, in a dry run)
    archived_entries: int = 0
    archive_files: list[str] = field(default_factory=list)  # the first few


@workflow.defn(name="RetentionWorkflow")
class RetentionWorkflow:
    """Decay, expire, prune — in that order, so an expiring memory is not decayed after it is gone."""

    @workflow.run
    async def run(self, params: RetentionInput) -> RetentionResult:
        now = workflow.now()
        if workflow.patched(POLICY_CHECK_PATCH) and not params.dry_run:
            info = workflow.info()
            await workflow.execute_activity_method(
                RetentionActivities.check_policy,
                PolicyCheckInput(info.workflow_id, info.run_id, params.policy),
                start_to_close_timeout=STEP_TIMEOUT,
                retry_policy=RETENTION_RETRY,
            )
        step = RetentionStepInput(now=now, dry_run=params.dry_run, orgs=params.orgs)
        decayed: int = await workflow.execute_activity_method(
            RetentionActivities.decay, step, start_to_close_timeout=STEP_TIMEOUT, retry_policy=RETENTION_RETRY
        )
        expired: int = await workflow.execute_activity_method(
            RetentionActivities.expire,
            step,
            start_to_close_timeout=STEP_TIMEOUT,
            retry_policy=RETENTION_RETRY,
        )
        pruned: PruneResult = await workflow.execute_activity_method(
            RetentionActivities.prune,
            PruneInput(now=now, dry_run=params.dry_run, policy=params.policy, orgs=params.orgs),
            start_to_close_timeout=STEP_TIMEOUT,
            retry_policy=RETENTION_RETRY,
        )
        result = RetentionResult(
            dry_run=params.dry_run,
            decayed=decayed,
            expired=expired,
            pruned=pruned.pruned,
            pruned_ids=pruned.ids,
            pruned_by_rule=pruned.by_rule,
            pruned_spared=pruned.spared,
            stale_marked=pruned.stale_marked,
        )
        if workflow.patched(_STAGING_PATCH):
            await self._staging(params, step, result)
        return result

    async def _staging(
        self, params: RetentionInput, step: RetentionStepInput, result: RetentionResult
    ) -> None:
        partitions: PartitionsResult = await workflow.execute_activity_method(
            RetentionActivities.staging_partitions,
            step,
            start_to_close_timeout=STEP_TIMEOUT,
            retry_policy=RETENTION_RETRY,
        )
        result.staging_partitions_created = partitions.created
        result.staging_partitions_dropped = partitions.dropped
        archive = ArchiveInput(
            now=step.now,
            dry_run=params.dry_run,
            after_days=params.policy.staging_archive_after_days,
            orgs=params.orgs,
        )
        while True:
            batch: ArchiveResult = await workflow.execute_activity_method(
                RetentionActivities.archive_staging,
                archive,
                start_to_close_timeout=STEP_TIMEOUT,
                heartbeat_timeout=ARCHIVE_HEARTBEAT,
                retry_policy=RETENTION_RETRY,
            )
            result.archived_tasks += batch.tasks
            result.archived_entries += batch.entries
            result.archive_files += batch.files[: max(0, 20 - len(result.archive_files))]
            # a dry run counts one batch (it archives nothing, so the next call would count the same)
            if not batch.more or params.dry_run:
                break
