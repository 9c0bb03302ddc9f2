"""Circular-fix detection over HTTP: record an attempted approach, ask whether a proposal already failed."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends

from api.http.deps import CurrentPrincipal, Resources, TaskFor
from api.http.idempotency import IdempotencyKeyHeader, with_header_key
from api.schemas.approaches import ApproachIn, ApproachPublic, CheckIn, CheckPublic
from api.services import approaches
from governance.storage.staging import TaskInfo

__all__ = ["router"]

router = APIRouter(prefix="/v1/tasks", tags=["approaches"])

# both need `write` on the task: the check counts refusals and may mark the subtask stuck
WritableTask = Annotated[TaskInfo, Depends(TaskFor("write"))]


@router.post("/{task_id}/approaches", status_code=201, response_model=ApproachPublic)
async def record_approach(
    body: ApproachIn,
    task: WritableTask,
    principal: CurrentPrincipal,
    resources: Resources,
    idempotency_key: IdempotencyKeyHeader = None,
) -> ApproachPublic:
    """Record an attempted approach and its outcome (failures keep their reason)."""
    body = with_header_key(body, idempotency_key)
    return await approaches.record_approach(resources, principal, task, body)


@router.post("/{task_id}/approaches/check", response_model=CheckPublic)
async def check_approach(
    body: CheckIn, task: WritableTask, principal: CurrentPrincipal, resources: Resources
) -> CheckPublic:
    """Has this approach (or a near-duplicate) already failed on this task? Refusals may mark it stuck."""
    return await approaches.check_approach(resources, principal, task, body)
