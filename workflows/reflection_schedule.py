"""ReflectionSweepWorkflow: the scheduled reflection (workflows/schedules.py), over every project.

The threshold trigger reflects a project as soon as enough important episodes wait; the sweep catches what
accumulated slowly: every project with at least `reflection_min_episodes` pending episodes gets a
`ReflectionWorkflow` (one per project: a project already reflecting is skipped). The reflections are
started as abandoned children, so they outlive the sweep (they may wait days for an approval).
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.workflow import ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from activities.reflection import DueScope, ReflectionActivities, ScopesInput
    from workflows.reflection import REFLECTION_DB_RETRY, ReflectionWorkflow
    from workflows.reflection_contract import (
        ReflectionInput,
        ReflectionTrigger,
        SweepInput,
        SweepResult,
        workflow_id_for,
    )

__all__ = ["ReflectionSweepWorkflow"]


@workflow.defn
class ReflectionSweepWorkflow:
    """List the projects with pending episodes, start a reflection for each."""

    @workflow.run
    async def run(self, data: SweepInput) -> SweepResult:
        scopes: list[DueScope] = await workflow.execute_activity_method(
            ReflectionActivities.due_scopes,
            ScopesInput(workflow.info().workflow_id, data.orgs),
            start_to_close_timeout=timedelta(seconds=60),
            retry_policy=REFLECTION_DB_RETRY,
        )
        started = 0
        for scope in scopes:
            try:
                await workflow.start_child_workflow(
                    ReflectionWorkflow.run,
                    ReflectionInput(scope.org, scope.project, ReflectionTrigger.SCHEDULE.value),
                    id=workflow_id_for(scope.org, scope.project),
                    task_queue=workflow.info().task_queue,
                    parent_close_policy=ParentClosePolicy.ABANDON,
                )
                started += 1
            except WorkflowAlreadyStartedError:
                continue  # that project is reflecting already
        workflow.set_current_details(f"{len(scopes)} projects due, {started} reflections started")
        return SweepResult(due=len(scopes), started=started)
