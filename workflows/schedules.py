"""The Temporal Schedules loregate runs: the nightly retention (default 03:00 UTC, overlap SKIP) and the
reflection sweep (default 03:30 UTC, overlap SKIP: every project with pending episodes gets a reflection).

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
from workflows.reflection_contract import SWEEP_WORKFLOW_ID, SweepInput
from workflows.reflection_schedule import ReflectionSweepWorkflow
from workflows.retention import RETENTION_WORKFLOW_ID, RetentionInput, RetentionWorkflow

__all__ = [
    "RETENTION_SCHEDULE_ID",
    "REFLECTION_SCHEDULE_ID",
    "apply_schedules",
    "retention_schedule",
    "reflection_schedule",
]

RETENTION_SCHEDULE_ID = "loregate-retention"
REFLECTION_SCHEDULE_ID = "loregate-reflection"


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


def reflection_schedule(settings: Settings) -> Schedule:
    """The reflection sweep's schedule built from the settings."""
    return Schedule(
        action=ScheduleActionStartWorkflow(
            ReflectionSweepWorkflow.run,
            SweepInput(),
            id=SWEEP_WORKFLOW_ID,
            task_queue=settings.task_queue,
        ),
        spec=ScheduleSpec(cron_expressions=[settings.reflection_cron], time_zone_name="UTC"),
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP),
    )


async def _apply(client: Client, schedule_id: str, schedule: Schedule) -> None:
    try:
        await client.create_schedule(schedule_id, schedule)
    except ScheduleAlreadyRunningError:

        def _update(_: ScheduleUpdateInput) -> ScheduleUpdate:
            return ScheduleUpdate(schedule=schedule)

        await client.get_schedule_handle(schedule_id).update(_update)


async def apply_schedules(client: Client, settings: Settings) -> None:
    """Create the schedules, or bring existing ones up to date with the settings."""
    await _apply(client, RETENTION_SCHEDULE_ID, retention_schedule(settings))
    await _apply(client, REFLECTION_SCHEDULE_ID, reflection_schedule(settings))
