"""The promotion gate's commands: the API side of PromotionWorkflow (workflows/promotion_contract.py).

Each authorises through Casbin in the task's tenant first, then talks to one of the task's numbered
promotions (promotion_workflows.py): start the next one, or send the `verify` / `approve` / `reject`
updates to the one under way, and answers with what a reader sees (promotion_views.py). A validator's
refusal becomes Conflict / InvalidInput, an approver the workflow refuses PolicyDenied. Reading and
listing promotions are promotion_views.py and promotion_listing.py.
"""

from __future__ import annotations

from typing import Any

from temporalio.client import (
    Client,
    WorkflowHandle,
)
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

from api.schemas.approvals import ApprovalTokenPublic
from api.schemas.promotions import (
    DecisionIn,
    DecisionPublic,
    PromotionPublic,
    PromotionStart,
    PromotionStarted,
    VerificationIn,
)
from api.services.approvals import UPDATE_TIMEOUT, mint_approval_token, proof_grant, send_decision
from api.services.gateway import GatewayResources, authorized_task, temporal_client
from api.services.item_decisions import checked_items
from api.services.promotion_views import public_promotion
from api.services.promotion_workflows import LOREGATE_STATE, live_status, promotion_errors, workflow_handle
from governance.errors import Conflict, PolicyDenied
from governance.identity import Principal
from governance.instructions import approval_scope
from governance.operations.promotions import claim_promotion, record_end
from governance.scopes import ActorType, Scope, ValidationSource
from governance.secret_names import refuse_secret_names
from governance.storage.approval_proofs import plan_digest
from governance.storage.staging import TaskInfo
from workflows.promotion_contract import (
    WORKFLOW_TYPE,
    Names,
    PromotionInput,
    PromotionState,
    PromotionStatus,
    Verification,
    start_digest,
)

__all__ = ["start_promotion", "verify_promotion", "decide_promotion", "promotion_approval_token"]


def _check_evidence(
    resources: GatewayResources,
    principal: Principal,
    task: TaskInfo,
    scope: str,
    evidence: VerificationIn | None,
) -> None:
    """`human_approved` is a human's word: only who may `approve` the scope may give it (as for memories);
    a branch or commit that looks like a secret is refused (it travels in the workflow's Temporal input)."""
    if evidence is not None:
        names = {"verification.branch": evidence.branch, "verification.commit": evidence.commit}
        refuse_secret_names(**names)
    if evidence is not None and evidence.source is ValidationSource.HUMAN_APPROVED:
        resources.authorizer.check(
            principal, org=task.org, project=task.project, scope=scope, action="approve"
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
    rerun = False
    for attempt in range(2):
        chosen = await claim_promotion(resources.engine, task.id, target.value, principal.id)
        try:
            handle, created = await _start(
                resources, principal, client, task, target, body, chosen.workflow_id, rerun=rerun
            )
        except WorkflowAlreadyStartedError as exc:
            # it ended without recording how (a best-effort step failed): record it, decide again
            async with promotion_errors(task.public_id):
                ended = await workflow_handle(client, chosen.workflow_id).describe()
            last = ended.typed_search_attributes.get(LOREGATE_STATE)
            if attempt == 0 and last in _ENDED_STATES:
                await record_end(resources.engine, chosen.workflow_id, _ENDED_STATES[last])
                continue
            # it failed for good but its run completed (the workflow records `failed` and returns): a
            # failed promotion runs again under its own number, as one whose run failed does
            if attempt == 0 and last == PromotionState.FAILED.value:
                rerun = True
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
    *,
    rerun: bool = False,
) -> tuple[WorkflowHandle[Any, Any], bool]:
    """Start `workflow_id` (or find it running); (its handle, whether this call started it). `rerun`: its
    last run completed recording `failed`, and it runs again under the same id."""
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
    )
    data.grant = await proof_grant(
        resources, principal, workflow_id, task.id, "start", start_digest=start_digest(data)
    )
    async with promotion_errors(task.public_id):
        handle = await client.start_workflow(
            WORKFLOW_TYPE,
            data,
            id=workflow_id,
            task_queue=settings.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            # a promotion that ended is not run again (its publish events are keyed by the workflow id):
            # the task's next one has the next number; a failed one runs again under its own
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE
            if rerun
            else WorkflowIDReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
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
            f"input: the JSON `loregate approval-token {task_id}` prints for your key (a token bound to you "
            "and to this plan, valid 15 minutes; without it the default `authenticated` mode refuses the "
            "signal):",
            "",
            "```json",
            '{"approver": "<your principal id>", "note": "...", "token": "lgat1...."}',
            "```",
            "",
            f"Or from a terminal: `loregate approve {task_id} --note ...` (the API key names the approver).",
        ]
    )


async def verify_promotion(
    resources: GatewayResources, principal: Principal, task_id: str, body: VerificationIn
) -> PromotionPublic:
    """Give the evidence the promotion waits for; the caller needs `promote` at the target scope."""
    # `read` first: a caller from another tenant learns nothing about the promotion, not even that it exists
    task = await authorized_task(resources, principal, task_id, "read")
    handle, status = await live_status(resources, task)
    resources.authorizer.check(
        principal, org=task.org, project=task.project, scope=status.target_scope, action="promote"
    )
    _check_evidence(resources, principal, task, status.target_scope, body)
    grant = await proof_grant(resources, principal, handle.id, task.id, "verify")
    async with promotion_errors(task.public_id):
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
    return await public_promotion(resources, principal, task, desc, updated, live=True)


async def _awaiting_decision(
    resources: GatewayResources, principal: Principal, task_id: str
) -> tuple[TaskInfo, WorkflowHandle[Any, Any]]:
    """The task and its promotion, once the caller may `approve` its target scope and it awaits approval."""
    task = await authorized_task(resources, principal, task_id, "read")
    handle, status = await live_status(resources, task)
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
        errors=promotion_errors(task.public_id),
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
