"""ChangeRequestWorkflow: the gate in front of every change to validated published memory.

A supersede or retire of a memory at a scope whose policy requires validation (project and org by
default), or a lift of memories into such a scope (governance/lifting.py: its `scope` is the target's),
asked by anyone but a human allowed to approve that scope, is stored as a change request
(governance/storage/change_requests.py) and decided here, one workflow per request, id `change-<id>`.
The requester is checked by activity first (exists, enabled, still may write there); then the workflow
waits for `approve` or `reject` at the approval gate it shares with promotions (workflows/approval.py), as
a signal (the Temporal UI: the approver named in the payload is only a claim, proven by an approval token
and checked by the same `check_approver` activity as a promotion's) or as an update (the API, with the
gateway's grant row). On approval one activity applies the change in one transaction, re-checking that
the memory is still the head of its chain (else the request ends `conflict` and nothing changes).

The history carries the request's id, scopes, counts and states only (a lift: scope keys and how many
memories): no reason, title, content or note, which stay in Postgres (docs/privacy.md); the current
details link to the request's page in loregate's console. A lift runs the same commands as a supersede
(describe, check, wait, apply), so the workflow's command sequence is unchanged and running workflows
replay without a patch marker. The
`LoregateState` search attribute and the current details (what changes, where to read it, how to decide)
always show where it stands.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import SearchAttributeKey
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from activities.change_requests import (
        ApplyChangeInput,
        ApplyChangeResult,
        ChangeDescription,
        ChangeRequestActivities,
        CloseChangeInput,
        DescribeChangeInput,
    )
    from activities.gate_checks import ChangeCheckInput, CheckResult, GateCheckActivities
    from workflows.change_requests_contract import (
        NO_INPUT,
        STATE_ATTRIBUTE,
        ChangeRequestInput,
        ChangeRequestResult,
        ChangeRequestState,
        ChangeRequestStatus,
        ErrorTypes,
        Names,
        start_digest,
    )

from workflows.approval import (
    DB_RETRY,
    DB_TIMEOUT,
    ApprovalGate,
    DecidedScope,
    Decision,
    how_to_decide,
)
from workflows.failure_summary import failure_summary
from workflows.input_decoding import start_input_init

__all__ = ["ChangeRequestWorkflow", "LOREGATE_STATE", "DB_RETRY"]

LOREGATE_STATE = SearchAttributeKey.for_keyword(STATE_ATTRIBUTE)
# Runs from then on give the requester check the digest of their input, which the gateway's start grant
# names (the same patch as a promotion's)
START_DIGEST_PATCH = "start-grant-digest"


def _lift_lines(status: ChangeRequestStatus) -> list[str]:
    """What a lift carries: from → to, and how many memories (never their titles or content)."""
    return [
        f"**Change request `{status.request_id}`: lift {status.lift_count} "
        f"memor{'y' if status.lift_count == 1 else 'ies'} to {status.scope} scope** — `{status.state}`",
        "",
        f"Requested by `{status.requested_by}`",
        "",
        f"**From** {', '.join(f'`{k}`' for k in status.lift_from)} **→ to** `{status.target_scope_key}`",
    ]


def _change_lines(status: ChangeRequestStatus) -> list[str]:
    """A supersede or retire: which memory, at which scope, asked by whom."""
    after = " (retired, without a successor)" if status.operation == "retire" else ""
    return [
        f"**Change request `{status.request_id}`: {status.operation} memory `{status.memory_id}` "
        f"({status.scope} scope)**{after} — `{status.state}`",
        "",
        f"Requested by `{status.requested_by}`",
    ]


def _markdown(status: ChangeRequestStatus, console: str = "") -> str:
    """The current details: ids, scopes, counts and states; the texts are read in loregate."""
    lines = _lift_lines(status) if status.operation == "lift" else _change_lines(status)
    where = f"[the console]({console}), " if console else "the console, "
    lines += [
        "",
        "The reason, the memory now and after, and the word diff are in loregate, not in this history: "
        f"{where}`loregate changes show {status.request_id}`, "
        f"or `GET /v1/change-requests/{status.request_id}`.",
    ]
    if status.state == ChangeRequestState.AWAITING_APPROVAL:
        lines += [
            "",
            how_to_decide(
                f"loregate approval-token --change {status.request_id}",
                f"loregate changes approve {status.request_id}",
            ),
        ]
    if status.refusals:
        lines += ["", f"Refused decisions: {len(status.refusals)} (last: {status.refusals[-1].reason})"]
    if status.decided_by:
        lines += ["", f"Decided by: {status.decided_by}"]
    if status.error:
        lines += ["", f"Error: {status.error}"]
    return "\n".join(lines)


@workflow.defn
class ChangeRequestWorkflow(ApprovalGate[ChangeRequestStatus]):
    """Check the requester → wait for a decision → apply (or close) one change request."""

    @start_input_init
    def __init__(self, data: ChangeRequestInput = NO_INPUT) -> None:
        self._status = ChangeRequestStatus(
            request_id=data.request_id,
            state=ChangeRequestState.AWAITING_APPROVAL,
            requested_by=data.requested_by,
        )
        self._described: ChangeDescription | None = None
        self._described_for_show: ChangeDescription | None = None
        self._decision: Decision | None = None

    # ---- queries -------------------------------------------------------------------------------
    @workflow.query(name=Names.STATE)
    def state(self) -> ChangeRequestStatus:
        """Where the request stands, old and new side by side, with refused decisions."""
        return self._status

    # ---- the approval gate (workflows/approval.py) ---------------------------------------------
    def _awaiting_approval(self) -> bool:
        return self._status.state == ChangeRequestState.AWAITING_APPROVAL

    def _decided_scope(self) -> DecidedScope | None:
        described = self._described
        if described is None:
            return None
        return DecidedScope(
            described.org,
            described.project,
            described.scope,
            memory_id=described.memory_id,
            change_request_id=self._status.request_id,
        )

    def _noun(self) -> str:
        return "change request"

    # ---- the run -------------------------------------------------------------------------------
    def _set_state(self, state: ChangeRequestState) -> None:
        self._status.state = state
        workflow.upsert_search_attributes([LOREGATE_STATE.value_set(state)])
        self._show()

    def _show(self) -> None:
        described = self._described_for_show
        workflow.set_current_details(_markdown(self._status, described.console_url if described else ""))

    @workflow.run
    async def run(self, data: ChangeRequestInput = NO_INPUT) -> ChangeRequestResult:
        try:
            result = await self._run(data)
        except ActivityError as err:
            cause = err.cause if err.cause is not None else err
            summary = failure_summary(str(cause))
            self._status.error = summary
            self._set_state(ChangeRequestState.FAILED)
            result = ChangeRequestResult(data.request_id, ChangeRequestState.FAILED, reason=summary)
        await workflow.wait_condition(workflow.all_handlers_finished)
        return result

    async def _run(self, data: ChangeRequestInput) -> ChangeRequestResult:
        wf_id = workflow.info().workflow_id
        described: ChangeDescription = await workflow.execute_local_activity_method(
            ChangeRequestActivities.describe,
            DescribeChangeInput(data.request_id),
            start_to_close_timeout=DB_TIMEOUT,
            retry_policy=DB_RETRY,
        )
        self._described_for_show = described
        status = self._status
        status.operation, status.memory_id, status.scope = (
            described.operation,
            described.memory_id,
            described.scope,
        )
        # ids, scopes and counts only (an older history's texts are not shown again)
        status.target_scope_key, status.lift_from = described.target_scope_key, described.lift_from
        status.lift_count = described.lift_count
        await self._check_requester(data)
        if described.state != ChangeRequestState.AWAITING_APPROVAL:
            # a second run for a request already decided (e.g. started by hand): it stays as it is
            self._status.error = f"the request is already {described.state}"
            self._set_state(ChangeRequestState(described.state))
            return ChangeRequestResult(data.request_id, described.state, reason=self._status.error)
        self._described = described
        decision = await self._await_approval(data)
        if decision.timed_out:
            await self._close(wf_id, ChangeRequestState.EXPIRED, "system", "system", decision.note)
            return ChangeRequestResult(data.request_id, ChangeRequestState.EXPIRED, reason=decision.note)
        status.decided_by = decision.approver  # the note stays out of the status (the API reads it stored)
        if not decision.approved:
            await self._close(
                wf_id,
                ChangeRequestState.REJECTED,
                decision.approver,
                decision.approver_type,
                decision.note,  # empty through the API: the activity reads it from the grant
                grant=decision.grant,
            )
            return ChangeRequestResult(
                data.request_id, ChangeRequestState.REJECTED, decided_by=decision.approver, reason="rejected"
            )
        self._set_state(ChangeRequestState.APPLYING)
        applied: ApplyChangeResult = await workflow.execute_local_activity_method(
            ChangeRequestActivities.apply,
            ApplyChangeInput(
                data.request_id,
                wf_id,
                decision.approver,
                decision.approver_type,
                decision.note,
                grant=decision.grant,
            ),
            start_to_close_timeout=DB_TIMEOUT,
            retry_policy=DB_RETRY,
        )
        status.result_memory_id = applied.result_memory_id
        if applied.state == ChangeRequestState.CONFLICT:
            status.error = applied.reason
        self._set_state(ChangeRequestState(applied.state))
        return ChangeRequestResult(
            data.request_id,
            applied.state,
            decided_by=decision.approver,
            result_memory_id=applied.result_memory_id,
            reason=applied.reason,
        )

    async def _await_approval(self, data: ChangeRequestInput) -> Decision:
        """Show the request as awaiting approval and wait for an accepted decision (or the timeout's)."""
        self._set_state(ChangeRequestState.AWAITING_APPROVAL)
        return await self._wait_for_decision(data.approval_timeout_seconds)

    async def _check_requester(self, data: ChangeRequestInput) -> None:
        """Refuse (fail) a request whose requester is not its author, unknown, disabled or may not write."""
        check: CheckResult = await workflow.execute_local_activity_method(
            GateCheckActivities.check_change_request,
            ChangeCheckInput(
                workflow_id=workflow.info().workflow_id,
                request_id=data.request_id,
                requested_by=data.requested_by,
                grant=data.grant,
                start_digest=start_digest(data) if workflow.patched(START_DIGEST_PATCH) else None,
            ),
            start_to_close_timeout=DB_TIMEOUT,
            retry_policy=DB_RETRY,
        )
        if not check.accepted:
            # the check closed the stored request if it was its own author that was refused
            self._status.error = check.reason
            self._set_state(ChangeRequestState.REFUSED)
            raise ApplicationError(check.reason, type=ErrorTypes.START_REFUSED, non_retryable=True)

    async def _close(
        self,
        wf_id: str,
        state: ChangeRequestState,
        who: str | None,
        kind: str | None,
        note: str,
        grant: str | None = None,
    ) -> None:
        closed: str = await workflow.execute_local_activity_method(
            ChangeRequestActivities.close,
            CloseChangeInput(self._status.request_id, wf_id, state.value, who, kind, note, grant=grant),
            start_to_close_timeout=DB_TIMEOUT,
            retry_policy=DB_RETRY,
        )
        self._set_state(ChangeRequestState(closed))
