"""What a reader sees of a promotion: its state with the plan's and publication's first pages, and
every page of its plan (the caller needs `read` on the task).

The workflow answers for its state (a query); the plan, the publication, the critique and the decision's
note are loregate's rows, read from the database and reviewed for the caller (plan_review.py).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from temporalio.client import (
    RPCError,
    WorkflowExecutionDescription,
    WorkflowQueryFailedError,
)

from api.schemas.promotions import (
    PLAN_PAGE_SIZE,
    PlanEntryPublic,
    PromotionPlanPage,
    PromotionPublic,
    PublishedPublic,
    QuarantinedPublic,
)
from api.services.gateway import GatewayResources, authorized_task, temporal_client
from api.services.item_decisions import with_fates
from api.services.plan_review import reviewed_entries, target_scope_key
from api.services.promotion_workflows import (
    LOREGATE_STATE,
    promotion_errors,
    promotion_of,
    queried_status,
    workflow_handle,
)
from governance.errors import Unavailable
from governance.identity import Principal
from governance.redaction import redact_free_text
from governance.storage.plans import (
    PlanHeader,
    PlanItemForReview,
    PlanKey,
    latest_plan,
    plan_page,
    published_page,
    quarantined_items,
)
from governance.storage.promotions import decision_note, promotions_by_workflows
from governance.storage.staging import TaskInfo
from workflows.promotion_contract import (
    PromotionState,
    PromotionStatus,
)

__all__ = ["promotion_status", "promotion_plan", "public_promotion"]


async def promotion_status(
    resources: GatewayResources,
    principal: Principal,
    task_id: str,
    number: int | None = None,
    *,
    plan_entries: bool = True,
) -> PromotionPublic:
    """The state and plan of the task's latest promotion, or of promotion `number` (needs `read`).

    `plan_entries=False` leaves the plan's first page out (`plan` empty, `plan_total` still counted): for a
    caller that shows the plan's pages itself (the console), reviewing them here too was half its cost.
    """
    task = await authorized_task(resources, principal, task_id, "read")
    workflow_id, _ = await promotion_of(resources, task, number)
    handle = workflow_handle(await temporal_client(resources), workflow_id)
    async with promotion_errors(task.public_id):
        desc = await handle.describe()
        try:
            status = await queried_status(handle)
        except (WorkflowQueryFailedError, RPCError):
            # no worker answered: say what visibility knows (and the database) rather than fail
            fallback = PromotionStatus(
                task_id=task.id,
                target_scope=str(await desc.memo_value("target_scope", "")),
                state=desc.typed_search_attributes.get(LOREGATE_STATE)
                or PromotionState.AWAITING_VERIFICATION,
            )
            return await public_promotion(
                resources, principal, task, desc, fallback, live=False, plan_entries=plan_entries
            )
    return await public_promotion(
        resources, principal, task, desc, status, live=True, plan_entries=plan_entries
    )


async def promotion_plan(
    resources: GatewayResources,
    principal: Principal,
    task_id: str,
    offset: int,
    limit: int,
    number: int | None = None,
) -> PromotionPlanPage:
    """A page of the promotion's plan, full contents, from the database (the caller needs `read`).

    Empty (total 0) until the plan is complete; the newest run's plan when a failed promotion was re-run.
    Each item says what it changes (plan_review.py); the nearest memories of new items need the target
    scope, which the workflow's memo holds: when Temporal cannot say, they are left out.
    """
    task = await authorized_task(resources, principal, task_id, "read")
    workflow_id, _ = await promotion_of(resources, task, number)
    header = await _complete_plan(resources, workflow_id)
    total = header.plan_total or 0 if header is not None else 0
    rows: list[PlanItemForReview] = []
    items: list[PlanEntryPublic] = []
    if header is not None and offset < total:
        key = PlanKey(header.workflow_id, header.run_id)
        async with resources.engine.connect() as conn:
            rows = await plan_page(conn, key, offset=offset, limit=limit)
        target = await _memo_target_scope(resources, workflow_id)
        items = await with_fates(
            resources,
            key,
            await reviewed_entries(resources, principal, key, rows, target_scope_key(task, target)),
        )
    following = offset + len(rows)
    return PromotionPlanPage(
        task_id=task.public_id,
        total=total,
        offset=offset,
        limit=limit,
        next_offset=following if rows and following < total else None,
        items=items,
    )


async def _memo_target_scope(resources: GatewayResources, workflow_id: str) -> str | None:
    """The target scope the promotion was started with (its memo); None when Temporal does not answer."""
    try:
        desc = await workflow_handle(await temporal_client(resources), workflow_id).describe()
        return str(await desc.memo_value("target_scope", "")) or None
    except (RPCError, Unavailable):
        return None


async def public_promotion(
    resources: GatewayResources,
    principal: Principal,
    task: TaskInfo,
    desc: WorkflowExecutionDescription,
    status: PromotionStatus,
    live: bool,
    *,
    plan_entries: bool = True,
) -> PromotionPublic:
    """The workflow's status, with the plan and the publication read from the database (without the plan's
    first page when not `plan_entries`)."""
    async with resources.engine.connect() as conn:
        header = await latest_plan(conn, desc.id)
        note = await decision_note(conn, desc.id)
    complete = header if header is not None and header.plan_total is not None else None
    fields = {
        **dataclasses.asdict(status),
        **await _stored(resources, principal, task, status, live, complete, plan_entries),
    }
    # the critique and the decision's note are loregate's rows (the history carries neither; an older
    # history's copy is the fallback)
    critique = header.critique if header is not None and header.critique else status.critique
    if note in ("approved", "rejected"):  # the event's reason when the decision came without a note
        note = None
    return PromotionPublic.model_validate(
        {
            **fields,
            "task_id": task.public_id,
            "workflow_id": desc.id,
            "number": await _number_of(resources, desc.id),
            "run_id": desc.run_id,
            "workflow_status": desc.status.name if desc.status is not None else "UNKNOWN",
            "live": live,
            "started_at": desc.start_time,
            "closed_at": desc.close_time,
            # a note sent by signal (Temporal UI) reached the workflow as written: cleaned for every reader
            "decision_note": redact_free_text(note if note is not None else status.decision_note),
            "critique": redact_free_text(critique),
        }
    )


async def _stored(
    resources: GatewayResources,
    principal: Principal,
    task: TaskInfo,
    status: PromotionStatus,
    live: bool,
    header: PlanHeader | None,
    plan_entries: bool,
) -> dict[str, Any]:
    """The plan's first page (when `plan_entries`), reviewed for `principal`, and the publication's, as
    `PromotionPublic` fields, of the complete plan `header` (None: no complete plan)."""
    if header is None or (live and not status.plan_total and not status.published_total):
        # no plan yet (a re-run after a failure has not planned: an older run's plan is not this one's)
        return {
            "plan": [],
            "plan_total": 0,
            "published": [],
            "published_total": 0,
            "quarantined_total": 0,
            "quarantined": [],
        }
    key = PlanKey(header.workflow_id, header.run_id)
    async with resources.engine.connect() as conn:
        rows = await plan_page(conn, key, offset=0, limit=PLAN_PAGE_SIZE) if plan_entries else []
        published_total, published = await published_page(conn, key, offset=0, limit=PLAN_PAGE_SIZE)
        quarantined_total, quarantined = await quarantined_items(conn, key, limit=PLAN_PAGE_SIZE)
    target_key = target_scope_key(task, status.target_scope)
    return {
        "plan": await with_fates(
            resources, key, await reviewed_entries(resources, principal, key, rows, target_key)
        ),
        "plan_total": header.plan_total or 0,
        "published": [
            PublishedPublic(
                memory_id=p.memory_id,
                citation=p.citation,
                action=p.action,
                memory_type=p.memory_type,
                title=p.title,
                superseded_id=p.superseded_id,
                replayed=p.replayed,
            )
            for p in published
        ],
        "published_total": published_total,
        "quarantined_total": quarantined_total,
        "quarantined": [QuarantinedPublic(index=q.idx, title=q.title, reason=q.reason) for q in quarantined],
    }


async def _complete_plan(resources: GatewayResources, workflow_id: str) -> PlanHeader | None:
    """The newest run's plan of the promotion, once complete (the workflow only names it)."""
    async with resources.engine.connect() as conn:
        header = await latest_plan(conn, workflow_id)
    return header if header is not None and header.plan_total is not None else None


async def _number_of(resources: GatewayResources, workflow_id: str) -> int:
    """Which promotion of its task `workflow_id` runs (1 for one loregate did not number)."""
    async with resources.engine.connect() as conn:
        recorded = await promotions_by_workflows(conn, [workflow_id])
    return recorded[workflow_id].number if workflow_id in recorded else 1
