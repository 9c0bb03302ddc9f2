"""Tasks and their staging log: the write path every agent uses."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response

from api.deps import AuthorizerDep, CurrentPrincipal, EngineDep, SettingsDep, TaskFor
from api.metrics import ENTRIES_APPENDED, ENTRIES_REPLAYED
from api.schemas import EntriesAck, EntriesIn, EntriesPage, EntryAck, EntryPublic, TaskCreate, TaskPublic
from governance.scopes import Scope
from governance.staging import EntryDraft, validate_batch
from governance.storage.staging import TaskInfo, append_entries, open_task, read_entries

__all__ = ["router"]

router = APIRouter(prefix="/v1/tasks", tags=["staging"])


def _public(task: TaskInfo) -> TaskPublic:
    return TaskPublic(
        task_id=task.id,
        org=task.org,
        project=task.project,
        worktree=task.worktree,
        description=task.description,
        status=task.status,
        created_by=task.created_by,
        created_at=task.created_at,
        promotion_workflow_id=task.promotion_workflow_id,
    )


@router.post("", status_code=201, response_model=TaskPublic)
async def create_task(
    body: TaskCreate,
    response: Response,
    principal: CurrentPrincipal,
    authorizer: AuthorizerDep,
    engine: EngineDep,
) -> TaskPublic:
    """Open a task; repeating the same request (same id and attributes) returns it with 200."""
    import uuid

    authorizer.check(principal, org=body.org, project=body.project, scope=Scope.TASK, action="open")
    task, created = await open_task(
        engine,
        task_id=body.task_id or f"task-{uuid.uuid4().hex}",
        org=body.org,
        project=body.project,
        worktree=body.worktree,
        description=body.description,
        created_by=principal.id,
    )
    if not created:
        response.status_code = 200
    return _public(task)


@router.get("/{task_id}", response_model=TaskPublic)
async def show_task(task: Annotated[TaskInfo, Depends(TaskFor("read"))], engine: EngineDep) -> TaskPublic:
    """A task and its current status."""
    from governance.storage.staging import get_task

    async with engine.connect() as conn:
        fresh = await get_task(conn, task.id)
    return _public(fresh or task)


@router.post("/{task_id}/entries", status_code=201, response_model=EntriesAck)
async def append(
    body: EntriesIn,
    request: Request,
    principal: CurrentPrincipal,
    task: Annotated[TaskInfo, Depends(TaskFor("write"))],
    engine: EngineDep,
    settings: SettingsDep,
) -> EntriesAck:
    """Append one entry or a batch, all or nothing; each gets the task's next gapless sequence number."""
    drafts = [
        EntryDraft(kind=e.kind, content=e.content, payload=e.payload, idempotency_key=e.idempotency_key)
        for e in body.entries
    ]
    validate_batch(drafts, max_entry_bytes=settings.max_entry_bytes, max_batch_entries=settings.max_batch_entries)
    results = await append_entries(engine, task.id, principal, drafts)
    replayed = sum(r.replayed for r in results)
    ENTRIES_APPENDED.inc(len(results) - replayed)
    ENTRIES_REPLAYED.inc(replayed)
    return EntriesAck(
        task_id=task.id, entries=[EntryAck(id=r.id, seq=r.seq, replayed=r.replayed) for r in results]
    )


@router.get("/{task_id}/entries", response_model=EntriesPage)
async def list_entries(
    task: Annotated[TaskInfo, Depends(TaskFor("read"))],
    engine: EngineDep,
    settings: SettingsDep,
    after_seq: Annotated[int, Query(ge=0, le=2**62, description="Return entries with seq greater than this")] = 0,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
) -> EntriesPage:
    """Read the staging log back in sequence order, a page at a time."""
    limit = min(limit, settings.max_page_size)
    async with engine.connect() as conn:
        rows = await read_entries(conn, task.id, after_seq=after_seq, limit=limit)
    entries = [
        EntryPublic(
            id=r.id, seq=r.seq, kind=r.kind, content=r.content, payload=r.payload, actor=r.actor,
            actor_type=r.actor_type, idempotency_key=r.idempotency_key, created_at=r.created_at,
        )
        for r in rows
    ]
    return EntriesPage(
        task_id=task.id, entries=entries, next_after_seq=entries[-1].seq if len(entries) == limit else None
    )
