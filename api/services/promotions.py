"""The promotion gate's use cases: the API side of PromotionWorkflow (workflows/promotion_contract.py).

Each operation authorises through Casbin in the task's tenant first, then talks to one of the task's
numbered promotions (governance/promotions.py: `promote-<key>`, then `promote-<key>-<n>`), the latest
unless a number is asked: start it, query its `state`, or send the `verify` / `approve` / `reject` updates.
Temporal's answers become the domain's errors here, so a gateway never shows a client a 500 for them:
no such workflow → NotFound, a validator's refusal → Conflict / InvalidInput, an approver the workflow
refuses → PolicyDenied, Temporal or the worker not answering → Unavailable.
"""

from __future__ import annotations

import dataclasses
from contextlib import AbstractAsyncContextManager
from datetime import timedelta
from typing import Any

from temporalio.client import (
    Client,
    RPCError,
    WorkflowExecutionDescription,
    WorkflowHandle,
    WorkflowQueryFailedError,
)
from temporalio.common import SearchAttributeKey, WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

from api.schemas.approvals import ApprovalTokenPublic
from api.schemas.promotions import (
    PLAN_PAGE_SIZE,
    DecisionIn,
    DecisionPublic,
    PlanEntryPublic,
    PromotionList,
    PromotionPlanPage,
    PromotionPublic,
    PromotionStart,
    PromotionStarted,
    PromotionSummary,
    PublishedPublic,
    QuarantinedPublic,
    TaskPromotionPublic,
    TaskPromotions,
    VerificationIn,
)
from api.services.approvals import UPDATE_TIMEOUT, mint_approval_token, proof_grant, send_decision
from api.services.gateway import GatewayResources, authorized_task, temporal_client
from api.services.item_decisions import checked_items, with_fates
from api.services.plan_review import reviewed_entries, target_scope_key
from api.services.temporal_errors import temporal_errors
from governance.errors import Conflict, GovernanceError, NotFound, PolicyDenied, Unavailable
from governance.identity import Principal
from governance.instructions import approval_scope
from governance.operations.promotions import claim_promotion, close, promotions_of, record_end
from governance.promotions import PromotionRecord, promotion_of_append
from governance.redaction import redact_free_text
from governance.scopes import ActorType, Scope, ValidationSource
from governance.storage.approval_proofs import plan_digest
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
from governance.storage.staging import TaskInfo, get_tasks
from workflows.promotion_contract import (
    STATE_ATTRIBUTE,
    WORKFLOW_TYPE,
    Names,
    PromotionInput,
    PromotionState,
    PromotionStatus,
    Verification,
    task_id_of,
    workflow_id_for,
)

__all__ = [
    "start_promotion",
    "promotion_status",
    "promotion_plan",
    "verify_promotion",
    "decide_promotion",
    "promotion_approval_token",
    "list_promotions",
    "task_promotions",
    "close_task",
]

# A query is answered by a worker replaying the workflow: quick, or the worker is not there.
QUERY_TIMEOUT = timedelta(seconds=5)
# An approval update runs the approver check (one database activity) before it answers.
# Listing scans visibility and keeps what the caller may read; this bounds the scan per request.
LIST_SCAN_FACTOR = 20

LOREGATE_STATE = SearchAttributeKey.for_keyword(STATE_ATTRIBUTE)


def _promotion_not_found(task_id: str, exc: RPCError) -> GovernanceError:
    if "already completed" in exc.message:
        return Conflict(f"the promotion of task {task_id!r} has already ended")
    return NotFound(f"task {task_id!r} has no promotion")


def _temporal_errors(task_id: str) -> AbstractAsyncContextManager[None]:
    """Temporal's failures as the domain's errors; no workflow is NotFound, an ended one Conflict."""
    return temporal_errors(
        f"the promotion of task {task_id!r}", lambda exc: _promotion_not_found(task_id, exc)
    )


def _check_evidence(
    resources: GatewayResources,
    principal: Principal,
    task: TaskInfo,
    scope: str,
    evidence: VerificationIn | None,
) -> None:
    """`human_approved` is a human's word: only who may `approve` the scope may give it (as for memories)."""
    if evidence is not None and evidence.source is ValidationSource.HUMAN_APPROVED:
        resources.authorizer.check(
            principal, org=task.org, project=task.project, scope=scope, action="approve"
        )


def _handle(client: Client, workflow_id: str) -> WorkflowHandle[Any, Any]:
    return client.get_workflow_handle(workflow_id)


async def _promotion(
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


async def _status(handle: WorkflowHandle[Any, Any]) -> PromotionStatus:
    """The workflow's own account of itself (answered by a worker)."""
    status: PromotionStatus = await handle.query(
        Names.STATE, result_type=PromotionStatus, rpc_timeout=QUERY_TIMEOUT
    )
    return status


async def _live_status(
    resources: GatewayResources, task: TaskInfo
) -> tuple[WorkflowHandle[Any, Any], PromotionStatus]:
    """The handle and the queried status of the task's latest promotion, for operations that need it to
    answer (verification and decisions go to the promotion under way)."""
    workflow_id, _ = await _promotion(resources, task)
    handle = _handle(await temporal_client(resources), workflow_id)
    async with _temporal_errors(task.public_id):
        try:
            return handle, await _status(handle)
        except WorkflowQueryFailedError as exc:
            raise Unavailable(
                f"the promotion of task {task.public_id!r} cannot answer: {exc.message}"
            ) from exc


async def _complete_plan(resources: GatewayResources, workflow_id: str) -> PlanHeader | None:
    """The newest run's plan of the promotion, once complete (the workflow only names it)."""
    async with resources.engine.connect() as conn:
        header = await latest_plan(conn, workflow_id)
    return header if header is not None and header.plan_total is not None else None


async def _stored(
    resources: GatewayResources,
    principal: Principal,
    task: TaskInfo,
    status: PromotionStatus,
    live: bool,
    workflow_id: str,
) -> dict[str, Any]:
    """The plan's first page, reviewed for `principal`, and the publication's, as `PromotionPublic` fields."""
    header = await _complete_plan(resources, workflow_id)
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
        rows = await plan_page(conn, key, offset=0, limit=PLAN_PAGE_SIZE)
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


async def _public(
    resources: GatewayResources,
    principal: Principal,
    task: TaskInfo,
    desc: WorkflowExecutionDescription,
    status: PromotionStatus,
    live: bool,
) -> PromotionPublic:
    """The workflow's status, with the plan and the publication read from the database."""
    fields = {
        **dataclasses.asdict(status),
        **await _stored(resources, principal, task, status, live, desc.id),
    }
    # the critique and the decision's note are loregate's rows (the history carries neither; an older
    # history's copy is the fallback)
    async with resources.engine.connect() as conn:
        header = await latest_plan(conn, desc.id)
        note = await decision_note(conn, desc.id)
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


async def _number_of(resources: GatewayResources, workflow_id: str) -> int:
    """Which promotion of its task `workflow_id` runs (1 for one loregate did not number)."""
    async with resources.engine.connect() as conn:
        recorded = await promotions_by_workflows(conn, [workflow_id])
    return recorded[workflow_id].number if workflow_id in recorded else 1


def _static_details(task_id: str, target: Scope) -> str:
    """What a reviewer reads first in the Temporal UI's Details panel: where the plan is, how to decide."""
    return "\n".join(
        [
            f"**Promotion of task `{task_id}` into {target.value} scope.**",
            "",
            "The plan and where it stands: the *User Metadata* tab (current details; press R to refresh), "
            "or *Queries* → `state` / `plan`.",
            "",
            "To decide (project and org scope): *More Actions → Send a Signal*, name `approve` or `reject`, "
            "input:",
            "",
            "```json",
            '{"approver": "<your principal id, as `loregate keys list` shows it>", "note": "..."}',
            "```",
            "",
            f"Or from a terminal: `loregate approve {task_id} --note ...` (the API key names the approver).",
        ]
    )


# how a promotion ended, as its workflow's `LoregateState` says, → the outcome recorded in Postgres
_ENDED_STATES = {
    PromotionState.PUBLISHED.value: "published",
    PromotionState.UNVERIFIED.value: "unverified",
    PromotionState.REJECTED.value: "rejected",
}


async def start_promotion(
    resources: GatewayResources, principal: Principal, task_id: str, body: PromotionStart
) -> PromotionStarted:
    """Start the task's next promotion (or find the one running); the caller needs `promote` at the scope.

    The number comes from Postgres under the task's lock (governance/operations/promotions.py): the first
    promotion, a follow-up once entries came after the last one's snapshot, or the running (or failed)
    one again. A closed task, or one whose last promotion ended with nothing new appended, is a Conflict.
    """
    target = Scope(body.target_scope)
    task = await authorized_task(resources, principal, task_id, "promote", target)
    _check_evidence(resources, principal, task, target.value, body.verification)
    client = await temporal_client(resources)
    for attempt in range(2):
        chosen = await claim_promotion(resources.engine, task.id, target.value, principal.id)
        try:
            handle, created = await _start(
                resources, principal, client, task, target, body, chosen.workflow_id
            )
        except WorkflowAlreadyStartedError as exc:
            # it ended without recording how (a best-effort step failed): record it, decide again
            async with _temporal_errors(task.public_id):
                ended = await _handle(client, chosen.workflow_id).describe()
            last = ended.typed_search_attributes.get(LOREGATE_STATE)
            if attempt == 0 and last in _ENDED_STATES:
                await record_end(resources.engine, chosen.workflow_id, _ENDED_STATES[last])
                continue
            raise Conflict(
                f"promotion {chosen.number} of task {task.public_id!r} ({chosen.workflow_id}) already ended "
                f"({last or 'closed'})"
            ) from exc
        return PromotionStarted(
            task_id=task.public_id,
            workflow_id=chosen.workflow_id,
            run_id=handle.result_run_id,
            target_scope=target.value,
            created=created,
            requested_by=principal.id,
            number=chosen.number,
        )
    raise Conflict(f"the promotion of task {task.public_id!r} could not be started")  # pragma: no cover


async def _start(
    resources: GatewayResources,
    principal: Principal,
    client: Client,
    task: TaskInfo,
    target: Scope,
    body: PromotionStart,
    workflow_id: str,
) -> tuple[WorkflowHandle[Any, Any], bool]:
    """Start `workflow_id` (or find it running); (its handle, whether this call started it)."""
    settings = resources.settings
    evidence = body.verification
    data = PromotionInput(
        task_id=task.id,
        target_scope=target.value,
        verification=Verification(
            evidence.source.value,
            evidence.success,
            given_by=principal.id,
            commit=evidence.commit,
            branch=evidence.branch,
        )
        if evidence
        else None,
        verify_timeout_seconds=settings.verify_timeout_seconds,
        approval_timeout_seconds=settings.approval_timeout_seconds,
        requested_by=principal.id,
        grant=await proof_grant(resources, principal, workflow_id, task.id, "start"),
    )
    async with _temporal_errors(task.public_id):
        handle = await client.start_workflow(
            WORKFLOW_TYPE,
            data,
            id=workflow_id,
            task_queue=settings.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            # a promotion that ended is not run again (its publish events are keyed by the workflow id):
            # the task's next one has the next number; a failed one runs again under its own
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
            memo={
                "task_id": task.id,
                "org": task.org,
                "project": task.project,
                "target_scope": target.value,
                "requested_by": principal.id,
            },
            static_summary=f"Promote task {task.id} into {target.value} scope "
            f"({task.org}/{task.project}), requested by {principal.id}",
            static_details=_static_details(task.public_id, target),
        )
        # USE_EXISTING answers with the running workflow and `started` false (the SDK keeps the response)
        response = getattr(handle, "_start_workflow_response", None)
        created = bool(getattr(response, "started", True))
        if not created:
            running = await handle.describe()
            running_scope = await running.memo_value("target_scope", None)
            if running_scope is not None and running_scope != target.value:
                raise Conflict(
                    f"task {task.public_id!r} is already being promoted into {running_scope} scope "
                    f"({workflow_id}), not {target.value}"
                )
    return handle, created


async def promotion_status(
    resources: GatewayResources, principal: Principal, task_id: str, number: int | None = None
) -> PromotionPublic:
    """The state and plan of the task's latest promotion, or of promotion `number` (needs `read`)."""
    task = await authorized_task(resources, principal, task_id, "read")
    workflow_id, _ = await _promotion(resources, task, number)
    handle = _handle(await temporal_client(resources), workflow_id)
    async with _temporal_errors(task.public_id):
        desc = await handle.describe()
        try:
            status = await _status(handle)
        except (WorkflowQueryFailedError, RPCError):
            # no worker answered: say what visibility knows (and the database) rather than fail
            fallback = PromotionStatus(
                task_id=task.id,
                target_scope=str(await desc.memo_value("target_scope", "")),
                state=desc.typed_search_attributes.get(LOREGATE_STATE)
                or PromotionState.AWAITING_VERIFICATION,
            )
            return await _public(resources, principal, task, desc, fallback, live=False)
    return await _public(resources, principal, task, desc, status, live=True)


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
    workflow_id, _ = await _promotion(resources, task, number)
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
        desc = await _handle(await temporal_client(resources), workflow_id).describe()
        return str(await desc.memo_value("target_scope", "")) or None
    except (RPCError, Unavailable):
        return None


async def verify_promotion(
    resources: GatewayResources, principal: Principal, task_id: str, body: VerificationIn
) -> PromotionPublic:
    """Give the evidence the promotion waits for; the caller needs `promote` at the target scope."""
    # `read` first: a caller from another tenant learns nothing about the promotion, not even that it exists
    task = await authorized_task(resources, principal, task_id, "read")
    handle, status = await _live_status(resources, task)
    resources.authorizer.check(
        principal, org=task.org, project=task.project, scope=status.target_scope, action="promote"
    )
    _check_evidence(resources, principal, task, status.target_scope, body)
    grant = await proof_grant(resources, principal, handle.id, task.id, "verify")
    async with _temporal_errors(task.public_id):
        updated: PromotionStatus = await handle.execute_update(
            Names.VERIFY,
            Verification(
                body.source.value,
                body.success,
                given_by=principal.id,
                grant=grant,
                commit=body.commit,
                branch=body.branch,
            ),
            result_type=PromotionStatus,
            rpc_timeout=UPDATE_TIMEOUT,
        )
        desc = await handle.describe()
    return await _public(resources, principal, task, desc, updated, live=True)


async def _awaiting_decision(
    resources: GatewayResources, principal: Principal, task_id: str
) -> tuple[TaskInfo, WorkflowHandle[Any, Any]]:
    """The task and its promotion, once the caller may `approve` its target scope and it awaits approval."""
    task = await authorized_task(resources, principal, task_id, "read")
    handle, status = await _live_status(resources, task)
    scope = status.target_scope
    if status.quarantined_total:
        # instructions aimed at agents: a human who may approve at least project scope decides
        if principal.actor_type is not ActorType.HUMAN:
            raise PolicyDenied(
                f"the promotion of task {task.public_id!r} holds {status.quarantined_total} quarantined "
                "items: only a human may decide it"
            )
        scope = approval_scope(scope)
    resources.authorizer.check(principal, org=task.org, project=task.project, scope=scope, action="approve")
    if status.state != PromotionState.AWAITING_APPROVAL or status.decided_by is not None:
        raise Conflict(f"the promotion of task {task.public_id!r} is {status.state}, not awaiting approval")
    return task, handle


async def decide_promotion(
    resources: GatewayResources, principal: Principal, task_id: str, decision: str, body: DecisionIn
) -> DecisionPublic:
    """Approve or reject as the caller: a grant row for them, then the workflow's `approve`/`reject` update.

    The caller needs `approve` at the target scope in the task's tenant; the workflow checks it again
    (and finds the grant row), and its refusal is a 403 with its reason.
    """
    task, handle = await _awaiting_decision(resources, principal, task_id)
    # per-item decisions are checked against the plan before anything is written
    items = await checked_items(resources, handle.id, task.public_id, decision, body.items)
    ack = await send_decision(
        resources,
        principal,
        handle,
        task_id=task.id,
        decision=decision,
        note=body.note,
        errors=_temporal_errors(task.public_id),
        what=f"the promotion of task {task.public_id!r}",
        items=items,
    )
    return DecisionPublic(
        task_id=task.public_id,
        workflow_id=handle.id,
        decision=decision,
        approver=principal.id,
        accepted=True,
        state=ack.state,
        reason=ack.reason,
        rejected_items=[i.index for i in body.items if i.decision == "reject"],
        edited_items=[i.index for i in body.items if i.decision == "edit"],
    )


async def promotion_approval_token(
    resources: GatewayResources, principal: Principal, task_id: str
) -> ApprovalTokenPublic:
    """A short-lived token for the caller to approve or reject this promotion's current plan in the UI."""
    task, handle = await _awaiting_decision(resources, principal, task_id)
    async with resources.engine.connect() as conn:
        digest = await plan_digest(conn, handle.id)
    if digest is None:
        raise Conflict(f"the promotion of task {task.public_id!r} has no complete plan yet")
    return mint_approval_token(resources, principal, handle.id, digest)


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
    async with _temporal_errors("*"):
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
