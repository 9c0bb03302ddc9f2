"""Request and response models of webhooks: registration, listing and each delivery's record."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from api.schemas.text import NAME_PATTERN, ScopeName, Text
from governance.webhooks import WebhookEvent

__all__ = ["WebhookIn", "WebhookPublic", "WebhookCreated", "WebhookList", "DeliveryPublic", "DeliveryList"]

_Name = Field(min_length=1, max_length=200, pattern=NAME_PATTERN)


class WebhookIn(BaseModel):
    """Register a webhook for a tenant: an org, or one project of it (admins only)."""

    model_config = ConfigDict(extra="forbid")

    org: Text = _Name
    project: ScopeName | None = None
    url: Text = Field(min_length=8, max_length=2000, description="http(s) URL; a public address by default")
    events: list[WebhookEvent] = Field(
        default_factory=lambda: list(WebhookEvent),
        min_length=1,
        description="What to be told about (default: every event)",
    )


class WebhookPublic(BaseModel):
    """A registered webhook (never its secret)."""

    id: str
    org: str
    project: str | None
    url: str
    events: list[str]
    created_by: str
    created_at: datetime


class WebhookCreated(WebhookPublic):
    """A new webhook with its signing secret, shown this once."""

    secret: str = Field(description="HMAC-SHA256 key of X-Loregate-Signature; shown only now")


class WebhookList(BaseModel):
    webhooks: list[WebhookPublic]


class DeliveryPublic(BaseModel):
    """One event for one webhook: what it said (ids, states, counts) and how its attempts went."""

    id: int
    event: str
    event_key: str
    facts: dict[str, Any]
    state: str = Field(description="pending, delivered or failed (after the last attempt)")
    attempts: int
    last_status: int | None
    last_error: str | None
    created_at: datetime
    last_attempt_at: datetime | None
    delivered_at: datetime | None


class DeliveryList(BaseModel):
    deliveries: list[DeliveryPublic]
