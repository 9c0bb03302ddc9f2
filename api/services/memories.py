"""Trust and lifecycle of published memory: validate, feedback, supersede, retire, and the history of a chain.

`ref` is a memory's uuid or its citation. The caller needs, in the memory's tenant and at the memory's scope
(Casbin): `write` to supersede or retire, `write` to report tests_passed / pr_merged / repeated_success and
`approve` to report human_approved, `read` to give feedback or read the history. An org-scope memory is
judged in the caller's own project when the caller belongs to its org, and a caller who may not even read
the memory is told it does not exist (`authorize_memory`, api/services/gateway.py, as for GET /v1/memories).
Each change is one statement with its event, in one transaction: a validation, a vote or a decay policy
through governance/operations/trust.py; a supersede or retire through governance/operations/changes.py, as
an approved change request is.

Supersede and retire pass the gate (governance/changes.py): at a scope whose policy requires validation,
a caller who is not a human allowed to approve that scope gets a change request (202, api/services/
change_requests.py) and nothing changes until an approver decides. A human approver's call applies at once
and is recorded as the approval it is (an APPROVED event naming them). A superseding memory's content is
redacted, its title is its own, and its trust is what its author's word gives: a human validation from an
approver, a draft from anyone else. Where no change request is due, a non-approver neither replaces nor
retires a human-approved or verified memory, nor supersedes with text carrying instructions aimed at agents
(403, nothing written: `changes.direct_change_refusal`); a promotion or a human does.

Trust comes from someone other than the author (docs/trust.md): a principal involved in a memory (it wrote
its source staging or opened its task, published, merged, lifted or superseded it: storage/trust.py) is
refused its validation and its feedback vote (403 `self_endorsement`, nothing written). A non-human's
validation raises trust only up to 0.75 unless a human approved the memory or two independent principals
confirmed it (`trust.boost_ceiling`).

A principal's repeated validation of a memory with the same source counts once (`counted` is False in the
answer), and its feedback is one vote, its latest. An idempotency key is bound to its request: the principal,
the operation (the key's namespace), the memory and the body (a hash kept in the event); the same key with
another memory or body is a Conflict, with the same ones it replays the first answer.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict

from pydantic import BaseModel

from api.schemas.change_requests import ChangeRequestPublic
from api.schemas.memories import (
    DecayPolicyIn,
    DecayPolicyPublic,
    FeedbackIn,
    FeedbackPublic,
    HistoryPublic,
    RetireIn,
    RetirePublic,
    SupersedeIn,
    SupersedePublic,
    ValidateIn,
    ValidatePublic,
    VersionPublic,
)
from api.services.change_requests import embedding_of, is_approver, needs_change_request, propose
from api.services.gateway import GatewayResources, authorize_memory
from governance.changes import ChangeTrust, direct_change_refusal, proposed_content
from governance.errors import PolicyDenied
from governance.identity import Principal
from governance.instructions import quarantine_reason
from governance.operations import changes, trust
from governance.operations.trust import Endorser
from governance.scopes import ValidationSource
from governance.storage.memory_changes import MemoryTenant, memory_history, memory_tenant
from governance.storage.trust import standings_of
from governance.trust import Standing

__all__ = [
    "VALIDATION_ACTION",
    "validate",
    "feedback",
    "set_decay_policy",
    "supersede",
    "retire",
    "history",
]

# which Casbin action reporting each validation source needs
VALIDATION_ACTION: dict[ValidationSource, str] = {
    ValidationSource.TESTS_PASSED: "write",
    ValidationSource.PR_MERGED: "write",
    ValidationSource.REPEATED_SUCCESS: "write",
    ValidationSource.HUMAN_APPROVED: "approve",
}


async def _authorized(
    resources: GatewayResources, principal: Principal, ref: str, action: str
) -> MemoryTenant:
    """The memory, after Casbin allowed `principal` to `action` at its scope in its tenant.

    NotFound for an unknown ref and for a memory the caller may not read; PolicyDenied if it may read it.
    """
    async with resources.engine.connect() as conn:
        memory = await memory_tenant(conn, ref)
    authorize_memory(
        resources,
        principal,
        ref,
        org=memory.org,
        project=memory.project,
        scope=memory.scope,
        action=action,
    )
    return memory


def _idempotency_key(principal: Principal, verb: str, key: str | None) -> str | None:
    return f"http:{principal.id}:{verb}:{key}" if key else None


def _request_hash(memory: MemoryTenant, verb: str, body: BaseModel) -> str:
    """What an idempotency key is bound to: the operation, the memory and the body (less the key)."""
    request = {
        "operation": verb,
        "memory": memory.id,
        "body": body.model_dump(mode="json", exclude={"idempotency_key"}),
    }
    return hashlib.sha256(json.dumps(request, sort_keys=True).encode("utf-8")).hexdigest()


def _endorser(
    principal: Principal, memory: MemoryTenant, verb: str, body: ValidateIn | FeedbackIn
) -> Endorser:
    """The caller as the one moving the memory's trust, its key and request hash bound to this call."""
    return Endorser(
        actor_id=principal.id,
        actor_type=principal.actor_type.value,
        idempotency_key=_idempotency_key(principal, verb, body.idempotency_key),
        request_hash=_request_hash(memory, verb, body),
    )


async def validate(
    resources: GatewayResources, principal: Principal, ref: str, body: ValidateIn
) -> ValidatePublic:
    """Boost a memory's confidence by the validation source's amount, once per principal and source."""
    memory = await _authorized(resources, principal, ref, VALIDATION_ACTION[body.source])
    outcome = await trust.validate(
        resources.engine,
        memory.id,
        body.source,
        _endorser(principal, memory, "validate", body),
        reason=body.reason,
    )
    return ValidatePublic(
        id=memory.id,
        citation=memory.citation,
        confidence=outcome.confidence,
        validation_source=body.source,
        counted=outcome.counted,
    )


async def feedback(
    resources: GatewayResources, principal: Principal, ref: str, body: FeedbackIn
) -> FeedbackPublic:
    """Record whether a memory helped: one vote per principal (its latest); usefulness follows the votes."""
    memory = await _authorized(resources, principal, ref, "read")
    usefulness = await trust.feedback(
        resources.engine, memory.id, body.helpful, _endorser(principal, memory, "feedback", body)
    )
    return FeedbackPublic(id=memory.id, citation=memory.citation, usefulness=usefulness)


async def set_decay_policy(
    resources: GatewayResources, principal: Principal, ref: str, body: DecayPolicyIn
) -> DecayPolicyPublic:
    """Set how a memory's confidence decays; deciding it takes `approve` at the memory's scope."""
    memory = await _authorized(resources, principal, ref, "approve")
    changed = await trust.set_decay_policy(
        resources.engine,
        memory.id,
        body.decay_policy.value,
        Endorser(principal.id, principal.actor_type.value),
        reason=body.reason,
    )
    return DecayPolicyPublic(
        id=memory.id, citation=memory.citation, decay_policy=body.decay_policy, changed=changed
    )


async def supersede(
    resources: GatewayResources, principal: Principal, ref: str, body: SupersedeIn
) -> SupersedePublic | ChangeRequestPublic:
    """Replace the head of a chain with new content, or propose it (a change request) where approval is due.

    Conflict if the memory is not the head; InvalidInput if nothing is left of the content once redacted.
    """
    memory = await _authorized(resources, principal, ref, "write")
    proposed = proposed_content(body.content, body.title)
    embedding = await embedding_of(resources, proposed, body.title is not None and bool(body.title.strip()))
    change = changes.Supersession(
        memory_id=memory.id,
        content=proposed.content,
        title=proposed.title,
        reason=body.reason,
        actor_id=principal.id,
        actor_type=principal.actor_type.value,
        canonical_key=body.canonical_key,
        embedding=embedding,
        valid_from_commit=body.valid_from_commit,
        idempotency_key=_idempotency_key(principal, "supersede", body.idempotency_key),
        request_hash=_request_hash(memory, "supersede", body),
    )
    if needs_change_request(resources, principal, memory):
        request = changes.as_request(change, memory, redaction_counts=proposed.redaction_counts)
        return await propose(resources, principal, request)
    approver = is_approver(resources, principal, memory)
    if not approver:
        carries = quarantine_reason(proposed.content, proposed.title)
        await _refuse_direct_change(resources, ref, memory, carries)
    outcome = await changes.supersede(
        resources.engine,
        change,
        trust=ChangeTrust.HUMAN_VALIDATED if approver else ChangeTrust.DRAFT,
        approved_at=memory.scope if resources.authorizer.requires_validation(memory.scope) else None,
    )
    return SupersedePublic(id=outcome.memory_id, citation=outcome.citation, superseded_id=memory.id)


async def _refuse_direct_change(
    resources: GatewayResources, ref: str, memory: MemoryTenant, carries: str | None
) -> None:
    """PolicyDenied when a non-approver's change applied at once would replace what it may not
    (`changes.direct_change_refusal`)."""
    async with resources.engine.connect() as conn:
        held = await standings_of(conn, [memory.id])
    standing = held[memory.id].standing if memory.id in held else Standing.UNREVIEWED
    refusal = direct_change_refusal(ref, standing=standing, carries=carries)
    if refusal is not None:
        raise PolicyDenied(refusal)


async def retire(
    resources: GatewayResources, principal: Principal, ref: str, body: RetireIn
) -> RetirePublic | ChangeRequestPublic:
    """Deprecate a memory without a successor, or propose it where approval is due; Conflict if deprecated."""
    memory = await _authorized(resources, principal, ref, "write")
    change = changes.Retirement(
        memory_id=memory.id,
        reason=body.reason,
        actor_id=principal.id,
        actor_type=principal.actor_type.value,
        idempotency_key=_idempotency_key(principal, "retire", body.idempotency_key),
        request_hash=_request_hash(memory, "retire", body),
    )
    if needs_change_request(resources, principal, memory):
        return await propose(resources, principal, changes.as_request(change, memory))
    if not is_approver(resources, principal, memory):
        await _refuse_direct_change(resources, ref, memory, None)
    await changes.retire(
        resources.engine,
        change,
        approved_at=memory.scope if resources.authorizer.requires_validation(memory.scope) else None,
    )
    return RetirePublic(id=memory.id, citation=memory.citation)


async def history(resources: GatewayResources, principal: Principal, ref: str) -> HistoryPublic:
    """The supersession chain through a memory, oldest first."""
    memory = await _authorized(resources, principal, ref, "read")
    async with resources.engine.connect() as conn:
        chain = await memory_history(conn, memory.id)
    return HistoryPublic(
        id=memory.id,
        versions=[
            VersionPublic.model_validate({**asdict(v), "active": v.deprecated_at is None}) for v in chain
        ],
    )
