"""ProjectKnowledgeWorkflow: the scheduled computation of every project's hotspots and statistics.

Run by the `loregate-knowledge` schedule (workflows/schedules.py, hourly by default,
`LOREGATE_KNOWLEDGE_CRON`), or by hand (`temporal workflow start --type ProjectKnowledgeWorkflow`). Its
history holds the number of projects only; the snapshots are rows of `project_knowledge`, which
`GET /v1/projects/{project}/knowledge`, `loregate knowledge` and the console's project page read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from activities.knowledge import KnowledgeActivities, KnowledgeInput, KnowledgeResult

__all__ = [
    "KNOWLEDGE_WORKFLOW_ID",
    "KNOWLEDGE_RETRY",
    "ProjectKnowledgeInput",
    "ProjectKnowledgeResult",
    "ProjectKnowledgeWorkflow",
]

KNOWLEDGE_WORKFLOW_ID = "loregate-project-knowledge"
KNOWLEDGE_RETRY = RetryPolicy(initial_interval=timedelta(seconds=2), maximum_attempts=5)


@dataclass(frozen=True)
class ProjectKnowledgeInput:
    """Which orgs (empty: every org) and how many entries each list of a snapshot keeps."""

    orgs: list[str] = field(default_factory=list)
    limit: int = 10


@dataclass(frozen=True)
class ProjectKnowledgeResult:
    """How many projects got a new snapshot."""

    projects: int


@workflow.defn
class ProjectKnowledgeWorkflow:
    """Compute a snapshot of every project's knowledge."""

    @workflow.run
    async def run(self, data: ProjectKnowledgeInput) -> ProjectKnowledgeResult:
        result: KnowledgeResult = await workflow.execute_activity_method(
            KnowledgeActivities.refresh_project_knowledge,
            KnowledgeInput(workflow.info().workflow_id, list(data.orgs), data.limit),
            start_to_close_timeout=timedelta(minutes=30),
            heartbeat_timeout=timedelta(minutes=2),
            retry_policy=KNOWLEDGE_RETRY,
        )
        workflow.set_current_details(f"{result.projects} projects computed")
        return ProjectKnowledgeResult(projects=result.projects)
