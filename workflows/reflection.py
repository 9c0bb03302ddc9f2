"""ReflectionWorkflow: distil a project's new episodes into insights, published through the normal gate.

One workflow per project at a time (`reflect-<org>/<project>`, workflows/reflection_contract.py). It
claims the project's pending episodes (each episode is claimed by one reflection only), distils insights from
the window of recent episodes (groups holding a claimed one), stages them as `insight` entries of a
reflection task and runs that task's `PromotionWorkflow` as a child: the insights are planned, deduplicated
or superseded by key, wait for a human's approval at project and org scope, and are published like any
other memory. Once published, each insight is linked to the episodes it was distilled from.

Started by a promotion whose publication left the project's pending importance over the threshold, by the
scheduled sweep (workflows/reflection_schedule.py) or by a human through the API. It carries ids and counts
only (docs/privacy.md).
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ChildWorkflowError
from temporalio.workflow import ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from activities.reflection import (
        ClaimInput,
        ClaimResult,
        FinishInput,
        FinishResult,
        ReflectionActivities,
        StageInput,
        StageResult,
    )
    from governance.scopes import ValidationSource
    from workflows.promotion import PromotionWorkflow
    from workflows.promotion_contract import PromotionInput, PromotionResult, Verification, workflow_id_for
    from workflows.reflection_contract import (
        NO_INPUT,
        Names,
        ReflectionInput,
        ReflectionResult,
        ReflectionState,
    )

from workflows.failure_summary import failure_summary
from workflows.input_decoding import start_input_init

__all__ = ["ReflectionWorkflow", "REFLECTION_DB_RETRY", "REFLECTION_COMPUTE_RETRY"]

REFLECTION_DB_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=20,
    non_retryable_error_types=["InvalidInput", "NotFound"],
)
# reading the window and an LLM call: slower backoff; the LLM falls back to the rules instead of failing
REFLECTION_COMPUTE_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=2),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(minutes=2),
    maximum_attempts=10,
    non_retryable_error_types=["InvalidInput"],
)
_DB_TIMEOUT = timedelta(seconds=60)
# runs from then on hand the claim the gateway's grant, which proves their requester (runs that began
# before replay without it)
START_GRANT_PATCH = "reflection-start-grant"
_COMPUTE_TIMEOUT = timedelta(minutes=10)


@workflow.defn
class ReflectionWorkflow:
    """Claim → distil and stage → promote (the gate, approval) → link insights to their episodes."""

    @start_input_init
    def __init__(self, data: ReflectionInput = NO_INPUT) -> None:
        self._result = ReflectionResult(reflection_id="", state=ReflectionState.CLAIMED.value)

    @workflow.query(name=Names.STATUS)
    def status(self) -> ReflectionResult:
        """Where the reflection stands: ids and counts."""
        return self._result

    def _show(self) -> None:
        r = self._result
        lines = [f"**Reflection {r.reflection_id}** — `{r.state}`", f"Episodes claimed: {r.episodes}"]
        if r.task_id:
            lines.append(
                f"Insights: {r.insights}, staged in task `{r.task_id}` (its promotion publishes them)"
            )
        if r.reason:
            lines.append(f"Reason: {r.reason}")
        workflow.set_current_details("\n".join(lines))

    @workflow.run
    async def run(self, data: ReflectionInput = NO_INPUT) -> ReflectionResult:
        wf_id = workflow.info().workflow_id
        reflection_id = workflow.uuid4().hex
        self._result.reflection_id = reflection_id
        claim: ClaimResult = await workflow.execute_activity_method(
            ReflectionActivities.claim,
            ClaimInput(
                reflection_id,
                wf_id,
                data.org,
                data.project,
                data.trigger,
                data.requested_by,
                grant=data.grant if workflow.patched(START_GRANT_PATCH) else None,
            ),
            start_to_close_timeout=_DB_TIMEOUT,
            retry_policy=REFLECTION_DB_RETRY,
        )
        self._result.episodes = claim.episodes
        if claim.reflector is None:
            return self._end(ReflectionState.FAILED, "the org's reflector is disabled: nothing was claimed")
        if claim.episodes == 0:
            return self._end(ReflectionState.NOTHING, "no pending episodes")
        task_id = f"reflect-{reflection_id}"
        promotion_id = workflow_id_for(task_id)
        staged: StageResult = await workflow.execute_activity_method(
            ReflectionActivities.stage,
            StageInput(reflection_id, data.org, data.project, claim.reflector, task_id, promotion_id),
            start_to_close_timeout=_COMPUTE_TIMEOUT,
            retry_policy=REFLECTION_COMPUTE_RETRY,
        )
        self._result.insights = staged.insights
        if staged.task_id is None:
            return self._end(ReflectionState.NOTHING, "no group of episodes supported an insight")
        self._result.task_id = staged.task_id
        self._result.state = ReflectionState.STAGED.value
        self._show()
        try:
            promoted: PromotionResult = await workflow.execute_child_workflow(
                PromotionWorkflow.run,
                PromotionInput(
                    task_id=staged.task_id,
                    target_scope=claim.target_scope,
                    verification=Verification(
                        source=ValidationSource.REPEATED_SUCCESS.value,
                        success=True,
                        given_by=claim.reflector,
                        grant=staged.grant,
                    ),
                    verify_timeout_seconds=claim.verify_timeout_seconds,
                    approval_timeout_seconds=claim.approval_timeout_seconds,
                    requested_by=claim.reflector,
                    grant=staged.grant,
                ),
                id=promotion_id,
                task_queue=workflow.info().task_queue,
                # the promotion is the task's own: it outlives a reflection that is cancelled or terminated
                parent_close_policy=ParentClosePolicy.ABANDON,
            )
        except ChildWorkflowError as err:
            cause = err.cause if err.cause is not None else err
            return await self._finish(staged.task_id, "failed", claim.reflector, failure_summary(str(cause)))
        return await self._finish(staged.task_id, promoted.state, claim.reflector, promoted.reason)

    def _end(self, state: ReflectionState, reason: str) -> ReflectionResult:
        self._result.state, self._result.reason = state.value, reason
        self._show()
        return self._result

    async def _finish(
        self, task_id: str | None, promotion_state: str, reflector: str | None, reason: str | None
    ) -> ReflectionResult:
        finished: FinishResult = await workflow.execute_activity_method(
            ReflectionActivities.finish,
            FinishInput(
                self._result.reflection_id, workflow.info().workflow_id, task_id, promotion_state, reflector
            ),
            start_to_close_timeout=_DB_TIMEOUT,
            retry_policy=REFLECTION_DB_RETRY,
        )
        state = {"published": ReflectionState.PUBLISHED, "rejected": ReflectionState.REJECTED}.get(
            promotion_state, ReflectionState.FAILED
        )
        self._result.linked, self._result.insight_ids = finished.linked, finished.insight_ids[:20]
        return self._end(state, reason or promotion_state)
