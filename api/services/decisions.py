"""Batch decisions: each item through its own use case, one refusal never stopping the others.

A promotion is decided by `promotions.decide_promotion`, a change request by `change_requests.decide`, as
the caller, one after the other in the order asked: every item meets every check its single decision meets
(the caller's right to approve at that scope, the workflow's own check, a decision only while it waits).
A refusal (any `GovernanceError`) becomes that item's outcome; nothing is undone for the items decided.
"""

from __future__ import annotations

from typing import Literal

from api.schemas.decisions import BatchDecisionIn, BatchDecisionPublic, BatchItemPublic
from api.schemas.promotions import DecisionIn
from api.services import change_requests, promotions
from api.services.gateway import GatewayResources
from governance.errors import GovernanceError
from governance.identity import Principal

__all__ = ["decide_batch"]


def _refused(
    kind: Literal["promotion", "change_request"], item_id: str, exc: GovernanceError
) -> BatchItemPublic:
    return BatchItemPublic(kind=kind, id=item_id, accepted=False, error=exc.kind, detail=exc.detail)


async def decide_batch(
    resources: GatewayResources, principal: Principal, body: BatchDecisionIn
) -> BatchDecisionPublic:
    """Decide every listed promotion and change request as `principal`; each item's outcome in order."""
    note = DecisionIn(note=body.note)
    items: list[BatchItemPublic] = []
    for task_id in body.promotions:
        try:
            answer = await promotions.decide_promotion(resources, principal, task_id, body.decision, note)
        except GovernanceError as exc:
            items.append(_refused("promotion", task_id, exc))
            continue
        items.append(
            BatchItemPublic(
                kind="promotion",
                id=answer.task_id,
                accepted=answer.accepted,
                state=answer.state,
                reason=answer.reason,
                workflow_id=answer.workflow_id,
            )
        )
    for request_id in body.change_requests:
        try:
            change = await change_requests.decide(resources, principal, request_id, body.decision, note)
        except GovernanceError as exc:
            items.append(_refused("change_request", request_id, exc))
            continue
        items.append(
            BatchItemPublic(
                kind="change_request",
                id=change.id,
                accepted=change.accepted,
                state=change.state,
                reason=change.reason,
                workflow_id=change.workflow_id,
            )
        )
    accepted = sum(item.accepted for item in items)
    return BatchDecisionPublic(
        decision=body.decision,
        approver=principal.id,
        accepted=accepted,
        refused=len(items) - accepted,
        items=items,
    )
