"""The approval gate: how every workflow that waits for a human takes a decision.

`ApprovalGate` is the base of `PromotionWorkflow` and `ChangeRequestWorkflow`. It holds the decision's
handlers once — `approve` and `reject`, each as a signal (the Temporal UI) and as an update with a
validator (the API: the caller learns at once whether the decision counted) — the approver check (one
activity, `check_approver`: the approver named in the payload is a claim until the activity finds it is an
enabled principal allowed to approve the scope, proven by the gateway's grant or by the human's approval
token, see activities/gate_checks.py), the record of refused decisions, and the wait for a decision with
its timeout (the default lives in governance/approval.py).

A gated workflow says what is decided (`_decided_scope`: org, project, scope, the task or memory), in
which state it waits (`_awaiting_approval`), and how it shows itself (`_show`); it keeps its status
(with `state` and `refusals`) in `self._status`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import timedelta
from typing import Generic, Protocol, TypeVar

from temporalio import workflow
from temporalio.common import RawValue, RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from activities.gate_checks import (
        ApproverCheckInput,
        ApproverCheckResult,
        GateCheckActivities,
        RefusedSignalInput,
    )
    from governance.errors import GovernanceError, InvalidInput
    from workflows.approval_contract import ApprovalAck, ApprovalRequest, DecisionNames, ErrorTypes, Refusal

__all__ = [
    "ApprovalGate",
    "GatedStatus",
    "Decision",
    "DecidedScope",
    "DB_RETRY",
    "DB_TIMEOUT",
    "how_to_decide",
    "TIMED_OUT",
    "REFUSAL_AUDIT_PATCH",
    "AUDITED_SIGNAL_REFUSALS",
    "TOKEN_DECISION_PATCH",
]

# Short database steps: retry quickly, give up after a while (a down database surfaces as `failed`).
DB_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=20,
    non_retryable_error_types=[ErrorTypes.NOT_FOUND, ErrorTypes.INVALID_INPUT],
)
DB_TIMEOUT = timedelta(seconds=30)
SIGNAL, UPDATE = "signal", "update"
TIMED_OUT = "approval timed out"
# Runs from then on record the signals they refuse before any check (unreadable, untimely, per-item decisions
# that do not fit) in the audit trail, as the checks record theirs; runs that began before replay without.
# At most AUDITED_SIGNAL_REFUSALS of them a run: every refusal stays in the workflow's state, but a flood of
# signals does not become a flood of rows.
REFUSAL_AUDIT_PATCH = "audit-refused-signals"
AUDITED_SIGNAL_REFUSALS = 100
# Runs from then on bind an approval token to the decision it was first sent with: the signal shows the
# token to whoever reads the history, and the token itself names no decision, so a token sent to approve
# cannot be sent again to reject (or the reverse) while it is valid; runs that began before replay without
TOKEN_DECISION_PATCH = "approval-token-binds-its-decision"
UNREADABLE_HINT = '{"approver": "<principal id>", "note": "...", "token": "<token>"}'


def _short(err: BaseException, limit: int = 200) -> str:
    """One line of an error, bounded (a refusal is shown to approvers, not a traceback)."""
    text = " ".join(f"{type(err).__name__}: {err}".split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class Decision:
    """An accepted decision (or the system's, when nobody decided in time)."""

    approved: bool
    approver: str
    approver_type: str | None
    note: str
    timed_out: bool = False
    # the gateway's grant: its row holds the note of a decision made through the API (the update carries
    # no note, so no history holds it); the activities recording the decision read it from there
    grant: str | None = None
    # the id of the per-item decisions accepted with an approval (rows of promotion_item_decisions)
    item_decisions: str | None = None


@dataclass(frozen=True)
class DecidedScope:
    """What the approver check judges: the tenant, the scope, and the task or memory decided."""

    org: str
    project: str | None
    target_scope: str
    task_id: str = ""
    memory_id: str | None = None
    change_request_id: str | None = None
    # the plan holds quarantined items: only a human who approves at project scope or wider clears it
    quarantine: bool = False
    # the promotion run whose plan is decided, and its size (per-item decisions name its items)
    run_id: str = ""
    plan_total: int = 0


def how_to_decide(token_command: str, api_command: str) -> str:
    """The current details' line telling a human how to decide from the Temporal UI (or the CLI)."""
    return (
        f"Approve: `{token_command}` prints your signal's input (a token bound to you and to what you "
        "decide, valid 15 minutes); then *More Actions → Send a Signal*, name `approve`, input "
        '`{"approver": "<your principal id>", "note": "...", "token": "<the token>"}`; '
        f"reject: signal `reject` with the same input. Or `{api_command}`."
    )


class GatedStatus(Protocol):
    """What a gated workflow's status holds for the gate: its state and the refused decisions."""

    state: str
    refusals: list[Refusal]


StatusT = TypeVar("StatusT", bound=GatedStatus)
PayloadT = TypeVar("PayloadT")


class ApprovalGate(ABC, Generic[StatusT]):
    """The decision handlers, the approver check and the wait, shared by every human-gated workflow."""

    _status: StatusT
    _decision: Decision | None = None
    _audited_refusals = 0  # refused signals recorded in the audit trail by this run
    _token_decisions: dict[str, str] | None = None  # each approval token's first decision in this run

    # ---- what the gated workflow says ----------------------------------------------------------
    @abstractmethod
    def _awaiting_approval(self) -> bool:
        """Whether the workflow is in its awaiting-approval state."""

    @abstractmethod
    def _decided_scope(self) -> DecidedScope | None:
        """What is decided, once known (None while the workflow still prepares it)."""

    @abstractmethod
    def _noun(self) -> str:
        """What the workflow is, in refusals ("promotion", "change request")."""

    @abstractmethod
    def _show(self) -> None:
        """Refresh the workflow's current details."""

    def _audit_subject(self) -> tuple[str, str | None]:
        """The task and memory a refused signal is recorded against, as far as the workflow knows them."""
        scope = self._decided_scope()
        return ("", None) if scope is None else (scope.task_id, scope.memory_id)

    def _check_items(self, request: ApprovalRequest, approving: bool) -> None:
        """Refuse per-item decisions this workflow cannot take (a GovernanceError saying why).

        Only a promotion's plan has items (PromotionWorkflow overrides this); anything else refuses them.
        """
        if request.items:
            raise InvalidInput(f"a {self._noun()} has no plan items to decide one by one")

    # ---- the handlers --------------------------------------------------------------------------
    # The signals take the raw payload: a payload the SDK could not read as an ApprovalRequest (`[1,2,3]`,
    # `"x"`, `{}`) would otherwise be dropped with a traceback and leave no trace; here it is refused.
    @workflow.signal(name=DecisionNames.APPROVE)
    async def approve_signal(self, raw: RawValue) -> None:
        """Approval from the Temporal UI: the approver is a claim, checked with its token before it counts."""
        request = await self._read_signal(raw, DecisionNames.APPROVE)
        if request is not None:
            await self._decide(True, request, SIGNAL)

    @workflow.signal(name=DecisionNames.REJECT)
    async def reject_signal(self, raw: RawValue) -> None:
        """Rejection from the Temporal UI, checked like an approval."""
        request = await self._read_signal(raw, DecisionNames.REJECT)
        if request is not None:
            await self._decide(False, request, SIGNAL)

    async def _read_signal(self, raw: RawValue, verb: str) -> ApprovalRequest | None:
        """The signal's request, or None once an unreadable payload is recorded as refused."""
        return await self._read_payload(raw, verb, ApprovalRequest, UNREADABLE_HINT)

    async def _read_payload(
        self, raw: RawValue, verb: str, kind: type[PayloadT], hint: str
    ) -> PayloadT | None:
        """A signal's payload read as `kind`, or None once an unreadable one is refused (in the state and
        the audit trail, `_refuse_signal`): every signal a human can type takes its raw payload and reads it
        here, so none is dropped by the SDK without a trace. `hint` shows the input expected."""
        try:
            value = workflow.payload_converter().from_payload(raw.payload, kind)
            if not isinstance(value, kind):
                raise TypeError(f"not an object: {type(value).__name__}")
        except Exception as err:  # any decoding failure is the sender's input, never the workflow's
            reason = f"unreadable input, expected {hint}: {_short(err)}"
            workflow.logger.warning("%s signal refused: %s", verb, reason)
            await self._refuse_signal("", verb, reason)
            return None
        return value

    @workflow.update(name=DecisionNames.APPROVE)
    async def approve_update(self, request: ApprovalRequest) -> ApprovalAck:
        """Approval through the API (or the UI's Update action); answers accepted or refused at once."""
        return await self._decide(True, request, UPDATE)

    @approve_update.validator
    def _validate_approve(self, request: ApprovalRequest) -> None:
        self._validate_decision(request, approving=True)

    @workflow.update(name=DecisionNames.REJECT)
    async def reject_update(self, request: ApprovalRequest) -> ApprovalAck:
        """Rejection through the API; answers accepted or refused at once."""
        return await self._decide(False, request, UPDATE)

    @reject_update.validator
    def _validate_reject(self, request: ApprovalRequest) -> None:
        self._validate_decision(request, approving=False)

    def _validate_decision(self, request: ApprovalRequest, *, approving: bool) -> None:
        if not request.approver:
            raise ApplicationError("approver is required", type=ErrorTypes.INVALID_INPUT)
        if not self._awaiting_approval() or self._decision is not None:
            raise ApplicationError(
                f"{self._noun()} is {self._status.state}, not awaiting approval", type=ErrorTypes.CONFLICT
            )
        refusal = self._items_refusal(request, approving)
        if refusal is not None:
            raise refusal

    def _items_refusal(self, request: ApprovalRequest, approving: bool) -> ApplicationError | None:
        """The per-item decisions' refusal (typed as the domain's error, so the API maps it), or None."""
        try:
            self._check_items(request, approving)
        except GovernanceError as err:
            return ApplicationError(str(err), type=type(err).__name__, non_retryable=True)
        return None

    # ---- the decision --------------------------------------------------------------------------
    async def _decide(self, approved: bool, request: ApprovalRequest, channel: str) -> ApprovalAck:
        verb = DecisionNames.APPROVE if approved else DecisionNames.REJECT
        if self._decided_scope() is None and self._awaiting_approval():
            # a decision arriving while the workflow still prepares what is decided waits for it
            await workflow.wait_condition(
                lambda: self._decided_scope() is not None or not self._awaiting_approval()
            )
        bound = self._token_decision(request, verb)
        if bound is not None:
            reason = f"the approval token was sent to {bound} first; it cannot {verb}"
            if channel == UPDATE:
                self._refuse(request.approver, verb, channel, reason)
                raise ApplicationError(reason, type=ErrorTypes.APPROVAL_REFUSED, non_retryable=True)
            await self._refuse_signal(request.approver, verb, reason)
            return ApprovalAck(False, self._status.state, reason)
        scope = self._decided_scope()
        if not self._awaiting_approval() or self._decision is not None or scope is None:
            # only signals get here (validators stop updates); keep the attempt visible to approvers
            await self._refuse_signal(request.approver, verb, "not awaiting approval")
            return ApprovalAck(False, self._status.state, "not awaiting approval")
        if request.items and channel == SIGNAL:
            # a signal has no validator: its per-item decisions meet the update's checks here
            refusal = self._items_refusal(request, approved)
            if refusal is not None:
                await self._refuse_signal(request.approver, verb, str(refusal.message))
                return ApprovalAck(False, self._status.state, str(refusal.message))
        check = await self._check_approver(verb, request, channel, scope)
        if not check.accepted:
            self._refuse(request.approver, verb, channel, check.reason)
            if channel == UPDATE:
                raise ApplicationError(check.reason, type=ErrorTypes.APPROVAL_REFUSED, non_retryable=True)
            return ApprovalAck(False, self._status.state, check.reason)
        if self._decision is not None:  # another approver won while this one was being checked
            return ApprovalAck(False, self._status.state, "already decided")
        self._decision = Decision(
            approved,
            request.approver,
            check.approver_type,
            request.note,
            grant=request.grant,
            item_decisions=check.item_decisions,
        )
        return ApprovalAck(True, self._status.state, "accepted")

    def _token_decision(self, request: ApprovalRequest, verb: str) -> str | None:
        """The decision `request.token` was first sent with, when it is not `verb` (TOKEN_DECISION_PATCH);
        None otherwise, binding the token to `verb` on its first sight (before any check: the human's own
        signal is the first to show it)."""
        if not request.token or not workflow.patched(TOKEN_DECISION_PATCH):
            return None
        if self._token_decisions is None:
            self._token_decisions = {}
        first = self._token_decisions.setdefault(request.token, verb)
        return first if first != verb else None

    async def _check_approver(
        self, verb: str, request: ApprovalRequest, channel: str, scope: DecidedScope
    ) -> ApproverCheckResult:
        result: ApproverCheckResult = await workflow.execute_local_activity_method(
            GateCheckActivities.check_approver,
            ApproverCheckInput(
                request_id=str(workflow.uuid4()),
                workflow_id=workflow.info().workflow_id,
                task_id=scope.task_id,
                approver=request.approver,
                decision=verb,
                channel=channel,
                org=scope.org,
                project=scope.project,
                target_scope=scope.target_scope,
                grant=request.grant,
                note=request.note,
                memory_id=scope.memory_id,
                token=request.token,
                change_request_id=scope.change_request_id,
                quarantine=scope.quarantine,
                items=list(request.items),
                plan_run_id=scope.run_id,
                plan_total=scope.plan_total,
            ),
            start_to_close_timeout=DB_TIMEOUT,
            retry_policy=DB_RETRY,
        )
        return result

    def _refuse(self, who: str | None, decision: str, channel: str, reason: str) -> None:
        """Record a refused decision or evidence where approvers see it (state query, current details)."""
        self._status.refusals.append(Refusal(who or "", decision, channel, reason))
        self._show()

    async def _refuse_signal(self, who: str | None, decision: str, reason: str) -> None:
        """Refuse a signal no check judged (`_refuse`), and record it in the audit trail as the checks
        record the refusals they make (REFUSAL_AUDIT_PATCH, AUDITED_SIGNAL_REFUSALS). A database that
        cannot take the row leaves the refusal in the workflow's state and log only."""
        self._refuse(who, decision, SIGNAL, reason)
        if self._audited_refusals >= AUDITED_SIGNAL_REFUSALS or not workflow.patched(REFUSAL_AUDIT_PATCH):
            return
        self._audited_refusals += 1
        task_id, memory_id = self._audit_subject()
        try:
            await workflow.execute_local_activity_method(
                GateCheckActivities.record_refused_signal,
                RefusedSignalInput(
                    workflow_id=workflow.info().workflow_id,
                    request_id=str(workflow.uuid4()),
                    decision=decision,
                    claimed=who or "",
                    reason=reason,
                    task_id=task_id,
                    memory_id=memory_id,
                ),
                start_to_close_timeout=DB_TIMEOUT,
                retry_policy=DB_RETRY,
            )
        except ActivityError as err:
            workflow.logger.warning("refused %s signal not recorded in the audit trail: %s", decision, err)

    async def _wait_for_decision(self, timeout_seconds: float) -> Decision:
        """The accepted decision, or the system's rejection when nobody decided within `timeout_seconds`
        (decisions arriving after it are refused as not awaiting approval)."""
        try:
            await workflow.wait_condition(
                lambda: self._decision is not None, timeout=timedelta(seconds=timeout_seconds)
            )
        except TimeoutError:
            self._decision = Decision(False, "system", "system", TIMED_OUT, timed_out=True)
        assert self._decision is not None
        return self._decision
