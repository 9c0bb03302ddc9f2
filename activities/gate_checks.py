"""Identity and policy checks for what reaches the gate through Temporal rather than through the API.

The gateway authenticates its callers; a workflow started with `temporal workflow start`, or a signal sent
from the Temporal UI, carries only claims (`requested_by`, `given_by`, `approver`). These activities check
each claim against the principals table and the Casbin policy before a workflow acts on it, so every
channel meets the same rules:

- a promotion runs only for an enabled principal allowed to `promote` into its target scope in the task's
  tenant (`check_start`);
- `human_approved` evidence counts only from an enabled human allowed to `approve` that scope
  (`check_evidence`);
- a decision counts only from an enabled principal allowed to `approve` that scope (`check_approver`), for
  a promotion and for a change request alike (an org-scope memory's approver is judged in its own project,
  as the gateway judges it);
- a change request runs only for the enabled principal that asked for it, still allowed to `write` the
  memory's scope in its tenant (`promote` into the target scope, for a lift) (`check_change_request`);
- unless `approval_mode=trusting`, a claim must also prove its sender (governance/approval.py): starts,
  evidence and API decisions carry a grant the gateway wrote for the authenticated caller
  (governance/storage/promotions.py); a decision from the Temporal UI carries an approval token the human
  minted with their own key, checked here (signature, expiry, principal, workflow, and the digest of the
  plan or change request, governance/storage/approval_proofs.py); evidence signals are refused. With
  `approval_mode=api_only`, tokens do not count either: every signal is refused.

*Enabled* means holding at least one unrevoked API key (`loregate principals disable` revokes them all),
checked at the moment of each claim. A refusal is recorded as a REJECTED event, so the audit trail shows
who tried what.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from temporalio import activity

from governance.approval import TokenRefused, check_token
from governance.config import Settings
from governance.errors import GovernanceError, NotFound
from governance.identity import Principal, judged_project
from governance.instructions import approval_scope
from governance.item_decisions import ItemChoice, check_against_plan, check_choices, prepare
from governance.lifting import lift_refusal
from governance.operations.promotions import check_started
from governance.scopes import ActorType, ValidationSource
from governance.storage.approval_proofs import approval_secret, change_request_digest, plan_digest
from governance.storage.change_requests import ChangeRequest, close_change_request, get_change_request
from governance.storage.events import EventType, record_event
from governance.storage.identity import get_enabled_principal
from governance.storage.item_decisions import item_decisions_of, plan_item_views, record_item_decisions
from governance.storage.lifting import lift_source_tenants
from governance.storage.plans import PlanKey
from governance.storage.promotions import use_approval_grant
from governance.storage.staging import get_task
from policy.enforcer import Authorizer

__all__ = [
    "GateCheckActivities",
    "StartCheckInput",
    "EvidenceCheckInput",
    "ApproverCheckInput",
    "ChangeCheckInput",
    "RefusedSignalInput",
    "CheckResult",
    "ApproverCheckResult",
]

SIGNAL = "signal"


@dataclass
class StartCheckInput:
    """May `requested_by` promote this task into `target_scope`? `grant`: the gateway's proof, if any."""

    workflow_id: str
    task_id: str
    target_scope: str
    requested_by: str | None
    grant: str | None = None
    # evidence given with the start is checked with it (human_approved needs an approver)
    evidence_source: str | None = None
    # the digest of the start input (the contract's `start_digest`): the gateway's grant names the one it sent
    start_digest: str | None = None


@dataclass
class EvidenceCheckInput:
    """May `given_by` give this evidence for this promotion? `channel`: "signal" or "update"."""

    workflow_id: str
    task_id: str
    target_scope: str
    source: str
    given_by: str | None
    channel: str
    request_id: str
    grant: str | None = None


@dataclass
class CheckResult:
    """Accepted, or refused with the reason (the refusal is already recorded as an event)."""

    accepted: bool
    reason: str
    principal_type: str | None = None


@dataclass
class ApproverCheckInput:
    """Is `approver` (a claim when it came through a signal) allowed to decide this promotion or change?

    A change request gives `task_id=""`, the `memory_id` it changes and, for an org-scope memory,
    `project=None`: the approver is then judged in its own project of that org.
    """

    request_id: str
    workflow_id: str
    task_id: str
    approver: str
    decision: str  # "approve" | "reject"
    channel: str  # "signal" (Temporal UI) | "update" (API or UI)
    org: str
    project: str | None
    target_scope: str
    grant: str | None = None
    note: str = ""
    memory_id: str | None = None
    # a Temporal UI decision's proof: the approval token the human minted with their own key
    token: str | None = None
    # a change request's id (its content's digest is what the token binds)
    change_request_id: str | None = None
    # the plan holds quarantined items: only a human who may approve at least project scope decides
    quarantine: bool = False
    # an approval's per-item decisions (governance/item_decisions.py) on the plan of run `plan_run_id`
    # (`plan_total` items): the API's name indexes only (its rows are under the grant), a signal's carry
    # their texts, checked and stored here
    items: list[ItemChoice] = field(default_factory=list)
    plan_run_id: str = ""
    plan_total: int = 0


@dataclass
class RefusedSignalInput:
    """A signal its workflow refused before any check could judge its sender (unreadable, sent while the
    workflow was not awaiting it, per-item decisions that do not fit the plan): what the audit trail keeps.

    `claimed` is whoever the payload named (nobody, when it could not be read); `task_id` or `memory_id`
    what the workflow decides, as far as it knows it yet."""

    workflow_id: str
    request_id: str
    decision: str  # "approve" | "reject" | "verify"
    claimed: str
    reason: str
    task_id: str = ""
    memory_id: str | None = None


@dataclass
class ChangeCheckInput:
    """May `requested_by` still ask for this change request? `grant`: the gateway's proof, if any."""

    workflow_id: str
    request_id: str
    requested_by: str | None
    grant: str | None = None
    start_digest: str | None = None


@dataclass
class ApproverCheckResult:
    """Accepted, or refused with the reason (the refusal is already recorded as an event)."""

    accepted: bool
    reason: str
    approver_name: str | None = None
    approver_type: str | None = None
    # the id the accepted per-item decisions are stored under (None: the plan is decided whole)
    item_decisions: str | None = None


@dataclass
class _Refusal:
    """What a refused claim writes to the audit trail."""

    workflow_id: str
    task_id: str
    claimed: str | None
    reason: str
    payload: dict[str, Any]
    idempotency_key: str
    memory_id: str | None = None


def _key_hint(task_id: str) -> str:
    """A raw start's input names the task by its key; the id its tenant gave it alone names none."""
    if "/" in task_id:
        return ""
    return (
        f" (a workflow input names a task by its key, `<org>/{task_id}`, "
        f"as its workflow id `promote-<org>/{task_id}` does)"
    )


class GateCheckActivities:
    """The checks, over one engine and the process's authoriser."""

    def __init__(self, *, engine: AsyncEngine, authorizer: Authorizer, settings: Settings) -> None:
        self._engine = engine
        self._authorizer = authorizer
        self._settings = settings
        self._mode = settings.gate_mode.value
        self._api_only = settings.api_only
        self._proof = settings.proof_required

    @activity.defn(name="promotion_check_start")
    async def check_start(self, data: StartCheckInput) -> CheckResult:
        """Refuse a promotion requested by nobody, by an unknown or disabled principal, or without promote."""
        reason, principal = await self._start_refusal(data)
        if reason is not None:
            await self._record(
                _Refusal(
                    data.workflow_id,
                    data.task_id,
                    data.requested_by,
                    f"start refused: {reason}",
                    {"refused": "start"},
                    # per run: a start again under the same workflow id is refused on the record too
                    f"{data.workflow_id}:{_run_id()}:refused-start",
                ),
                principal,
            )
        return _result(reason, principal)

    @activity.defn(name="promotion_check_evidence")
    async def check_evidence(self, data: EvidenceCheckInput) -> CheckResult:
        """Refuse human_approved from anyone but an approving human; in api_only mode, ungranted evidence."""
        reason, principal = await self._evidence_refusal(data)
        if reason is not None:
            await self._record(
                _Refusal(
                    data.workflow_id,
                    data.task_id,
                    data.given_by,
                    f"verify refused: {reason}",
                    {"refused": "verify", "source": data.source, "channel": data.channel},
                    f"{data.workflow_id}:refused-verify:{data.request_id}",
                ),
                principal,
            )
        return _result(reason, principal)

    @activity.defn(name="check_approver")
    async def check_approver(self, data: ApproverCheckInput) -> ApproverCheckResult:
        """Accept a decision only from an enabled principal Casbin lets `approve` this scope and tenant.

        A refusal is recorded as a REJECTED event (payload `refused_approval: true`); the promotion itself
        keeps waiting.
        """
        reason, principal = await self._approver_refusal(data)
        item_decisions: str | None = None
        if reason is None and principal is not None:
            reason, item_decisions = await self._item_decisions(data, principal)
        if reason is None and principal is not None:
            return ApproverCheckResult(
                accepted=True,
                reason="accepted",
                approver_name=principal.name,
                approver_type=principal.actor_type.value,
                item_decisions=item_decisions,
            )
        await self._record(
            _Refusal(
                data.workflow_id,
                data.task_id,
                data.approver,
                f"{data.decision} refused: {reason}",
                {"refused_approval": True, "decision": data.decision, "channel": data.channel},
                f"{data.workflow_id}:refusal:{data.request_id}",
                data.memory_id,
            ),
            principal,
        )
        return ApproverCheckResult(accepted=False, reason=str(reason))

    @activity.defn(name="gate_record_refused_signal")
    async def record_refused_signal(self, data: RefusedSignalInput) -> None:
        """Record a signal refused before any check as the checks record theirs: a REJECTED event naming
        the claimed sender (unverified: no actor type), with the channel and why. Nothing else changes."""
        if data.decision == "verify":
            payload: dict[str, Any] = {"refused": "verify", "channel": "signal", "checked": False}
        else:
            payload = {
                "refused_approval": True,
                "decision": data.decision,
                "channel": "signal",
                "checked": False,
            }
        await self._record(
            _Refusal(
                data.workflow_id,
                data.task_id,
                data.claimed or None,
                f"{data.decision} refused: {data.reason}",
                payload,
                f"{data.workflow_id}:refusal:{data.request_id}",
                memory_id=data.memory_id,
            ),
            None,
        )

    @activity.defn(name="change_request_check_start")
    async def check_change_request(self, data: ChangeCheckInput) -> CheckResult:
        """Refuse a change request asked by nobody, by another, an unknown or disabled principal, or one
        that may no longer `write` the memory's scope."""
        reason, principal, request = await self._change_refusal(data)
        if reason is None:
            return _result(reason, principal)
        if (
            request is not None
            and request.requested_by == data.requested_by
            and await self._proven_start(data)
        ):
            # its own author was refused (disabled, or may no longer write there): the request ends. An
            # unproven start (a raw one, naming the author) leaves the request alone: it proves no author
            async with self._engine.begin() as conn:
                await close_change_request(
                    conn,
                    request.id,
                    state="refused",
                    decided_by=request.requested_by,
                    decided_by_type=request.actor_type,
                    note=reason,
                    workflow_id=data.workflow_id,
                )
        await self._record(
            _Refusal(
                data.workflow_id,
                "",
                data.requested_by,
                f"change request refused: {reason}",
                {"refused": "change_request", "change_request": data.request_id},
                f"{data.workflow_id}:{_run_id()}:refused-start",
                request.memory_id if request is not None else None,
            ),
            principal,
        )
        return _result(reason, principal)

    async def _proven_start(self, data: ChangeCheckInput) -> bool:
        """Whether the start came from the gateway (or need not prove it): only then may it end a request."""
        if not self._proof:
            return True
        if data.grant is None or not data.requested_by:
            return False
        async with self._engine.begin() as conn:
            refusal = await use_approval_grant(
                conn,
                workflow_id=data.workflow_id,
                grant=data.grant,
                principal_id=data.requested_by,
                decision="start",
                run_id=_run_id(),
                start_digest=data.start_digest,
            )
        return refusal is None

    async def _item_decisions(
        self, data: ApproverCheckInput, principal: Principal
    ) -> tuple[str | None, str | None]:
        """(refusal, decision id) of an approval's per-item decisions; (None, None) without any.

        Through the API the gateway checked and stored them under its grant: they must be those rows, the
        approver's. A signal's are checked here as the API checks them (the plan's items, quarantine,
        reasons, sizes), then stored under the check's request id, in one transaction.
        """
        if not data.items:
            if data.grant is not None:
                # a grant given with per-item decisions proves that approval only: presented without them
                # (a signal replaying the grant an update carried) it would publish what the human rejected
                async with self._engine.connect() as conn:
                    if await item_decisions_of(conn, data.workflow_id, data.grant):
                        return (
                            "the grant was given with per-item decisions; it proves no decision without them",
                            None,
                        )
            return None, None
        key = PlanKey(data.workflow_id, data.plan_run_id)
        asked = {(c.index, c.decision) for c in data.items}
        try:
            async with self._engine.begin() as conn:
                if data.grant is not None:
                    stored = await item_decisions_of(conn, data.workflow_id, data.grant)
                    if stored:
                        if asked != {(r.idx, r.decision) for r in stored} or any(
                            r.decided_by != principal.id or r.run_id != data.plan_run_id for r in stored
                        ):
                            return "the per-item decisions are not those the gateway recorded", None
                        return None, data.grant
                check_choices(
                    data.items,
                    data.plan_total,
                    approving=data.decision == "approve",
                    texts_given=True,
                    max_content_bytes=self._settings.max_entry_bytes,
                )
                views = await plan_item_views(conn, key, [c.index for c in data.items])
                check_against_plan(data.items, views)
                await record_item_decisions(
                    conn,
                    key=key,
                    decision_id=data.request_id,
                    task_id=data.task_id,
                    decided_by=principal.id,
                    choices=[prepare(c, views[c.index]) for c in data.items],
                )
        except GovernanceError as err:
            return str(err), None
        return None, data.request_id

    # ---- the rules -----------------------------------------------------------------------------
    async def _start_refusal(self, data: StartCheckInput) -> tuple[str | None, Principal | None]:
        if not data.requested_by:
            return "the promotion names no requester (requested_by)", None
        async with self._engine.begin() as conn:  # a grant's first use binds it to this run
            task = await get_task(conn, data.task_id)
            if task is None:
                return f"task {data.task_id!r} does not exist{_key_hint(data.task_id)}", None
            principal = await get_enabled_principal(conn, data.requested_by)
            if principal is None:
                return f"unknown or disabled principal {data.requested_by!r}", None
            unproven = await self._ungranted(
                conn, data.workflow_id, data.grant, principal, "start", data.start_digest
            )
            if unproven is not None:
                return (
                    f"approval_mode is {self._mode}: promotions must be started through the API "
                    f"(a start without the gateway's grant proves no requester){unproven}",
                    principal,
                )
        if not self._authorizer.allowed(
            principal, org=task.org, project=task.project, scope=data.target_scope, action="promote"
        ):
            return (
                f"{principal.actor_type.value} {principal.id} may not promote into {data.target_scope} scope "
                f"in {task.org}/{task.project}",
                principal,
            )
        if data.evidence_source == ValidationSource.HUMAN_APPROVED.value and not self._may_approve(
            principal, task.org, task.project, data.target_scope
        ):
            return (
                f"human_approved evidence needs a human allowed to approve; {principal.id} is not",
                principal,
            )
        # the workflow id must be the task's current or next promotion (governance/operations/promotions.py):
        # a raw start cannot run an ended promotion again, another task's, or one out of turn
        claim = await check_started(
            self._engine, data.task_id, data.workflow_id, data.target_scope, principal.id
        )
        if claim is not None:
            return claim, principal
        return None, principal

    async def _change_refusal(
        self, data: ChangeCheckInput
    ) -> tuple[str | None, Principal | None, ChangeRequest | None]:
        async with self._engine.begin() as conn:  # a grant's first use binds it to this run
            try:
                request = await get_change_request(conn, data.request_id)
            except NotFound:
                return f"change request {data.request_id!r} does not exist", None, None
            if not data.requested_by or data.requested_by != request.requested_by:
                return "the change request was asked by another principal", None, request
            principal = await get_enabled_principal(conn, data.requested_by)
            if principal is None:
                return f"unknown or disabled principal {data.requested_by!r}", None, request
            unproven = await self._ungranted(
                conn, data.workflow_id, data.grant, principal, "start", data.start_digest
            )
            if unproven is not None:
                return (
                    f"approval_mode is {self._mode}: changes must be requested through the API "
                    f"(a start without the gateway's grant proves no requester){unproven}",
                    principal,
                    request,
                )
        project = judged_project(principal, request.org, request.project)
        # a lift publishes into its target scope, as a promotion does: it needs `promote` there
        action = "promote" if request.operation == "lift" else "write"
        if not self._authorizer.allowed(
            principal, org=request.org, project=project, scope=request.scope, action=action
        ):
            return (
                f"{principal.actor_type.value} {principal.id} may not {action} {request.scope} scope "
                f"in {request.org}/{project or '*'}",
                principal,
                request,
            )
        return None, principal, request

    async def _evidence_refusal(self, data: EvidenceCheckInput) -> tuple[str | None, Principal | None]:
        human_word = data.source == ValidationSource.HUMAN_APPROVED.value
        if not human_word and not self._proof:
            return None, None  # tests passed, PR merged…: what the orchestrator reports, trusted
        if data.channel == SIGNAL and self._proof:
            return f"approval_mode is {self._mode}: evidence must come through the authenticated API", None
        if not data.given_by:
            if human_word:
                return "human_approved evidence must name the human who gives it (given_by)", None
            return (
                f"approval_mode is {self._mode}: {data.source} evidence must name who gives it (given_by) "
                "and come with the grant the authenticated API writes (POST /v1/promotions/{task_id}/verify)",
                None,
            )
        async with self._engine.begin() as conn:  # a grant's first use binds it to this run
            principal = await get_enabled_principal(conn, data.given_by)
            if principal is None:
                return f"unknown or disabled principal {data.given_by!r}", None
            task = await get_task(conn, data.task_id)
            if task is None:
                return f"task {data.task_id!r} does not exist", principal
            unproven = await self._ungranted(conn, data.workflow_id, data.grant, principal, "verify")
            if unproven is not None:
                return (
                    f"approval_mode is {self._mode} and no API-authenticated grant matches{unproven}",
                    principal,
                )
        if human_word and not self._may_approve(principal, task.org, task.project, data.target_scope):
            return (
                f"human_approved evidence needs a human allowed to approve {data.target_scope} scope "
                f"in {task.org}/{task.project}; {principal.id} is not",
                principal,
            )
        return None, principal

    async def _approver_refusal(self, data: ApproverCheckInput) -> tuple[str | None, Principal | None]:
        if data.channel == SIGNAL and self._api_only:
            return "approval_mode is api_only: approvals must come through the authenticated API", None
        if not data.approver:
            return "the decision names no approver", None
        async with self._engine.begin() as conn:  # a grant's first use binds it to this run
            principal = await get_enabled_principal(conn, data.approver)
            if principal is None:
                return f"unknown or disabled principal {data.approver!r}", None
            unproven = await self._unproven_decision(conn, data, principal)
            if unproven is not None:
                return unproven, principal
            lift = await self._lift_refusal(conn, data, principal)
            if lift is not None:
                return lift, principal
        project = judged_project(principal, data.org, data.project)
        scope = approval_scope(data.target_scope) if data.quarantine else data.target_scope
        if data.quarantine and principal.actor_type is not ActorType.HUMAN:
            return (
                f"quarantined plan items need a human's approval, not {principal.actor_type.value}'s",
                principal,
            )
        if not self._authorizer.allowed(
            principal, org=data.org, project=project, scope=scope, action="approve"
        ):
            return (
                f"{principal.actor_type.value} {principal.id} may not approve {scope} scope "
                f"in {data.org}/{project or '*'}",
                principal,
            )
        return None, principal

    async def _lift_refusal(
        self, conn: AsyncConnection, data: ApproverCheckInput, principal: Principal
    ) -> str | None:
        """A lift is decided only by a human who may read every memory it carries (governance/lifting.py).

        The same rule the API applies: the Temporal UI's signal must not let a human of another project
        approve a lift it could not even see. None for anything but a lift.
        """
        if data.change_request_id is None:
            return None
        sources = (await lift_source_tenants(conn, [data.change_request_id])).get(data.change_request_id, [])
        if not sources:
            return None
        reads_every_source = all(
            self._authorizer.allowed(
                principal,
                org=source.org,
                project=judged_project(principal, source.org, source.project),
                scope=source.scope,
                action="read",
            )
            for source in sources
        )
        refusal = lift_refusal(
            reads_every_source=reads_every_source,
            deciding=True,
            human=principal.actor_type is ActorType.HUMAN,
            approves_target=True,  # judged next, against the target scope
        )
        return None if refusal is None else f"{principal.actor_type.value} {principal.id} {refusal}"

    async def _unproven_decision(
        self, conn: AsyncConnection, data: ApproverCheckInput, principal: Principal
    ) -> str | None:
        """Why the decision does not prove its sender is `principal`, or None when it does (or need not)."""
        if not self._proof:
            return None
        if data.token and not self._api_only:
            return await self._token_refusal(conn, data, data.token)
        unproven = await self._ungranted(conn, data.workflow_id, data.grant, principal, data.decision)
        if unproven is None:
            return None
        if self._api_only:
            return f"approval_mode is api_only and no API-authenticated grant matches{unproven}"
        return (
            f"approval_mode is {self._mode}: a decision from the Temporal UI needs an approval token "
            f'(`loregate approval-token`, pasted as "token" beside "approver"){unproven}'
        )

    async def _token_refusal(self, conn: AsyncConnection, data: ApproverCheckInput, token: str) -> str | None:
        if data.change_request_id is not None:
            digest: str | None = await change_request_digest(conn, data.change_request_id)
        else:
            digest = await plan_digest(conn, data.workflow_id)
        try:
            check_token(
                approval_secret(self._settings),
                token,
                principal=data.approver,
                workflow_id=data.workflow_id,
                digest=digest,
                now=time.time(),
            )
        except TokenRefused as refused:
            return str(refused)
        return None

    async def _ungranted(
        self,
        conn: AsyncConnection,
        workflow_id: str,
        grant: str | None,
        principal: Principal,
        what: str,
        start_digest: str | None = None,
    ) -> str | None:
        """`_ungranted`, where the mode asks for proof (None: proven, or no proof asked)."""
        if not self._proof:
            return None
        return await _ungranted(conn, workflow_id, grant, principal, what, start_digest)

    def _may_approve(self, principal: Principal, org: str, project: str, scope: str) -> bool:
        return principal.actor_type is ActorType.HUMAN and self._authorizer.allowed(
            principal, org=org, project=project, scope=scope, action="approve"
        )

    async def _record(self, refusal: _Refusal, principal: Principal | None) -> None:
        async with self._engine.begin() as conn:
            await record_event(
                conn,
                event_type=EventType.REJECTED,
                actor_id=(refusal.claimed or "")[:64] or None,
                actor_type=principal.actor_type.value if principal else None,
                task_id=refusal.task_id or None,
                memory_id=refusal.memory_id,
                workflow_id=refusal.workflow_id,
                reason=refusal.reason,
                payload=refusal.payload,
                idempotency_key=refusal.idempotency_key,
                if_absent=True,
            )


def _result(reason: str | None, principal: Principal | None) -> CheckResult:
    kind = principal.actor_type.value if principal else None
    if reason is None:
        return CheckResult(accepted=True, reason="accepted", principal_type=kind)
    return CheckResult(accepted=False, reason=reason, principal_type=kind)


def _run_id() -> str:
    """The run the checking activity serves: a grant proves a request to one run only."""
    return activity.info().workflow_run_id or "" if activity.in_activity() else ""


async def _ungranted(
    conn: AsyncConnection,
    workflow_id: str,
    grant: str | None,
    principal: Principal,
    what: str,
    start_digest: str | None = None,
) -> str | None:
    """None when the gateway's `grant` proves this principal's `what` to this run of the workflow (binding
    it to the run at its first use), else what to add to the refusal: nothing without a grant, or why the
    grant given proves nothing."""
    if grant is None:
        return ""
    refusal = await use_approval_grant(
        conn,
        workflow_id=workflow_id,
        grant=grant,
        principal_id=principal.id,
        decision=what,
        run_id=_run_id(),
        start_digest=start_digest,
    )
    return None if refusal is None else f": {refusal}"
