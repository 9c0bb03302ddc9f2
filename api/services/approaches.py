"""Circular-fix detection: record an attempted approach, ask whether a proposal already failed.

Both act on a task authorised for `write` (the check counts refusals and may mark the subtask stuck); the
use case is governance/operations/approaches.py, which the worker's `approach_record` / `approach_check`
activities call too.
"""

from __future__ import annotations

import hashlib
import json

from api.schemas.approaches import ApproachIn, ApproachPublic, CheckIn, CheckPublic
from api.services import live
from api.services.gateway import GatewayResources
from governance.adapters.embedders import make_embedder
from governance.identity import Principal
from governance.operations import approaches as operation
from governance.storage.staging import TaskInfo

__all__ = ["record_approach", "check_approach"]


def _request_hash(task: TaskInfo, body: ApproachIn) -> str:
    """What an idempotency key is bound to: the task and the body (less the key). The same key with another
    approach, outcome or reason is a 409, not taken for a replay of the first."""
    request = {
        "operation": "approach",
        "task": task.id,
        "body": body.model_dump(mode="json", exclude={"idempotency_key"}),
    }
    return hashlib.sha256(json.dumps(request, sort_keys=True).encode("utf-8")).hexdigest()


async def record_approach(
    resources: GatewayResources, principal: Principal, task: TaskInfo, body: ApproachIn
) -> ApproachPublic:
    """Record an attempted approach and its outcome (failures keep their reason)."""
    attempt = operation.Attempt(
        task_id=task.id,
        subtask=body.subtask,
        approach=body.approach,
        outcome=body.outcome,
        reason=body.reason,
        actor_id=principal.id,
        actor_type=principal.actor_type.value,
        idempotency_key=f"http:{principal.id}:approach:{body.idempotency_key}"
        if body.idempotency_key
        else None,
        request_hash=_request_hash(task, body),
    )
    past = await operation.record_approach(resources.engine, make_embedder(resources.settings), attempt)
    return ApproachPublic.model_validate(past)


async def check_approach(
    resources: GatewayResources, principal: Principal, task: TaskInfo, body: CheckIn
) -> CheckPublic:
    """Did this approach (or a near-duplicate) already fail on this task? Refusals may mark it stuck."""
    proposal = operation.Proposal(
        task_id=task.id,
        subtask=body.subtask,
        approach=body.approach,
        actor_id=principal.id,
        actor_type=principal.actor_type.value,
    )
    answer = await operation.check_proposal(
        resources.engine, make_embedder(resources.settings), resources.settings, proposal
    )
    elsewhere = await live.approach_warnings(
        resources, principal, task, fingerprint=answer.fingerprint, embedding=answer.embedding
    )
    return CheckPublic.model_validate(answer, from_attributes=True).model_copy(
        update={"elsewhere": elsewhere}
    )
