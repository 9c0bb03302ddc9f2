"""Circular-fix detection: record an attempted approach, ask whether a proposal already failed.

Both act on a task authorised for `write` (the check counts refusals and may mark the subtask stuck). The
rules are in governance/approaches.py and the statements in governance/storage/approaches.py; the same calls
back the worker's `approach_record` / `approach_check` activities.
"""

from __future__ import annotations

from api.schemas.approaches import ApproachIn, ApproachPublic, CheckIn, CheckPublic
from api.services.gateway import GatewayResources
from governance.adapters.embedders import embed_one, make_embedder
from governance.identity import Principal
from governance.redaction import redact_free_text
from governance.storage.approaches import check_proposal, record_attempt
from governance.storage.staging import TaskInfo

__all__ = ["record_approach", "check_approach"]


async def record_approach(
    state: GatewayResources, principal: Principal, task: TaskInfo, body: ApproachIn
) -> ApproachPublic:
    """Record an attempted approach and its outcome (failures keep their reason)."""
    approach, reason = redact_free_text(body.approach) or "", redact_free_text(body.reason)  # free text
    body = body.model_copy(update={"approach": approach, "reason": reason})
    embedding = await embed_one(make_embedder(state.settings), body.approach)
    async with state.engine.begin() as conn:
        past = await record_attempt(
            conn,
            task_id=task.id,
            subtask=body.subtask,
            approach=body.approach,
            outcome=body.outcome,
            reason=body.reason,
            embedding=embedding,
            actor_id=principal.id,
            actor_type=principal.actor_type.value,
            idempotency_key=f"http:{principal.id}:approach:{body.idempotency_key}"
            if body.idempotency_key
            else None,
        )
    return ApproachPublic.model_validate(past)


async def check_approach(
    state: GatewayResources, principal: Principal, task: TaskInfo, body: CheckIn
) -> CheckPublic:
    """Did this approach (or a near-duplicate) already fail on this task? Refusals may mark it stuck."""
    settings = state.settings
    embedding = await embed_one(make_embedder(settings), body.approach)
    async with state.engine.begin() as conn:
        answer = await check_proposal(
            conn,
            task_id=task.id,
            subtask=body.subtask,
            approach=body.approach,
            embedding=embedding,
            similarity_threshold=settings.approach_similarity_threshold,
            refusals_before_stuck=settings.approach_refusals_before_stuck,
            actor_id=principal.id,
            actor_type=principal.actor_type.value,
        )
    return CheckPublic(
        valid=answer.check.valid,
        reason=answer.check.reason,
        suggestion=answer.check.suggestion,
        stuck=answer.stuck,
        refusals=answer.refusals,
        history=[ApproachPublic.model_validate(p) for p in answer.check.history],
    )
