"""Reaching a task's promotion workflow: which one, its handle, its queried status, Temporal's errors.

A task's promotions are numbered (governance/promotions.py: `promote-<key>`, then `promote-<key>-<n>`);
the latest is meant unless a number is asked. Temporal's answers become the domain's errors here, so a
gateway never shows a client a 500 for them: no such workflow → NotFound, an ended one → Conflict,
Temporal or the worker not answering → Unavailable.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from datetime import timedelta
from typing import Any

from temporalio.client import (
    Client,
    RPCError,
    WorkflowHandle,
    WorkflowQueryFailedError,
)
from temporalio.common import SearchAttributeKey

from api.services.gateway import GatewayResources, temporal_client
from api.services.temporal_errors import temporal_errors
from governance.errors import GovernanceError, NotFound, Unavailable
from governance.operations.promotions import promotions_of
from governance.storage.staging import TaskInfo
from workflows.promotion_contract import (
    STATE_ATTRIBUTE,
    Names,
    PromotionStatus,
    workflow_id_for,
)

__all__ = [
    "QUERY_TIMEOUT",
    "LOREGATE_STATE",
    "promotion_errors",
    "workflow_handle",
    "promotion_of",
    "queried_status",
    "live_status",
]

# A query is answered by a worker replaying the workflow: quick, or the worker is not there.
QUERY_TIMEOUT = timedelta(seconds=5)

LOREGATE_STATE = SearchAttributeKey.for_keyword(STATE_ATTRIBUTE)


def _promotion_not_found(task_id: str, exc: RPCError) -> GovernanceError:
    return NotFound(f"task {task_id!r} has no promotion")


def promotion_errors(task_id: str) -> AbstractAsyncContextManager[None]:
    """Temporal's failures as the domain's errors; no workflow is NotFound, an ended one Conflict."""
    return temporal_errors(
        f"the promotion of task {task_id!r}", lambda exc: _promotion_not_found(task_id, exc)
    )


def workflow_handle(client: Client, workflow_id: str) -> WorkflowHandle[Any, Any]:
    return client.get_workflow_handle(workflow_id)


async def promotion_of(
    resources: GatewayResources, task: TaskInfo, number: int | None = None
) -> tuple[str, int]:
    """The workflow id and number of the task's promotion `number` (None: its latest)."""
    records = await promotions_of(resources.engine, task.id)
    if number is None:
        # a task with no recorded promotion answers as its first would (NotFound from Temporal)
        return (records[-1].workflow_id, records[-1].number) if records else (workflow_id_for(task.id), 1)
    for record in records:
        if record.number == number:
            return record.workflow_id, number
    raise NotFound(f"task {task.public_id!r} has no promotion {number}")


async def queried_status(handle: WorkflowHandle[Any, Any]) -> PromotionStatus:
    """The workflow's own account of itself (answered by a worker)."""
    status: PromotionStatus = await handle.query(
        Names.STATE, result_type=PromotionStatus, rpc_timeout=QUERY_TIMEOUT
    )
    return status


async def live_status(
    resources: GatewayResources, task: TaskInfo
) -> tuple[WorkflowHandle[Any, Any], PromotionStatus]:
    """The handle and the queried status of the task's latest promotion, for operations that need it to
    answer (verification and decisions go to the promotion under way)."""
    workflow_id, _ = await promotion_of(resources, task)
    handle = workflow_handle(await temporal_client(resources), workflow_id)
    async with promotion_errors(task.public_id):
        try:
            return handle, await queried_status(handle)
        except WorkflowQueryFailedError as exc:
            raise Unavailable(
                f"the promotion of task {task.public_id!r} cannot answer: {exc.message}"
            ) from exc
