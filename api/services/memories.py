"""Trust and lifecycle of published memory: validate, feedback, supersede, retire, and the history of a chain.

`ref` is a memory's uuid or its citation. The caller needs, in the memory's tenant and at the memory's scope
(Casbin): `write` to supersede or retire, `write` to report tests_passed / pr_merged / repeated_success and
`approve` to report human_approved, `read` to give feedback or read the history. Each change is one
statement with its event, in one transaction (governance/storage/lifecycle.py).
"""

from __future__ import annotations

from dataclasses import asdict

from api.schemas.memories import (
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
from api.services.gateway import GatewayResources
from governance.adapters.embedders import embed_one, make_embedder
from governance.identity import Principal
from governance.scopes import ValidationSource
from governance.storage.lifecycle import (
    MemoryTenant,
    boost_memory,
    memory_history,
    memory_tenant,
    record_feedback,
    retire_memory,
    supersede_memory,
)

__all__ = ["VALIDATION_ACTION", "validate", "feedback", "supersede", "retire", "history"]

# which Casbin action reporting each validation source needs
VALIDATION_ACTION: dict[ValidationSource, str] = {
    ValidationSource.TESTS_PASSED: "write",
    ValidationSource.PR_MERGED: "write",
    ValidationSource.REPEATED_SUCCESS: "write",
    ValidationSource.HUMAN_APPROVED: "approve",
}


async def _authorized(state: GatewayResources, principal: Principal, ref: str, action: str) -> MemoryTenant:
    """The memory, after Casbin allowed `principal` to `action` at its scope in its tenant."""
    async with state.engine.connect() as conn:
        memory = await memory_tenant(conn, ref)
    state.authorizer.check(
        principal, org=memory.org, project=memory.project, scope=memory.scope, action=action
    )
    return memory


def _dedupe(principal: Principal, verb: str, key: str | None) -> str | None:
    return f"http:{principal.id}:{verb}:{key}" if key else None


async def validate(
    state: GatewayResources, principal: Principal, ref: str, body: ValidateIn
) -> ValidatePublic:
    """Boost a memory's confidence by the validation source's amount."""
    memory = await _authorized(state, principal, ref, VALIDATION_ACTION[body.source])
    async with state.engine.begin() as conn:
        confidence = await boost_memory(
            conn,
            memory.id,
            body.source,
            actor_id=principal.id,
            actor_type=principal.actor_type.value,
            reason=body.reason,
            dedupe_key=_dedupe(principal, "validate", body.idempotency_key),
        )
    return ValidatePublic(
        id=memory.id, citation=memory.citation, confidence=confidence, validation_source=body.source
    )


async def feedback(
    state: GatewayResources, principal: Principal, ref: str, body: FeedbackIn
) -> FeedbackPublic:
    """Record whether a memory helped; usefulness moves by an exponential moving average."""
    memory = await _authorized(state, principal, ref, "read")
    async with state.engine.begin() as conn:
        usefulness = await record_feedback(
            conn,
            memory.id,
            body.helpful,
            actor_id=principal.id,
            actor_type=principal.actor_type.value,
            dedupe_key=_dedupe(principal, "feedback", body.idempotency_key),
        )
    return FeedbackPublic(id=memory.id, citation=memory.citation, usefulness=usefulness)


async def supersede(
    state: GatewayResources, principal: Principal, ref: str, body: SupersedeIn
) -> SupersedePublic:
    """Replace the head of a chain with new content; Conflict if the memory is not the head."""
    memory = await _authorized(state, principal, ref, "write")
    title = body.title or ""
    embedding = await embed_one(
        make_embedder(state.settings), f"{title}: {body.content}" if title else body.content
    )
    async with state.engine.begin() as conn:
        outcome = await supersede_memory(
            conn,
            memory.id,
            content=body.content,
            reason=body.reason,
            title=body.title,
            canonical_key=body.canonical_key,
            embedding=embedding,
            valid_from_commit=body.valid_from_commit,
            actor_id=principal.id,
            actor_type=principal.actor_type.value,
            dedupe_key=_dedupe(principal, "supersede", body.idempotency_key),
        )
    return SupersedePublic(id=outcome.memory_id, citation=outcome.citation, superseded_id=memory.id)


async def retire(state: GatewayResources, principal: Principal, ref: str, body: RetireIn) -> RetirePublic:
    """Deprecate a memory without a successor; Conflict if it is already deprecated."""
    memory = await _authorized(state, principal, ref, "write")
    async with state.engine.begin() as conn:
        await retire_memory(
            conn,
            memory.id,
            reason=body.reason,
            actor_id=principal.id,
            actor_type=principal.actor_type.value,
            dedupe_key=_dedupe(principal, "retire", body.idempotency_key),
        )
    return RetirePublic(id=memory.id, citation=memory.citation)


async def history(state: GatewayResources, principal: Principal, ref: str) -> HistoryPublic:
    """The supersession chain through a memory, oldest first."""
    memory = await _authorized(state, principal, ref, "read")
    async with state.engine.connect() as conn:
        chain = await memory_history(conn, memory.id)
    return HistoryPublic(
        id=memory.id,
        versions=[
            VersionPublic.model_validate({**asdict(v), "active": v.deprecated_at is None}) for v in chain
        ],
    )
