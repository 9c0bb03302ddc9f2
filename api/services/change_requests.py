"""Change requests' use cases: propose a change to validated memory, list and show requests, decide them.

At a scope whose policy requires validation (project and org by default), a supersede or retire by anyone
but a human allowed to approve that scope (`is_approver`: in the memory's tenant, an org memory judged in the
caller's project) is proposed here: the request is stored (content redacted, embedding computed) and its
`ChangeRequestWorkflow` started (workflows/change_requests_contract.py); the answer is a 202 with the request.
Nothing changes until an approver decides, through `decide` (an update with the gateway's grant row) or a
signal from the Temporal UI.

A request is visible to whoever may read its memory; to anyone else it does not exist (404). A lift request
is visible only to a principal who may read every memory it carries (`governance/lifting.lift_refusal`),
whatever it may do at the target. Deciding needs `approve` at the memory's scope (403 otherwise), and a
lift's decider must be a human who may read every source and approve at the target; a request no longer
awaiting approval is a 409.
"""

from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager

from temporalio.client import (
    RPCError,
    WorkflowExecutionStatus,
)

from api.schemas.approvals import ApprovalTokenPublic
from api.schemas.change_requests import (
    ChangeDecisionPublic,
    ChangeRequestList,
    ChangeRequestPublic,
    LiftItemPublic,
    MemorySide,
)
from api.schemas.promotions import DecisionIn
from api.services.approvals import mint_approval_token, proof_grant, send_decision
from api.services.gateway import GatewayResources, may, readable, temporal_client
from api.services.temporal_errors import temporal_errors
from governance.adapters.embedders import embed_one, make_embedder
from governance.changes import ChangeOperation, ProposedContent
from governance.errors import Conflict, GovernanceError, NotFound, PolicyDenied, Unavailable
from governance.identity import Principal, judged_project
from governance.lifting import lift_refusal
from governance.scopes import ActorType
from governance.storage.approval_proofs import change_request_digest
from governance.storage.change_requests import (
    ChangeRequest,
    NewChangeRequest,
    change_target,
    close_change_request,
    create_change_request,
    get_change_request,
    list_change_requests,
    set_change_workflow,
)
from governance.storage.lifting import lift_items, lift_source_tenants
from governance.storage.memory_changes import MemoryTenant
from workflows.change_requests_contract import (
    WORKFLOW_TYPE,
    ChangeRequestInput,
    ChangeRequestResult,
    ChangeRequestState,
    start_digest,
    workflow_id_for,
)

__all__ = [
    "is_approver",
    "needs_change_request",
    "embedding_of",
    "propose",
    "start_change_workflow",
    "public_request",
    "list_requests",
    "show_request",
    "decide",
    "change_approval_token",
]

# After an accepted approval, how long the answer waits for the change to be applied (one transaction).
APPLY_WAIT_SECONDS = 30.0
# Listing reads one org's requests and keeps what the caller may read; this bounds the scan per request.
LIST_SCAN_FACTOR = 20


def _temporal_errors(request_id: str) -> AbstractAsyncContextManager[None]:
    """Temporal's failures as the domain's errors; a request whose workflow is gone has been decided."""
    return temporal_errors(
        f"change request {request_id!r}",
        lambda _: Conflict(f"change request {request_id!r} is no longer awaiting approval"),
    )


def is_approver(resources: GatewayResources, principal: Principal, memory: MemoryTenant) -> bool:
    """Whether `principal` is a human allowed to approve the memory's scope (org memories: in its project)."""
    return principal.actor_type is ActorType.HUMAN and resources.authorizer.allowed(
        principal,
        org=memory.org,
        project=judged_project(principal, memory.org, memory.project),
        scope=memory.scope,
        action="approve",
    )


def needs_change_request(resources: GatewayResources, principal: Principal, memory: MemoryTenant) -> bool:
    """A change to this memory by this caller waits for an approval (validated scope, caller no approver)."""
    return resources.authorizer.requires_validation(memory.scope) and not is_approver(
        resources, principal, memory
    )


async def embedding_of(
    resources: GatewayResources, proposed: ProposedContent, title_given: bool
) -> list[float]:
    """The superseding memory's embedding (its title prefixed when the caller gave one)."""
    text = f"{proposed.title}: {proposed.content}" if title_given else proposed.content
    return list(await embed_one(make_embedder(resources.settings), text))


async def _lifts_hidden(
    resources: GatewayResources, principal: Principal, requests: list[ChangeRequest]
) -> set[str]:
    """The ids of the lift requests among `requests` that carry a memory the caller may not read."""
    lifts = [r.id for r in requests if r.operation == ChangeOperation.LIFT]
    if not lifts:
        return set()
    async with resources.engine.connect() as conn:
        sources = await lift_source_tenants(conn, lifts)
    return {
        request_id
        for request_id, tenants in sources.items()
        if lift_refusal(reads_every_source=all(may(resources, principal, t, "read") for t in tenants))
        is not None
    }


async def public_request(resources: GatewayResources, request: ChangeRequest) -> ChangeRequestPublic:
    """A request as the API shows it: the memory as it is now beside the change (a lift: its items)."""
    items: list[LiftItemPublic] = []
    async with resources.engine.connect() as conn:
        try:
            target = await change_target(conn, request.memory_id)
        except NotFound:
            old = None
        else:
            old = MemorySide(
                id=target.id,
                citation=target.citation,
                title=target.title,
                content=target.content,
                confidence=target.confidence,
                active=target.active,
            )
        if request.operation == ChangeOperation.LIFT:
            items = [
                LiftItemPublic(
                    memory_id=i.memory_id,
                    citation=i.citation,
                    title=i.title,
                    outcome=i.outcome,
                    result_memory_id=i.result_memory_id,
                    result_citation=i.result_citation,
                )
                for i in await lift_items(conn, request.id)
            ]
    return ChangeRequestPublic(
        id=request.id,
        workflow_id=request.workflow_id,
        operation=request.operation,
        memory_id=request.memory_id,
        scope=request.scope,
        state=request.state,
        requested_by=request.requested_by,
        reason=request.reason,
        title=request.title,
        content=request.content,
        canonical_key=request.canonical_key,
        redaction_counts=request.redaction_counts,
        decided_by=request.decided_by,
        decision_note=request.decision_note,
        result_memory_id=request.result_memory_id,
        created_at=request.created_at,
        decided_at=request.decided_at,
        old=old,
        target_scope=request.target_scope,
        target_scope_key=request.target_scope_key,
        items=items,
    )


async def propose(
    resources: GatewayResources, principal: Principal, new: NewChangeRequest
) -> ChangeRequestPublic:
    """Store the request and start its workflow; a replay of the same idempotent request answers the first."""
    async with resources.engine.begin() as conn:
        request = await create_change_request(conn, new)
    if request.replayed:  # the first answer: the request as it stands now
        return await public_request(resources, request)
    return await start_change_workflow(resources, principal, request)


def _summary(request: ChangeRequest, principal: Principal) -> str:
    if request.operation == ChangeOperation.LIFT:
        return (
            f"Lift memories into {request.scope} scope ({request.target_scope_key}), requested by "
            f"{principal.id}"
        )
    return (
        f"{request.operation.capitalize()} memory {request.memory_id} "
        f"({request.scope} scope, {request.org}/{request.project or '*'}), requested by {principal.id}"
    )


async def start_change_workflow(
    resources: GatewayResources, principal: Principal, request: ChangeRequest
) -> ChangeRequestPublic:
    """Start the workflow of a stored request; if Temporal cannot take it, the request ends `failed`."""
    client = await temporal_client(resources)
    workflow_id = workflow_id_for(request.id)
    data = ChangeRequestInput(
        request_id=request.id,
        requested_by=principal.id,
        approval_timeout_seconds=resources.settings.approval_timeout_seconds,
    )
    data.grant = await proof_grant(
        resources, principal, workflow_id, "", "start", start_digest=start_digest(data)
    )
    try:
        await client.start_workflow(
            WORKFLOW_TYPE,
            data,
            id=workflow_id,
            task_queue=resources.settings.task_queue,
            memo={"memory_id": request.memory_id, "operation": request.operation, "org": request.org},
            static_summary=_summary(request, principal),
            static_details=(
                "What changes (the memory's id; for a lift, from → to and how many) and how to decide: "
                "the *User Metadata* tab (current details), or *Queries* → `state`; the texts are in "
                f"loregate ({resources.settings.console_base()}/changes/{request.id}). Approve "
                "with *Send a Signal*, name `approve`, input the JSON `loregate approval-token --change "
                f'{request.id}` prints (`{{"approver": "<your principal id>", "note": "...", "token": '
                f'"lgat1...."}}`), or `loregate changes approve {request.id}`.'
            ),
        )
    except Exception as exc:  # Temporal unreachable: the request cannot be decided, so it does not stay
        async with resources.engine.begin() as conn:
            await close_change_request(
                conn,
                request.id,
                state=ChangeRequestState.FAILED,
                decided_by=None,
                decided_by_type=None,
                note=f"the workflow could not be started: {exc}",
                workflow_id=None,
            )
        if isinstance(exc, GovernanceError):
            raise
        raise Unavailable(f"Temporal is unavailable: {exc}") from exc
    async with resources.engine.begin() as conn:
        await set_change_workflow(conn, request.id, workflow_id)
        request = await get_change_request(conn, request.id)
    return await public_request(resources, request)


async def _readable(resources: GatewayResources, principal: Principal, request_id: str) -> ChangeRequest:
    """The request if the caller may read its memory; NotFound (as for an unknown id) otherwise."""
    async with resources.engine.connect() as conn:
        request = await get_change_request(conn, request_id)
    if not may(resources, principal, request, "read") or await _lifts_hidden(resources, principal, [request]):
        raise NotFound(f"change request {request_id!r} does not exist")
    return request


async def _closed_if_its_workflow_ended(resources: GatewayResources, request: ChangeRequest) -> ChangeRequest:
    """An awaiting request whose workflow ended without deciding it (terminated or cancelled from the Temporal
    UI or CLI) is closed `failed`, nothing changed: it would otherwise wait for a decision no one can send.
    A workflow that decided closes its request itself, before it ends; Temporal out of reach changes
    nothing."""
    if request.state != ChangeRequestState.AWAITING_APPROVAL or request.workflow_id is None:
        return request
    try:
        described = (
            await (await temporal_client(resources)).get_workflow_handle(request.workflow_id).describe()
        )
    except (RPCError, Unavailable):
        return request
    if described.status in (None, WorkflowExecutionStatus.RUNNING):
        return request
    how = described.status.name.lower().replace("_", " ")
    async with resources.engine.begin() as conn:
        return await close_change_request(
            conn,
            request.id,
            state=ChangeRequestState.FAILED,
            decided_by=None,
            decided_by_type=None,
            note=f"its workflow {request.workflow_id} ended ({how}) before anyone decided: "
            "nothing was changed",
            workflow_id=request.workflow_id,
        )


async def show_request(
    resources: GatewayResources, principal: Principal, request_id: str
) -> ChangeRequestPublic:
    """A change request with the memory it changes, old and new side by side."""
    request = await _closed_if_its_workflow_ended(
        resources, await _readable(resources, principal, request_id)
    )
    return await public_request(resources, request)


async def list_requests(
    resources: GatewayResources, principal: Principal, request_state: str | None, limit: int
) -> ChangeRequestList:
    """Change requests (optionally in one state) of memories the caller may read, newest first."""
    async with resources.engine.connect() as conn:
        rows = await list_change_requests(
            conn, org=principal.org, state=request_state, limit=limit * LIST_SCAN_FACTOR
        )
    visible = readable(resources, principal, rows)
    hidden = await _lifts_hidden(resources, principal, visible)
    shown = [r for r in visible if r.id not in hidden][:limit]
    return ChangeRequestList(change_requests=[await public_request(resources, r) for r in shown])


async def _awaiting_decision(
    resources: GatewayResources, principal: Principal, request_id: str
) -> ChangeRequest:
    """The request, once the caller may `approve` its scope and it awaits approval."""
    request = await _readable(resources, principal, request_id)
    if not may(resources, principal, request, "approve"):
        raise PolicyDenied(
            f"{principal.actor_type} '{principal.name}' ({principal.id}) may not approve changes at "
            f"{request.scope} scope"
        )
    if request.operation == ChangeOperation.LIFT:
        # the caller reads every source (`_readable`); a lift also needs a human approver of the target
        refusal = lift_refusal(
            reads_every_source=True,
            deciding=True,
            human=principal.actor_type is ActorType.HUMAN,
            approves_target=True,
        )
        if refusal is not None:
            raise PolicyDenied(f"{principal.actor_type} {principal.id} {refusal}")
    if request.state != ChangeRequestState.AWAITING_APPROVAL or request.workflow_id is None:
        raise Conflict(f"change request {request.id!r} is {request.state}, not awaiting approval")
    return request


async def decide(
    resources: GatewayResources, principal: Principal, request_id: str, decision: str, body: DecisionIn
) -> ChangeDecisionPublic:
    """Approve or reject as the caller: a grant row for them, then the workflow's `approve`/`reject` update.

    The caller needs `approve` at the memory's scope; the workflow checks it again (and finds the grant
    row), and its refusal is a 403 with its reason.
    """
    request = await _awaiting_decision(resources, principal, request_id)
    assert request.workflow_id is not None
    handle = (await temporal_client(resources)).get_workflow_handle(
        request.workflow_id, result_type=ChangeRequestResult
    )
    try:
        ack = await send_decision(
            resources,
            principal,
            handle,
            task_id="",
            decision=decision,
            note=body.note,
            errors=_temporal_errors(request.id),
            what=f"change request {request.id!r}",
        )
    except Conflict as refused:
        closed = await _closed_if_its_workflow_ended(resources, request)
        if closed.state == ChangeRequestState.FAILED and closed.decision_note:
            raise Conflict(
                f"change request {request.id!r} is failed, not awaiting approval: {closed.decision_note}"
            ) from refused
        raise
    final_state, reason, result_id = ack.state, ack.reason, None
    try:  # the decision is in; the change (or the closing) follows in one activity: answer with its outcome
        result: ChangeRequestResult = await asyncio.wait_for(handle.result(), APPLY_WAIT_SECONDS)
    except (TimeoutError, RPCError):
        pass  # still applying: GET /v1/change-requests/{id} tells the outcome
    else:
        final_state, reason, result_id = result.state, result.reason or reason, result.result_memory_id
    return ChangeDecisionPublic(
        id=request.id,
        workflow_id=request.workflow_id,
        decision=decision,
        approver=principal.id,
        accepted=True,
        state=final_state,
        reason=reason,
        result_memory_id=result_id,
    )


async def change_approval_token(
    resources: GatewayResources, principal: Principal, request_id: str
) -> ApprovalTokenPublic:
    """A short-lived token for the caller to approve or reject this change request in the Temporal UI."""
    request = await _awaiting_decision(resources, principal, request_id)
    assert request.workflow_id is not None
    async with resources.engine.connect() as conn:
        digest = await change_request_digest(conn, request.id)
    return mint_approval_token(resources, principal, request.workflow_id, digest)
