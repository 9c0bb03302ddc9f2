"""Activities of the notification sweep: find new events, deliver each to its webhooks, give up at last.

`find` asks Temporal's visibility for promotions waiting for a human (their memo names the tenant) and the
database for change requests pending, subtasks stuck and promotions failed; it records one pending delivery
per (webhook, event) — once, whoever finds it again — and returns every pending delivery. `deliver` posts one,
signed (governance/webhooks.py), and records the attempt whatever happens; a refusal or a network error is
raised for Temporal to retry with backoff; `give_up` marks a delivery failed after its last attempt.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio import activity
from temporalio.exceptions import ApplicationError

from governance.adapters.resolver import resolve_addresses
from governance.config import Settings
from governance.errors import InvalidInput
from governance.staging import public_task_id
from governance.storage.webhooks import (
    database_notices,
    delivery,
    enqueue,
    give_up,
    pending_deliveries,
    record_attempt,
)
from governance.webhooks import (
    DELIVERY_HEADER,
    EVENT_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    Notice,
    WebhookEvent,
    check_destination,
    delivery_body,
    destination_host,
    sign,
)

__all__ = [
    "NotificationActivities",
    "FindInput",
    "FindResult",
    "DeliverInput",
    "DeliverResult",
    "GiveUpInput",
    "REFUSED_DESTINATION",
]

# a destination the settings do not allow: retrying changes nothing
REFUSED_DESTINATION = "RefusedDestination"


@dataclass
class FindInput:
    """The visibility query that lists promotions waiting for a human (built from the workflow contract)."""

    awaiting_query: str


@dataclass
class FindResult:
    notices: int = 0
    delivery_ids: list[int] = field(default_factory=list)


@dataclass
class DeliverInput:
    delivery_id: int


@dataclass
class DeliverResult:
    delivered: bool
    status: int | None = None


@dataclass
class GiveUpInput:
    delivery_id: int
    error: str


class NotificationActivities:
    """The sweep's activities, bound to this worker's database engine and settings."""

    def __init__(self, engine: AsyncEngine, settings: Settings) -> None:
        self._engine = engine
        self._settings = settings

    async def _awaiting_promotions(self, query: str) -> list[Notice]:
        notices = []
        async for execution in activity.client().list_workflows(query):
            memo = await execution.memo()
            org, project, task_id = memo.get("org"), memo.get("project"), memo.get("task_id")
            if not isinstance(org, str):
                continue
            notices.append(
                Notice(
                    WebhookEvent.PROMOTION_AWAITING_APPROVAL,
                    f"promotion.awaiting_approval:{execution.id}:{execution.run_id}",
                    org,
                    project if isinstance(project, str) else None,
                    {
                        "task_id": public_task_id(task_id) if isinstance(task_id, str) else task_id,
                        "workflow_id": execution.id,
                        "target_scope": memo.get("target_scope"),
                        "org": org,
                        "project": project,
                    },
                )
            )
        return notices

    @activity.defn(name="find_notifications")
    async def find(self, data: FindInput) -> FindResult:
        """Record a delivery for each new event and matching webhook; every pending delivery's id."""
        notices = await self._awaiting_promotions(data.awaiting_query)
        async with self._engine.begin() as conn:
            notices += await database_notices(conn)
            await enqueue(conn, notices)
            pending = await pending_deliveries(conn)
        return FindResult(notices=len(notices), delivery_ids=pending)

    @activity.defn(name="deliver_webhook")
    async def deliver(self, data: DeliverInput) -> DeliverResult:
        """Post one delivery, signed; record the attempt. Raises for Temporal to retry when it failed."""
        async with self._engine.connect() as conn:
            found = await delivery(conn, data.delivery_id)
        if found is None or found[0].state != "pending":
            return DeliverResult(delivered=found is not None and found[0].state == "delivered")
        item, url, secret = found
        try:
            check_destination(
                url,
                await resolve_addresses(destination_host(url)),
                allow_private=self._settings.webhook_allow_private,
            )
        except InvalidInput as refused:
            await self._record(item.id, status=None, error=str(refused))
            raise ApplicationError(str(refused), type=REFUSED_DESTINATION, non_retryable=True) from refused
        body = delivery_body(item.id, item.event, item.event_key, item.facts)
        timestamp = int(time.time())
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "loregate-webhooks",
            SIGNATURE_HEADER: sign(secret, timestamp, body),
            TIMESTAMP_HEADER: str(timestamp),
            EVENT_HEADER: item.event,
            DELIVERY_HEADER: str(item.id),
        }
        try:
            async with httpx.AsyncClient(
                timeout=self._settings.webhook_timeout_seconds, follow_redirects=False, trust_env=False
            ) as http:
                answer = await http.post(url, content=body, headers=headers)
        except httpx.HTTPError as err:
            await self._record(item.id, status=None, error=f"{type(err).__name__}: {err}"[:500])
            raise ApplicationError(f"webhook {item.webhook_id} unreachable: {err}") from err
        if 200 <= answer.status_code < 300:
            await self._record(item.id, status=answer.status_code, error=None, state="delivered")
            return DeliverResult(delivered=True, status=answer.status_code)
        await self._record(item.id, status=answer.status_code, error=f"HTTP {answer.status_code}")
        raise ApplicationError(f"webhook {item.webhook_id} answered {answer.status_code}")

    async def _record(
        self, delivery_id: int, *, status: int | None, error: str | None, state: str = "pending"
    ) -> None:
        async with self._engine.begin() as conn:
            await record_attempt(conn, delivery_id, status=status, error=error, state=state)

    @activity.defn(name="give_up_webhook")
    async def give_up(self, data: GiveUpInput) -> None:
        """Mark a delivery failed after its last attempt."""
        async with self._engine.begin() as conn:
            await give_up(conn, data.delivery_id, data.error[:500])

    def functions(self) -> list[Callable[..., Any]]:
        """The activities to register on a worker."""
        return [self.find, self.deliver, self.give_up]
