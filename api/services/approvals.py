"""The approval gate's gateway side, shared by promotions and change requests.

- `proof_grant`: the gateway's proof that a start or evidence came from its authenticated caller (a grant
  row the workflow's gate checks look up; not written in `approval_mode=trusting`, where none is asked);
- `send_decision`: approve or reject as the caller: a grant row for them (holding the note), then the
  workflow's update (carrying the grant, not the note);
- `mint_approval_token`: the token a human pastes into a Temporal UI signal, bound to them, the workflow
  and the digest of what they decide (governance/approval.py), signed under the server's secret.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio.client import WorkflowHandle

from api.schemas.approvals import ApprovalTokenPublic
from api.services.gateway import GatewayResources
from governance.approval import TokenClaims, mint_token
from governance.errors import Conflict
from governance.identity import Principal
from governance.item_decisions import ItemChoice, PreparedChoice
from governance.redaction import redact_free_text
from governance.storage.approval_proofs import approval_secret
from governance.storage.item_decisions import record_item_decisions
from governance.storage.plans import PlanKey
from governance.storage.promotions import record_approval_grant
from workflows.approval_contract import ApprovalAck, ApprovalRequest

__all__ = ["UPDATE_TIMEOUT", "ItemDecisions", "proof_grant", "send_decision", "mint_approval_token"]

UPDATE_TIMEOUT = timedelta(seconds=60)


@dataclass(frozen=True)
class ItemDecisions:
    """An approval's per-item decisions, checked against the plan of run `key` and prepared for storage."""

    key: PlanKey
    choices: Sequence[PreparedChoice]


async def _record_grant(
    resources: GatewayResources,
    principal: Principal,
    workflow_id: str,
    task_id: str,
    what: str,
    note: str,
    items: ItemDecisions | None = None,
    start_digest: str | None = None,
) -> str:
    grant = uuid.uuid4().hex
    async with resources.engine.begin() as conn:
        await record_approval_grant(
            conn,
            workflow_id=workflow_id,
            task_id=task_id,
            grant=grant,
            principal=principal,
            decision=what,
            note=note,
            start_digest=start_digest,
        )
        if items is not None:
            # the reasons and texts stay here, under the grant: the update carries indexes only
            await record_item_decisions(
                conn,
                key=items.key,
                decision_id=grant,
                task_id=task_id,
                decided_by=principal.id,
                choices=items.choices,
            )
    return grant


async def proof_grant(
    resources: GatewayResources,
    principal: Principal,
    workflow_id: str,
    task_id: str,
    what: str,
    start_digest: str | None = None,
) -> str | None:
    """The gateway's grant proving `what` ("start", "verify") came from this caller; None when trusting.

    The workflow's gate checks accept a start or evidence only with a grant row naming the caller (the
    Temporal UI and `temporal workflow start` cannot write one) unless `approval_mode=trusting`. A start's
    grant names `start_digest`, the digest of the input it starts with: the first run to show it binds it,
    and only with that input.
    """
    if not resources.settings.proof_required:
        return None
    return await _record_grant(
        resources, principal, workflow_id, task_id, what, "", start_digest=start_digest
    )


async def send_decision(
    resources: GatewayResources,
    principal: Principal,
    handle: WorkflowHandle[Any, Any],
    *,
    task_id: str,
    decision: str,
    note: str,
    errors: AbstractAsyncContextManager[None],
    what: str,
    items: ItemDecisions | None = None,
) -> ApprovalAck:
    """Approve or reject `what` as the caller: a grant row, then the `approve`/`reject` update.

    The workflow checks the caller again (and the grant); its refusal is PolicyDenied (a 403), another
    decision accepted first a Conflict. `items`: an approval's per-item decisions, stored with the grant.
    """
    note = redact_free_text(note) or ""
    # the note stays in the grant row (the activities recording the decision read it there): the update
    # carries the grant's id only, so the workflow's history holds no note (docs/privacy.md)
    grant = await _record_grant(resources, principal, handle.id, task_id, decision, note, items)
    indexes = [ItemChoice(c.index, c.decision.value) for c in items.choices] if items is not None else []
    async with errors:
        ack: ApprovalAck = await handle.execute_update(
            decision,
            ApprovalRequest(approver=principal.id, note="", grant=grant, items=indexes),
            result_type=ApprovalAck,
            rpc_timeout=UPDATE_TIMEOUT,
        )
    if not ack.accepted:  # another approver's decision was accepted first
        raise Conflict(f"{what} was {ack.reason}")
    return ack


def mint_approval_token(
    resources: GatewayResources, principal: Principal, workflow_id: str, digest: str
) -> ApprovalTokenPublic:
    """A token for the caller to decide `workflow_id` in the state `digest`, from the Temporal UI."""
    if resources.settings.api_only:
        raise Conflict(
            "approval_mode is api_only: the Temporal UI's decisions are refused; decide through the API"
        )
    expires = time.time() + resources.settings.approval_token_ttl_seconds
    token = mint_token(
        approval_secret(resources.settings), TokenClaims(principal.id, workflow_id, digest, expires)
    )
    return ApprovalTokenPublic(
        token=token,
        principal=principal.id,
        workflow_id=workflow_id,
        digest=digest,
        expires_at=datetime.fromtimestamp(int(expires), UTC),
        approval_mode=resources.settings.gate_mode.value,
        signal_input=json.dumps({"approver": principal.id, "note": "", "token": token}),
    )
