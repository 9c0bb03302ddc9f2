"""The Temporal Schedules loregate runs: the nightly retention (default 03:00 UTC, overlap SKIP), the
reflection sweep (default 03:30 UTC, overlap SKIP: every project with pending episodes gets a reflection),
the project knowledge (hourly by default, overlap SKIP: every project's hotspots and statistics) and the
notification sweep (every minute, overlap SKIP: webhooks hear of what waits or failed).

`apply_schedules` is what `loregate up` and `loregate schedules apply` call: it creates the schedule, or
updates it in place when it exists, so changing `LOREGATE_RETENTION_CRON` and re-applying takes effect
without losing the schedule's history.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleUpdate,
    ScheduleUpdateInput,
)

from governance.config import Settings
from workflows.knowledge import KNOWLEDGE_WORKFLOW_ID, ProjectKnowledgeInput, ProjectKnowledgeWorkflow
from workflows.notifications import NOTIFICATION_WORKFLOW_ID, NotificationInput, NotificationWorkflow
from workflows.reflection_contract import SWEEP_WORKFLOW_ID, SweepInput
from workflows.reflection_schedule import ReflectionSweepWorkflow
from workflows.retention import RETENTION_WORKFLOW_ID, RetentionInput, RetentionWorkflow

__all__ = [
    "RETENTION_SCHEDULE_ID",
    "REFLECTION_SCHEDULE_ID",
    "NOTIFICATION_SCHEDULE_ID",
    "KNOWLEDGE_SCHEDULE_ID",
    "knowledge_schedule",
    "SCHEDULE_IDS",
    "notification_input",
    "notification_schedule",
    "apply_schedules",
    "retention_schedule",
    "reflection_schedule",
]

RETENTION_SCHEDULE_ID = "loregate-retention"
REFLECTION_SCHEDULE_ID = "loregate-reflection"
NOTIFICATION_SCHEDULE_ID = "loregate-notifications"
KNOWLEDGE_SCHEDULE_ID = "loregate-knowledge"
# every schedule `apply_schedules` makes
SCHEDULE_IDS = (
    RETENTION_SCHEDULE_ID,
    REFLECTION_SCHEDULE_ID,
    NOTIFICATION_SCHEDULE_ID,
    KNOWLEDGE_SCHEDULE_ID,
)


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


def knowledge_schedule(settings: Settings) -> Schedule:
    """The project knowledge's schedule (hotspots and statistics of every project) built from the settings."""
    return Schedule(
        action=ScheduleActionStartWorkflow(
            ProjectKnowledgeWorkflow.run,
            ProjectKnowledgeInput(),
            id=KNOWLEDGE_WORKFLOW_ID,
            task_queue=settings.task_queue,
        ),
        spec=ScheduleSpec(cron_expressions=[settings.knowledge_cron], time_zone_name="UTC"),
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP),
    )


def notification_input(settings: Settings) -> NotificationInput:
    """One notification sweep's input from the settings."""
    return NotificationInput(
        max_attempts=settings.webhook_max_attempts,
        attempt_timeout_seconds=settings.webhook_timeout_seconds,
        first_retry_seconds=settings.webhook_first_retry_seconds,
    )


def notification_schedule(settings: Settings) -> Schedule:
    """The notification sweep's schedule: every `notification_interval_seconds`, one sweep at a time."""
    return Schedule(
        action=ScheduleActionStartWorkflow(
            NotificationWorkflow.run,
            notification_input(settings),
            id=NOTIFICATION_WORKFLOW_ID,
            task_queue=settings.task_queue,
        ),
        spec=ScheduleSpec(
            intervals=[ScheduleIntervalSpec(every=timedelta(seconds=settings.notification_interval_seconds))]
        ),
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
    await _apply(client, NOTIFICATION_SCHEDULE_ID, notification_schedule(settings))
    await _apply(client, KNOWLEDGE_SCHEDULE_ID, knowledge_schedule(settings))
