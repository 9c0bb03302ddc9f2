"""The project knowledge's Temporal Schedule: created with the others, updated in place, and its action is
`ProjectKnowledgeWorkflow` on the worker's queue; a run over an org without project memory computes none."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client, ScheduleActionStartWorkflow, ScheduleOverlapPolicy
from temporalio.worker import Worker

from activities.knowledge import KnowledgeActivities
from governance.config import Settings
from workflows.knowledge import ProjectKnowledgeInput, ProjectKnowledgeWorkflow
from workflows.schedules import KNOWLEDGE_SCHEDULE_ID, SCHEDULE_IDS, apply_schedules


async def test_knowledge_schedule_created_and_updated_in_place(local_env: Any, settings: Settings) -> None:
    client: Client = local_env.client
    ours = settings.model_copy(update={"task_queue": f"knowledge-{uuid.uuid4()}"})
    await apply_schedules(client, ours)
    handle = client.get_schedule_handle(KNOWLEDGE_SCHEDULE_ID)
    try:
        described = await handle.describe()
        action = described.schedule.action
        assert isinstance(action, ScheduleActionStartWorkflow)
        assert action.workflow == "ProjectKnowledgeWorkflow" and action.task_queue == ours.task_queue
        assert described.schedule.policy.overlap == ScheduleOverlapPolicy.SKIP
        (calendar,) = described.schedule.spec.calendars
        assert calendar.minute[0].start == 17
        await apply_schedules(client, ours.model_copy(update={"knowledge_cron": "5 * * * *"}))
        (calendar,) = (await handle.describe()).schedule.spec.calendars
        assert calendar.minute[0].start == 5
    finally:
        for schedule_id in SCHEDULE_IDS:
            await client.get_schedule_handle(schedule_id).delete()


async def test_knowledge_workflow_over_an_org_without_project_memory_computes_nothing(
    local_env: Any, engine: AsyncEngine
) -> None:
    client: Client = local_env.client
    queue = f"knowledge-{uuid.uuid4()}"
    activities = KnowledgeActivities(engine)
    async with Worker(
        client, task_queue=queue, workflows=[ProjectKnowledgeWorkflow], activities=activities.functions()
    ):
        result = await client.execute_workflow(
            ProjectKnowledgeWorkflow.run,
            ProjectKnowledgeInput(orgs=[f"empty-{uuid.uuid4().hex[:8]}"]),
            id=f"knowledge-{uuid.uuid4()}",
            task_queue=queue,
        )
    assert result.projects == 0
