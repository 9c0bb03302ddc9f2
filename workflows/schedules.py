"""The Temporal Schedules loregate runs: the nightly retention (default 03:00 UTC, overlap SKIP).

`apply_schedules` is what `loregate up` and `loregate schedules apply` call: it creates the schedule, or
updates it in place when it exists, so changing `LOREGATE_RETENTION_CRON` and re-applying takes effect
without losing the schedule's history.
"""

from __future__ import annotations

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleUpdate,
    ScheduleUpdateInput,
)

from governance.config import Settings
from workflows.retention import RETENTION_WORKFLOW_ID, RetentionInput, RetentionWorkflow

__all__ = ["RETENTION_SCHEDULE_ID", "apply_schedules", "retention_schedule"]

RETENTION_SCHEDULE_ID = "loregate-retention"


def retention_schedule(settings: Settings) -> Schedule:
    """The nightly retention schedule built from the settings."""
    return Schedule(
        action=ScheduleActionStartWorkflow(
            RetentionWorkflow.run,
            RetentionInput(dry_run=False, policy=settings.retention_policy()),
            id=RETENTION_WORKFLOW_ID,
            task_queue=settings.task_queue,
        ),
        spec=ScheduleSpec(cron_expressions=[settings.retention_cron], time_zone_name="UTC"),
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP),
    )


async def apply_schedules(client: Client, settings: Settings) -> None:
    """Create the schedules, or bring existing ones up to date with the settings."""
    schedule = retention_schedule(settings)
    try:
        await client.create_schedule(RETENTION_SCHEDULE_ID, schedule)
    except ScheduleAlreadyRunningError:

        def _update(_: ScheduleUpdateInput) -> ScheduleUpdate:
            return ScheduleUpdate(schedule=schedule)

        await client.get_schedule_handle(RETENTION_SCHEDULE_ID).update(_update)
