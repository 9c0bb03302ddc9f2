"""A task's working memory, and what happened around a file (recall by code location)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from api.http.deps import CurrentPrincipal, Resources, TaskFor
from api.schemas.working_memory import (
    NOT_BLANK,
    FileHistoryPublic,
    ProjectStatsPublic,
    WorkingMemoryIn,
    WorkingMemoryPublic,
)
from api.services import working_memory
from governance.staging import TASK_ID_PATTERN
from governance.storage.staging import TaskInfo

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["working memory"])


@router.get("/tasks/{task_id}/working-memory", response_model=WorkingMemoryPublic)
async def show(
    task: Annotated[TaskInfo, Depends(TaskFor("read"))], resources: Resources
) -> WorkingMemoryPublic:
    """The task's hypotheses, files and symbols, latest errors, decisions and tool calls, and counts."""
    return await working_memory.show(resources, task)


@router.post("/tasks/{task_id}/working-memory", response_model=WorkingMemoryPublic)
async def update(
    body: WorkingMemoryIn,
    resources: Resources,
    principal: CurrentPrincipal,
    task: Annotated[TaskInfo, Depends(TaskFor("write"))],
) -> WorkingMemoryPublic:
    """Track files and symbols and set hypotheses (one at 0.9 or more becomes a decision entry)."""
    return await working_memory.update(resources, principal, task, body)


@router.get("/files/history", response_model=FileHistoryPublic)
async def file_history(
    resources: Resources,
    principal: CurrentPrincipal,
    path: Annotated[str, Query(min_length=1, max_length=400, pattern=NOT_BLANK, description="A file path")],
    task_id: Annotated[
        str, Query(max_length=128, pattern=TASK_ID_PATTERN, description="The reader's task; fixes its tenant")
    ],
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> FileHistoryPublic:
    """Episodes, bug patterns, rules and decisions about a file (from tasks that touched it), newest first."""
    return await working_memory.file_history(resources, principal, task_id, path, limit=limit)


@router.get("/projects/stats", response_model=ProjectStatsPublic)
async def project_stats(
    resources: Resources,
    principal: CurrentPrincipal,
    task_id: Annotated[
        str,
        Query(max_length=128, pattern=TASK_ID_PATTERN, description="The reader's task; fixes its project"),
    ],
    limit: Annotated[int, Query(ge=1, le=100)] = 10,
) -> ProjectStatsPublic:
    """The project in numbers: tasks, success rate, most-touched files, hotspots, most common errors."""
    return await working_memory.project_stats(resources, principal, task_id, limit=limit)
