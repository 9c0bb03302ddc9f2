"""Webhook notifications: which events exist, what a delivery carries, how it is signed, where it may go.

loregate is otherwise pull-only: a promotion waiting for a human, a change request pending, a subtask marked
stuck or a promotion that failed waits until someone looks. An admin registers webhooks per tenant (an org,
or one project of it); a scheduled workflow (workflows/notifications.py) finds new events and delivers each
to every matching webhook once, retried by Temporal, every attempt recorded.

A delivery carries ids, states and counts, never content, titles or notes: the receiver is outside the
gate. It is signed like GitHub's and Stripe's webhooks: `X-Loregate-Signature: sha256=<hex>` is the
HMAC-SHA256, under the webhook's secret, of `<X-Loregate-Timestamp>.<body>`; a receiver recomputes it and
refuses old timestamps (replays).

Destinations on loopback, private, link-local (cloud metadata) or otherwise reserved addresses are refused
unless the operator allows them (`LOREGATE_WEBHOOK_ALLOW_PRIVATE`): a webhook must not turn the worker into
a way into the network it runs in.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import secrets
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

from governance.errors import InvalidInput

__all__ = [
    "WebhookEvent",
    "Notice",
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "EVENT_HEADER",
    "DELIVERY_HEADER",
    "new_secret",
    "sign",
    "verify",
    "delivery_body",
    "destination_host",
    "check_destination",
    "is_public_address",
]

SIGNATURE_HEADER = "X-Loregate-Signature"
TIMESTAMP_HEADER = "X-Loregate-Timestamp"
EVENT_HEADER = "X-Loregate-Event"
DELIVERY_HEADER = "X-Loregate-Delivery"


class WebhookEvent(StrEnum):
    """What a webhook can be told about."""

    PROMOTION_AWAITING_APPROVAL = "promotion.awaiting_approval"
    PROMOTION_FAILED = "promotion.failed"
    CHANGE_REQUEST_PENDING = "change_request.pending"
    SUBTASK_STUCK = "subtask.stuck"


@dataclass(frozen=True)
class Notice:
    """One event that happened, with the tenant it belongs to and what a receiver may learn of it.

    `key` names the event once (a webhook is told about each key once); `facts` are ids, states and counts.
    """

    event: WebhookEvent
    key: str
    org: str
    project: str | None
    facts: dict[str, Any]


def new_secret() -> str:
    """A webhook's signing secret, shown once to the admin who registers it."""
    return "whsec_" + secrets.token_urlsafe(32)


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The signature header's value: `sha256=` and the HMAC-SHA256 of `<timestamp>.<body>`."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def verify(
    secret: str, timestamp: int, body: bytes, signature: str, *, now: int, tolerance: int = 300
) -> bool:
    """What a receiver checks: the signature matches and the timestamp is at most `tolerance` s old."""
    if abs(now - timestamp) > tolerance:
        return False
    return hmac.compare_digest(sign(secret, timestamp, body), signature)


def delivery_body(delivery_id: int, notice_event: str, notice_key: str, facts: dict[str, Any]) -> bytes:
    """The JSON a delivery posts (sorted keys: the bytes signed are the bytes sent)."""
    document = {"delivery_id": delivery_id, "event": notice_event, "key": notice_key, **facts}
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def is_public_address(address: str) -> bool:
    """Whether an IP address is globally routable (not loopback, private, link-local, reserved …)."""
    ip = ipaddress.ip_address(address)
    mapped = getattr(ip, "ipv4_mapped", None)
    if mapped is not None:
        ip = mapped
    return bool(ip.is_global) and not ip.is_multicast


def destination_host(url: str) -> str:
    """The host a webhook URL names; InvalidInput when it is not an http(s) URL with a host."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 (raises ValueError for a port out of range)
    except ValueError as err:
        raise InvalidInput(f"a webhook URL is an http(s) URL with a host, not {url!r} ({err})") from err
    if parts.scheme not in ("https", "http") or not host:
        raise InvalidInput(f"a webhook URL is an http(s) URL with a host, not {url!r}")
    return host


def check_destination(url: str, resolved: list[str], *, allow_private: bool) -> None:
    """Refuse a URL that is not http(s), carries credentials, or resolves to a non-public address."""
    destination_host(url)
    parts = urlsplit(url)
    if parts.username or parts.password:
        raise InvalidInput("a webhook URL carries no credentials: the secret signs each delivery")
    if allow_private:
        return
    if not resolved:
        raise InvalidInput(f"the webhook host {parts.hostname!r} does not resolve")
    private = sorted({a for a in resolved if not is_public_address(a.split("%", 1)[0])})
    if private:
        raise InvalidInput(
            f"the webhook host {parts.hostname!r} resolves to a non-public address ({', '.join(private)}); "
            "set LOREGATE_WEBHOOK_ALLOW_PRIVATE=true to allow loopback and private networks"
        )
