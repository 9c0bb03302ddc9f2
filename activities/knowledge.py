"""Project knowledge: every project's hotspots and statistics computed from its published memory.

One activity, run by `ProjectKnowledgeWorkflow` on a schedule: for each project with active project-scope
memory, a snapshot (governance/storage/knowledge.py) in its own transaction, heartbeating the projects
done. It carries ids and counts only; the snapshots live in Postgres.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio import activity

from governance.storage.knowledge import compute_snapshot, projects_with_memory, save_snapshot

__all__ = ["KnowledgeInput", "KnowledgeResult", "KnowledgeActivities"]


@dataclass(frozen=True)
class KnowledgeInput:
    """Which orgs (empty: all) and how many files and errors each list keeps; the run's workflow id."""

    workflow_id: str
    orgs: list[str] = field(default_factory=list)
    limit: int = 10


@dataclass(frozen=True)
class KnowledgeResult:
    """How many projects got a new snapshot."""

    projects: int


class KnowledgeActivities:
    """The project knowledge's I/O; one instance per worker."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine

    @activity.defn
    async def refresh_project_knowledge(self, data: KnowledgeInput) -> KnowledgeResult:
        """A new snapshot for every project with published project-scope memory (one transaction each: a
        retry recomputes, and a snapshot is only ever a newer reading of the same memory)."""
        async with self._engine.connect() as conn:
            projects = await projects_with_memory(conn, data.orgs or None)
        for done, (org, project) in enumerate(projects, start=1):
            async with self._engine.begin() as conn:
                snapshot = await compute_snapshot(conn, org=org, project=project, limit=max(1, data.limit))
                await save_snapshot(conn, org=org, project=project, snapshot=snapshot)
            activity.heartbeat(done)
        return KnowledgeResult(projects=len(projects))

    def functions(self) -> list[Callable[..., Any]]:
        """The activities to register on a worker."""
        return [self.refresh_project_knowledge]
