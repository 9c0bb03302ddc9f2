"""Tasks and their staging log: the write path every agent uses."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query, Response

from api.http.deps import CurrentPrincipal, Resources, TaskFor
from api.http.idempotency import IdempotencyKeyHeader, entries_with_header_key
from api.schemas.staging import EntriesAck, EntriesIn, EntriesPage, TaskCreate, TaskPublic
from api.services import staging
from api.services.gateway import presented_key_hash
from governance.storage.staging import TaskInfo

__all__ = ["router"]

router = APIRouter(prefix="/v1/tasks", tags=["staging"])


@router.post("", status_code=201, response_model=TaskPublic)
async def create_task(
    body: TaskCreate, response: Response, resources: Resources, principal: CurrentPrincipal
) -> TaskPublic:
    """Open a task; repeating the same request (same id and attributes) returns it with 200."""
    task, created = await staging.open_task(resources, principal, body)
    if not created:
        response.status_code = 200
    return task


@router.get("/{task_id}", response_model=TaskPublic)
async def show_task(task: Annotated[TaskInfo, Depends(TaskFor("read"))], resources: Resources) -> TaskPublic:
    """A task and its current status."""
    return await staging.show_task(resources, task)


@router.post("/{task_id}/entries", status_code=201, response_model=EntriesAck)
async def append(
    body: EntriesIn,
    resources: Resources,
    principal: CurrentPrincipal,
    task: Annotated[TaskInfo, Depends(TaskFor("write"))],
    authorization: Annotated[str | None, Header(include_in_schema=False)] = None,
    idempotency_key: IdempotencyKeyHeader = None,
) -> Response:
    """Append one entry or a batch, all or nothing; each gets the task's next gapless sequence number."""
    body = entries_with_header_key(body, idempotency_key)
    key_hash = presented_key_hash(authorization)
    ack = await staging.append_entries(resources, principal, task, body, key_hash=key_hash)
    # serialised once, by pydantic's core: as a model, FastAPI would dump, validate and encode it again
    return Response(content=ack.model_dump_json(), status_code=201, media_type="application/json")


@router.get("/{task_id}/entries", response_model=EntriesPage)
async def list_entries(
    task: Annotated[TaskInfo, Depends(TaskFor("read"))],
    resources: Resources,
    after_seq: Annotated[
        int, Query(ge=0, le=2**62, description="Return entries with seq greater than this")
    ] = 0,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
) -> EntriesPage:
    """Read the staging log back in sequence order, a page at a time."""
    return await staging.list_entries(resources, task, after_seq=after_seq, limit=limit)
