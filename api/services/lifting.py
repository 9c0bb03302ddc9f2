"""Lifting published memories to a wider scope (task → worktree → project → org), through the gate.

`lift` checks, in this order, and changes nothing when one fails:
- every memory exists and the caller may read it (else 404 naming it, as for an unknown one);
- no memory is named twice, each lifts upward along its own line and all land in one scope key, which is the
  `target_scope.scope_key` the caller named, if any (else 422: governance/lifting.py);
- the caller may `promote` into the target scope in the memories' tenant, as for a promotion (else 403);
- every memory is still active (else 409: lift its current head);
- where the lift would apply at once (no approval due at the target), a non-human lifts no rule a human
  did not approve and no text carrying instructions aimed at agents (else 403): a promotion would hold
  either for a human (`lifting.unreviewed_lift_refusal`).

Then, like a supersede: at a target scope whose policy requires validation (project and org by default), a
caller who is not a human allowed to approve there gets a change request (`operation = lift`, 202) and its
`ChangeRequestWorkflow`; an approver decides it by API or in the Temporal UI. Otherwise — a scope without
validation, or a human approver's own call (recorded as the approval) — the lift is applied at once (201),
through the same storage function the workflow's apply activity uses (governance/storage/lifting.py), in the
transaction that records the request. A lift that lost a race (its memory was lifted or superseded meanwhile)
is a 409 and leaves nothing behind. An idempotency key replays the first answer.
"""

from __future__ import annotations

import hashlib
import json

from api.schemas.change_requests import ChangeRequestPublic, LiftIn
from api.services.change_requests import (
    is_approver,
    public_request,
    start_change_workflow,
)
from api.services.gateway import GatewayResources, authorize_memory
from governance.changes import ChangeOperation, ChangeTrust
from governance.errors import Conflict, InvalidInput, PolicyDenied
from governance.identity import Principal, judged_project
from governance.lifting import Place, lift_target, target_project, unreviewed_lift_refusal
from governance.operations.changes import apply_change_request
from governance.operations.lifting import LiftRules
from governance.scopes import ActorType, Scope
from governance.storage.change_requests import (
    NewChangeRequest,
    create_change_request,
    get_change_request,
)
from governance.storage.lifting import LiftSource, add_lift_items, lift_sources
from governance.storage.memory_changes import MemoryTenant

__all__ = ["lift"]


def _request_hash(sources: list[LiftSource], body: LiftIn) -> str:
    """What an idempotency key is bound to: the memories (resolved), the target and the reason."""
    request = {
        "operation": "lift",
        "memories": [s.id for s in sources],
        "body": body.model_dump(mode="json", exclude={"idempotency_key", "memory_ids"}),
    }
    return hashlib.sha256(json.dumps(request, sort_keys=True).encode("utf-8")).hexdigest()


def _target_key(body: LiftIn, sources: list[LiftSource]) -> str:
    """The one scope key every memory lifts to; InvalidInput for a memory named twice or another target."""
    target = Scope(body.target_scope.scope)
    seen: dict[str, int] = {}
    keys: list[str] = []
    for i, (ref, source) in enumerate(zip(body.memory_ids, sources, strict=True)):
        if source.id in seen:
            raise InvalidInput(f"memory_ids[{i}] names the same memory as memory_ids[{seen[source.id]}]")
        seen[source.id] = i
        place = Place(Scope(source.scope), source.org, source.project, source.worktree, source.task_id)
        keys.append(lift_target(place, target, ref=ref))
        if keys[i] != keys[0]:
            raise InvalidInput(
                f"memory_ids[{i}] lifts to {keys[i]!r} but memory_ids[0] to {keys[0]!r}: one lift goes to "
                "one scope key"
            )
    given = body.target_scope.scope_key
    if given is not None and given != keys[0]:
        raise InvalidInput(
            f"target_scope.scope_key {given!r} is not on these memories' line: at {target.value} scope they "
            f"lift to {keys[0]!r} (never into another project or tenant)"
        )
    return keys[0]


async def lift(resources: GatewayResources, principal: Principal, body: LiftIn) -> ChangeRequestPublic:
    """Lift memories to a wider scope: applied at once, or a change request awaiting approval."""
    async with resources.engine.connect() as conn:
        sources = await lift_sources(conn, body.memory_ids)
    for ref, source in zip(body.memory_ids, sources, strict=True):
        authorize_memory(
            resources,
            principal,
            ref,
            org=source.org,
            project=source.project,
            scope=source.scope,
            action="read",
        )
    target_key = _target_key(body, sources)
    first, target = sources[0], Scope(body.target_scope.scope)
    org, project = first.org, target_project(target, first.project)
    resources.authorizer.check(
        principal, org=org, project=judged_project(principal, org, project), scope=target, action="promote"
    )
    tenant = MemoryTenant(first.id, first.citation, org, project, target.value)
    validated = resources.authorizer.requires_validation(target)
    approver = validated and is_approver(resources, principal, tenant)
    if not validated:  # applied at once: what a promotion would hold for a human is not lifted by others
        for ref, source in zip(body.memory_ids, sources, strict=True):
            refusal = unreviewed_lift_refusal(
                ref,
                memory_type=source.memory_type,
                content=source.content,
                validation_source=source.validation_source,
                human=principal.actor_type is ActorType.HUMAN,
            )
            if refusal is not None:
                raise PolicyDenied(refusal)
    new = NewChangeRequest(
        memory_id=first.id,
        org=org,
        project=project,
        scope=target.value,
        operation=ChangeOperation.LIFT,
        reason=body.reason,
        requested_by=principal.id,
        actor_type=principal.actor_type.value,
        idempotency_key=f"http:{principal.id}:lift:{body.idempotency_key}" if body.idempotency_key else None,
        request_hash=_request_hash(sources, body),
        target_scope=target.value,
        target_scope_key=target_key,
    )
    async with resources.engine.begin() as conn:
        request = await create_change_request(conn, new)
        if not request.replayed:
            for ref, source in zip(body.memory_ids, sources, strict=True):
                if not source.active:
                    raise Conflict(
                        f"memory {ref!r} is no longer active (lifted, superseded, retired or expired): lift "
                        "the current head of its chain"
                    )
            await add_lift_items(conn, request.id, sources)
            if not validated or approver:
                applied = await apply_change_request(
                    conn,
                    request.id,
                    approver=principal.id,
                    approver_type=principal.actor_type.value,
                    note=f"lift by an approver of {target.value} scope" if approver else "",
                    workflow_id=None,
                    # a human approver's own lift is its approval; elsewhere no approval was needed
                    trust=ChangeTrust.HUMAN_VALIDATED if approver else None,
                    lift_rules=LiftRules(
                        resources.settings.dedup_similarity_threshold,
                        resources.settings.related_similarity_threshold,
                    ),
                )
                if applied.state != "applied":  # lost a race: the transaction is undone, nothing stays
                    raise Conflict(applied.reason)
            request = await get_change_request(conn, request.id)
    if request.replayed or not validated or approver:
        return await public_request(resources, request)
    return await start_change_workflow(resources, principal, request)
