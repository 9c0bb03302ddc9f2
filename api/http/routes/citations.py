"""Citation counts over HTTP: declare the memories a task used, who used a memory, the most used ones."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query

from api.http.deps import CurrentPrincipal, Resources, TaskFor
from api.schemas.citations import CitationsAck, CitationsIn, MostUsedPublic, UsedByPublic
from api.services import citations
from governance.storage.staging import TaskInfo

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["citations"])

WritableTask = Annotated[TaskInfo, Depends(TaskFor("write"))]


@router.post("/tasks/{task_id}/citations", status_code=201, response_model=CitationsAck)
async def record_citations(
    body: CitationsIn, task: WritableTask, principal: CurrentPrincipal, resources: Resources
) -> CitationsAck:
    """Declare the memories this task used (counted once per task, caller and memory)."""
    return await citations.record_citations(resources, principal, task, body)


@router.get("/memories/{ref}/used-by", response_model=UsedByPublic)
async def used_by(
    ref: Annotated[str, Path(description="A memory's uuid or citation", min_length=1, max_length=64)],
    principal: CurrentPrincipal,
    resources: Resources,
) -> UsedByPublic:
    """The tasks that cited or declared this memory (tasks the caller may not read are only counted)."""
    return await citations.used_by(resources, principal, ref)


@router.get("/citations/most-used", response_model=MostUsedPublic)
async def most_used(
    task_id: Annotated[str, Query(max_length=128)],
    principal: CurrentPrincipal,
    resources: Resources,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> MostUsedPublic:
    """The memories this task sees, most used by principals independent of them first."""
    return await citations.most_used(resources, principal, task_id, limit)
