"""The promotions a caller may see, and a task closed to more of them.

Every promotion (optionally in one state) of the tasks the caller may read, from Temporal's visibility;
a task's numbered promotions from Postgres (governance/operations/promotions.py); closing a task.
"""

from __future__ import annotations

from typing import Any

from api.schemas.promotions import (
    PromotionList,
    PromotionSummary,
    TaskPromotionPublic,
    TaskPromotions,
)
from api.services.gateway import GatewayResources, authorized_task, temporal_client
from api.services.promotion_workflows import LOREGATE_STATE, promotion_errors
from governance.identity import Principal
from governance.operations.promotions import close, promotions_of
from governance.promotions import PromotionRecord, promotion_of_append
from governance.scopes import Scope
from governance.storage.promotions import promotions_by_workflows
from governance.storage.staging import get_tasks
from workflows.promotion_contract import (
    STATE_ATTRIBUTE,
    WORKFLOW_TYPE,
    task_id_of,
)

__all__ = ["list_promotions", "task_promotions", "close_task"]

# Listing scans visibility and keeps what the caller may read; this bounds the scan per request.
LIST_SCAN_FACTOR = 20


async def list_promotions(
    resources: GatewayResources, principal: Principal, promotion_state: str | None, limit: int
) -> PromotionList:
    """Promotions (optionally in one state) of the tasks the caller may read, newest first."""
    client = await temporal_client(resources)
    query = f'WorkflowType = "{WORKFLOW_TYPE}"'
    if promotion_state is not None:  # a PromotionState (validated by the request model)
        query += f' AND {STATE_ATTRIBUTE} = "{promotion_state}"'
    found: list[PromotionSummary] = []
    page: list[Any] = []
    async with promotion_errors("*"):
        async for execution in client.list_workflows(query, limit=limit * LIST_SCAN_FACTOR, page_size=limit):
            page.append(execution)
            if len(page) == limit:
                found += await _readable(resources, principal, page)
                page = []
                if len(found) >= limit:
                    break
    found += await _readable(resources, principal, page)
    return PromotionList(promotions=found[:limit])


async def _readable(
    resources: GatewayResources, principal: Principal, executions: list[Any]
) -> list[PromotionSummary]:
    """Those of `executions` whose task the caller may read, in the order given."""
    async with resources.engine.connect() as conn:
        # a follow-up's id is the task's key and a number: the promotions table says whose it is
        recorded = await promotions_by_workflows(conn, [e.id for e in executions])
        owner = {e.id: recorded[e.id].task_id if e.id in recorded else task_id_of(e.id) for e in executions}
        ids = [task for task in owner.values() if task is not None]
        by_id = await get_tasks(conn, ids) if ids else {}
    readable: list[PromotionSummary] = []
    for execution in executions:
        row = by_id.get(owner.get(execution.id) or "")
        if row is None or not resources.authorizer.allowed(
            principal, org=row.org, project=row.project, scope=Scope.TASK, action="read"
        ):
            continue
        readable.append(
            PromotionSummary(
                task_id=row.public_id,
                workflow_id=execution.id,
                number=recorded[execution.id].number if execution.id in recorded else 1,
                state=execution.typed_search_attributes.get(LOREGATE_STATE),
                workflow_status=execution.status.name if execution.status is not None else "UNKNOWN",
                target_scope=await execution.memo_value("target_scope", None),
                org=row.org,
                project=row.project,
                description=row.description,
                started_at=execution.start_time,
            )
        )
    return readable


def _record_public(record: PromotionRecord) -> TaskPromotionPublic:
    return TaskPromotionPublic(
        number=record.number,
        workflow_id=record.workflow_id,
        target_scope=record.target_scope,
        after_seq=record.after_seq,
        last_seq=record.last_seq,
        outcome=record.outcome,
        requested_by=record.requested_by,
        started_at=record.started_at,
        snapshot_at=record.snapshot_at,
        ended_at=record.ended_at,
    )


async def task_promotions(resources: GatewayResources, principal: Principal, task_id: str) -> TaskPromotions:
    """Every promotion of the task, by number (the caller needs `read` on the task)."""
    task = await authorized_task(resources, principal, task_id, "read")
    async with resources.engine.connect() as conn:
        fresh = (await get_tasks(conn, [task.id])).get(task.id, task)
    records = await promotions_of(resources.engine, task.id)
    return TaskPromotions(
        task_id=task.public_id,
        closed=fresh.closed_reason,
        next_entries_promotion=promotion_of_append(records, 1 << 62),
        promotions=[_record_public(r) for r in records],
    )


async def close_task(resources: GatewayResources, principal: Principal, task_id: str) -> TaskPromotions:
    """Close the task: no more entries and no more promotions (an orchestrator or a human: `open`).

    A promotion under way goes on; closing twice answers as once.
    """
    task = await authorized_task(resources, principal, task_id, "open")
    await close(resources.engine, task.id, reason="closed", by=principal.id)
    return await task_promotions(resources, principal, task_id)
