"""NotificationWorkflow: tells registered webhooks what waits for a human or went wrong (governance/webhooks).

Started every minute by the `loregate-notifications` Temporal Schedule (workflows/schedules.py), overlap
SKIP. One activity finds new events (promotions waiting for approval, change requests pending, subtasks stuck,
promotions failed) and records a pending delivery per (webhook, event), once; then each pending delivery is
posted by its own activity, retried by Temporal with backoff up to `max_attempts`, and given up (recorded
`failed`) after the last. The history carries delivery ids and counts only: what a delivery says lives in
Postgres.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from activities.notifications import (
        REFUSED_DESTINATION,
        DeliverInput,
        FindInput,
        GiveUpInput,
        NotificationActivities,
    )
    from workflows.promotion_contract import STATE_ATTRIBUTE, WORKFLOW_TYPE, PromotionState

__all__ = ["NotificationWorkflow", "NotificationInput", "NotificationResult", "NOTIFICATION_WORKFLOW_ID"]

NOTIFICATION_WORKFLOW_ID = "loregate-notifications"
_DB_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=30), maximum_attempts=5
)
_FIND_TIMEOUT = timedelta(seconds=60)
# what a sweep's input may ask (the settings' own bounds)
MAX_DELIVERY_ATTEMPTS = 50
MAX_ATTEMPT_SECONDS = 120.0
MAX_FIRST_RETRY_SECONDS = 3600.0


@dataclass
class NotificationInput:
    """One sweep: how often a delivery is tried, how long each try may take, the first wait between tries."""

    max_attempts: int = 5
    attempt_timeout_seconds: float = 10.0
    first_retry_seconds: float = 5.0

    def __post_init__(self) -> None:
        # the settings' bounds (governance/config.py): a raw start asking 0 tries (Temporal's "unlimited")
        # or hour-long tries would post to a webhook without end; it fails unread (workflows/input_decoding)
        if not 1 <= self.max_attempts <= MAX_DELIVERY_ATTEMPTS:
            raise ValueError(f"max_attempts must be 1 to {MAX_DELIVERY_ATTEMPTS}, not {self.max_attempts}")
        if not 0 < self.attempt_timeout_seconds <= MAX_ATTEMPT_SECONDS:
            raise ValueError(
                f"attempt_timeout_seconds must be above 0 and at most {MAX_ATTEMPT_SECONDS:g}, "
                f"not {self.attempt_timeout_seconds}"
            )
        if not 0 < self.first_retry_seconds <= MAX_FIRST_RETRY_SECONDS:
            raise ValueError(
                f"first_retry_seconds must be above 0 and at most {MAX_FIRST_RETRY_SECONDS:g}, "
                f"not {self.first_retry_seconds}"
            )


@dataclass
class NotificationResult:
    notices: int
    delivered: int
    failed: int


def _awaiting_query() -> str:
    return (
        f'WorkflowType = "{WORKFLOW_TYPE}" AND {STATE_ATTRIBUTE} = "{PromotionState.AWAITING_APPROVAL.value}"'
    )


@workflow.defn
class NotificationWorkflow:
    """Find new events, then deliver every pending delivery (in parallel), each retried on its own."""

    @workflow.run
    async def run(self, data: NotificationInput) -> NotificationResult:
        found = await workflow.execute_activity_method(
            NotificationActivities.find,
            FindInput(awaiting_query=_awaiting_query()),
            start_to_close_timeout=_FIND_TIMEOUT,
            retry_policy=_DB_RETRY,
        )
        outcomes = await asyncio.gather(*(self._deliver(i, data) for i in found.delivery_ids))
        delivered = sum(1 for ok in outcomes if ok)
        return NotificationResult(
            notices=found.notices, delivered=delivered, failed=len(outcomes) - delivered
        )

    async def _deliver(self, delivery_id: int, data: NotificationInput) -> bool:
        retry = RetryPolicy(
            initial_interval=timedelta(seconds=data.first_retry_seconds),
            backoff_coefficient=2.0,
            maximum_interval=timedelta(minutes=5),
            maximum_attempts=data.max_attempts,
            non_retryable_error_types=[REFUSED_DESTINATION],
        )
        try:
            result = await workflow.execute_activity_method(
                NotificationActivities.deliver,
                DeliverInput(delivery_id),
                start_to_close_timeout=timedelta(seconds=data.attempt_timeout_seconds + 5),
                retry_policy=retry,
            )
        except ActivityError as err:
            cause = err.cause if err.cause is not None else err
            await workflow.execute_activity_method(
                NotificationActivities.give_up,
                GiveUpInput(delivery_id, str(cause)),
                start_to_close_timeout=_FIND_TIMEOUT,
                retry_policy=_DB_RETRY,
            )
            return False
        return result.delivered
