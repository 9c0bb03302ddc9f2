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
# what a start may ask: entries per list of a snapshot, orgs named
MAX_SNAPSHOT_LIMIT = 100
MAX_ORGS = 1000


@dataclass(frozen=True)
class ProjectKnowledgeInput:
    """Which orgs (empty: every org) and how many entries each list of a snapshot keeps."""

    orgs: list[str] = field(default_factory=list)
    limit: int = 10

    def __post_init__(self) -> None:
        # a raw start asking a million entries per list would write snapshots no page reads; it fails unread
        # (workflows/input_decoding)
        if not 1 <= self.limit <= MAX_SNAPSHOT_LIMIT:
            raise ValueError(f"limit must be 1 to {MAX_SNAPSHOT_LIMIT}, not {self.limit}")
        if len(self.orgs) > MAX_ORGS:
            raise ValueError(f"orgs names at most {MAX_ORGS} orgs, not {len(self.orgs)}")


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
