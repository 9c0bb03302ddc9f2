"""Tasks and their staging log: the write path every agent uses."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response

from api import service
from api.deps import CurrentPrincipal, EngineDep, SettingsDep, TaskFor
from api.schemas import EntriesAck, EntriesIn, EntriesPage, EntryPublic, TaskCreate, TaskPublic
from governance.storage.staging import TaskInfo, read_entries

__all__ = ["router"]

router = APIRouter(prefix="/v1/tasks", tags=["staging"])


@router.post("", status_code=201, response_model=TaskPublic)
async def create_task(
    body: TaskCreate, request: Request, response: Response, principal: CurrentPrincipal
) -> TaskPublic:
    """Open a task; repeating the same request (same id and attributes) returns it with 200."""
    task, created = await service.open_task(request.app.state, principal, body)
    if not created:
        response.status_code = 200
    return task


@router.get("/{task_id}", response_model=TaskPublic)
async def show_task(task: Annotated[TaskInfo, Depends(TaskFor("read"))], engine: EngineDep) -> TaskPublic:
    """A task and its current status."""
    from governance.storage.staging import get_task

    async with engine.connect() as conn:
        fresh = await get_task(conn, task.id)
    return service.task_public(fresh or task)


@router.post("/{task_id}/entries", status_code=201, response_model=EntriesAck)
async def append(
    body: EntriesIn,
    request: Request,
    principal: CurrentPrincipal,
    task: Annotated[TaskInfo, Depends(TaskFor("write"))],
) -> EntriesAck:
    """Append one entry or a batch, all or nothing; each gets the task's next gapless sequence number."""
    return await service.append_entries(request.app.state, principal, task, body)


@router.get("/{task_id}/entries", response_model=EntriesPage)
async def list_entries(
    task: Annotated[TaskInfo, Depends(TaskFor("read"))],
    engine: EngineDep,
    settings: SettingsDep,
    after_seq: Annotated[
        int, Query(ge=0, le=2**62, description="Return entries with seq greater than this")
    ] = 0,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
) -> EntriesPage:
    """Read the staging log back in sequence order, a page at a time."""
    limit = min(limit, settings.max_page_size)
    async with engine.connect() as conn:
        rows = await read_entries(conn, task.id, after_seq=after_seq, limit=limit)
    entries = [
        EntryPublic(
            id=r.id,
            seq=r.seq,
            kind=r.kind,
            content=r.content,
            payload=r.payload,
            actor=r.actor,
            actor_type=r.actor_type,
            idempotency_key=r.idempotency_key,
            created_at=r.created_at,
        )
        for r in rows
    ]
    return EntriesPage(
        task_id=task.id, entries=entries, next_after_seq=entries[-1].seq if len(entries) == limit else None
    )
