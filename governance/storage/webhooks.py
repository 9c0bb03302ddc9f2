"""Webhooks and their deliveries: registration, the events found in the database, each attempt recorded.

A delivery row exists once per (webhook, event key): `enqueue` inserts with ON CONFLICT DO NOTHING, so two
workers that find the same event, or one that finds it again each minute, deliver it once.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.staging import public_task_id
from governance.webhooks import Notice, WebhookEvent

__all__ = [
    "Webhook",
    "Delivery",
    "create_webhook",
    "list_webhooks",
    "get_webhook",
    "delete_webhook",
    "enqueue",
    "pending_deliveries",
    "delivery",
    "record_attempt",
    "give_up",
    "list_deliveries",
    "database_notices",
]


@dataclass(frozen=True)
class Webhook:
    """A registered webhook (its secret is read only to sign a delivery)."""

    id: str
    org: str
    project: str | None
    url: str
    events: list[str]
    created_by: str
    created_at: datetime


@dataclass(frozen=True)
class Delivery:
    """One event for one webhook, with its attempts so far."""

    id: int
    webhook_id: str
    event: str
    event_key: str
    facts: dict[str, Any]
    state: str
    attempts: int
    last_status: int | None
    last_error: str | None
    created_at: datetime
    last_attempt_at: datetime | None
    delivered_at: datetime | None


_WEBHOOK = "id::text AS id, org, project, url, events, created_by, created_at"
_DELIVERY = (
    "id, webhook_id::text AS webhook_id, event, event_key, facts, state, attempts, last_status, last_error, "
    "created_at, last_attempt_at, delivered_at"
)


def _webhook(row: Any) -> Webhook:
    return Webhook(row.id, row.org, row.project, row.url, list(row.events), row.created_by, row.created_at)


def _delivery(row: Any) -> Delivery:
    return Delivery(**{k: getattr(row, k) for k in Delivery.__dataclass_fields__})


async def create_webhook(
    conn: AsyncConnection,
    *,
    org: str,
    project: str | None,
    url: str,
    secret: str,
    events: list[str],
    created_by: str,
) -> Webhook:
    """Register a webhook; its row."""
    row = (
        await conn.execute(
            text(
                "INSERT INTO webhooks (id, org, project, url, secret, events, created_by) "
                "VALUES (CAST(:i AS uuid), :o, :p, :u, :s, CAST(:e AS text[]), :c) "
                f"RETURNING {_WEBHOOK}"
            ),
            {
                "i": str(uuid.uuid4()),
                "o": org,
                "p": project,
                "u": url,
                "s": secret,
                "e": events,
                "c": created_by,
            },
        )
    ).one()
    return _webhook(row)


async def list_webhooks(conn: AsyncConnection, *, org: str | None) -> list[Webhook]:
    """The webhooks of an org (None: every org), oldest first."""
    rows = await conn.execute(
        text(
            f"SELECT {_WEBHOOK} FROM webhooks WHERE CAST(:o AS text) IS NULL OR org = :o "
            "ORDER BY created_at, id"
        ),
        {"o": org},
    )
    return [_webhook(r) for r in rows]


async def get_webhook(conn: AsyncConnection, webhook_id: str) -> Webhook | None:
    """One webhook by id, or None (also for a malformed id)."""
    try:
        uuid.UUID(webhook_id)
    except ValueError:
        return None
    row = (
        await conn.execute(
            text(f"SELECT {_WEBHOOK} FROM webhooks WHERE id = CAST(:i AS uuid)"), {"i": webhook_id}
        )
    ).one_or_none()
    return _webhook(row) if row is not None else None


async def delete_webhook(conn: AsyncConnection, webhook_id: str) -> bool:
    """Remove a webhook and its deliveries; False when it did not exist."""
    result = await conn.execute(text("DELETE FROM webhooks WHERE id = CAST(:i AS uuid)"), {"i": webhook_id})
    return (result.rowcount or 0) > 0


async def enqueue(conn: AsyncConnection, notices: list[Notice]) -> list[int]:
    """A pending delivery for each notice and each webhook of its tenant that wants its event (once)."""
    if not notices:
        return []
    rows = await conn.execute(
        text(
            "INSERT INTO webhook_deliveries (webhook_id, event, event_key, facts) "
            "SELECT w.id, n.event, n.key, n.facts FROM jsonb_to_recordset(CAST(:n AS jsonb)) "
            "AS n(event text, key text, org text, project text, facts jsonb) "
            "JOIN webhooks w ON w.org = n.org AND (w.project IS NULL OR w.project = n.project) "
            "AND n.event = ANY(w.events) "
            "ON CONFLICT (webhook_id, event_key) DO NOTHING RETURNING id"
        ),
        {
            "n": json.dumps(
                [
                    {
                        "event": n.event.value,
                        "key": n.key,
                        "org": n.org,
                        "project": n.project,
                        "facts": n.facts,
                    }
                    for n in notices
                ]
            )
        },
    )
    return sorted(r[0] for r in rows)


async def pending_deliveries(conn: AsyncConnection, limit: int = 500) -> list[int]:
    """Deliveries not yet delivered nor given up (also those a crashed run left), oldest first."""
    rows = await conn.execute(
        text("SELECT id FROM webhook_deliveries WHERE state = 'pending' ORDER BY id LIMIT :l"), {"l": limit}
    )
    return [r[0] for r in rows]


async def delivery(conn: AsyncConnection, delivery_id: int) -> tuple[Delivery, str, str] | None:
    """A delivery with its webhook's URL and secret, or None when either is gone."""
    row = (
        await conn.execute(
            text(
                f"SELECT {', '.join('d.' + c.strip() for c in _DELIVERY.split(','))}, w.url, w.secret "
                "FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id WHERE d.id = :i"
            ),
            {"i": delivery_id},
        )
    ).one_or_none()
    if row is None:
        return None
    return _delivery(row), row.url, row.secret


async def record_attempt(
    conn: AsyncConnection, delivery_id: int, *, status: int | None, error: str | None, state: str
) -> None:
    """Count one attempt with its outcome; `state` delivered, failed (given up) or still pending."""
    await conn.execute(
        text(
            "UPDATE webhook_deliveries SET attempts = attempts + 1, last_status = :s, last_error = :e, "
            "last_attempt_at = now(), state = CAST(:st AS text), "
            "delivered_at = CASE WHEN CAST(:st AS text) = 'delivered' THEN now() ELSE delivered_at END "
            "WHERE id = :i"
        ),
        {"i": delivery_id, "s": status, "e": error, "st": state},
    )


async def give_up(conn: AsyncConnection, delivery_id: int, error: str) -> None:
    """Mark a delivery failed after its last retry (its attempts are already counted)."""
    await conn.execute(
        text(
            "UPDATE webhook_deliveries SET state = 'failed', last_error = coalesce(last_error, :e) "
            "WHERE id = :i AND state = 'pending'"
        ),
        {"i": delivery_id, "e": error},
    )


async def list_deliveries(conn: AsyncConnection, webhook_id: str, limit: int = 100) -> list[Delivery]:
    """A webhook's deliveries, newest first."""
    rows = await conn.execute(
        text(
            f"SELECT {_DELIVERY} FROM webhook_deliveries WHERE webhook_id = CAST(:w AS uuid) "
            "ORDER BY id DESC LIMIT :l"
        ),
        {"w": webhook_id, "l": limit},
    )
    return [_delivery(r) for r in rows]


async def database_notices(conn: AsyncConnection, *, since_days: int = 7) -> list[Notice]:
    """Events the database knows of: change requests pending, subtasks stuck, promotions failed.

    Only those of the last `since_days` days, so a webhook registered today is not flooded with the past.
    """
    notices: list[Notice] = []
    params = {"d": since_days}
    pending = await conn.execute(
        text(
            "SELECT id::text AS id, org, project, scope, operation, workflow_id, created_at "
            "FROM change_requests WHERE state = 'awaiting_approval' "
            "AND created_at > now() - make_interval(days => :d)"
        ),
        params,
    )
    for r in pending:
        notices.append(
            Notice(
                WebhookEvent.CHANGE_REQUEST_PENDING,
                f"change_request.pending:{r.id}",
                r.org,
                r.project,
                {
                    "change_request_id": r.id,
                    "operation": r.operation,
                    "scope": r.scope,
                    "workflow_id": r.workflow_id,
                    "org": r.org,
                    "project": r.project,
                },
            )
        )
    stuck = await conn.execute(
        text(
            "SELECT s.task_id, md5(s.subtask) AS subtask_id, s.refusals, t.org, t.project FROM subtasks s "
            "JOIN tasks t ON t.id = s.task_id "
            "WHERE s.stuck_at IS NOT NULL AND s.stuck_at > now() - make_interval(days => :d)"
        ),
        params,
    )
    for r in stuck:
        notices.append(
            Notice(
                WebhookEvent.SUBTASK_STUCK,
                f"subtask.stuck:{r.task_id}:{r.subtask_id}",
                r.org,
                r.project,
                {
                    "task_id": public_task_id(r.task_id),  # the id its tenant gave it
                    "subtask_id": r.subtask_id,
                    "refusals": r.refusals,
                    "org": r.org,
                    "project": r.project,
                },
            )
        )
    failed = await conn.execute(
        text(
            "SELECT id, org, project, promotion_workflow_id, "
            "floor(extract(epoch FROM coalesce(ended_at, created_at)))::bigint AS ended FROM tasks "
            "WHERE status = 'failed' "
            "AND coalesce(ended_at, created_at) > now() - make_interval(days => :d)"
        ),
        params,
    )
    for r in failed:
        notices.append(
            Notice(
                WebhookEvent.PROMOTION_FAILED,
                # a failed promotion may run again and fail again: each failure is its own event
                f"promotion.failed:{r.promotion_workflow_id or r.id}:{r.ended}",
                r.org,
                r.project,
                {
                    "task_id": public_task_id(r.id),
                    "workflow_id": r.promotion_workflow_id,
                    "org": r.org,
                    "project": r.project,
                },
            )
        )
    return notices
