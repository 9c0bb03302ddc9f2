"""Webhooks (admins): register one per tenant, list, remove, and read its deliveries."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from api.http.deps import CurrentPrincipal, Resources
from api.schemas.webhooks import DeliveryList, WebhookCreated, WebhookIn, WebhookList, WebhookPublic
from api.services import webhooks

__all__ = ["router"]

router = APIRouter(prefix="/v1/webhooks", tags=["webhooks"])


@router.post("", status_code=201, response_model=WebhookCreated)
async def register_webhook(
    body: WebhookIn, resources: Resources, principal: CurrentPrincipal
) -> WebhookCreated:
    """Register a webhook for a tenant; the answer holds its signing secret, shown only now."""
    return await webhooks.register_webhook(resources, principal, body)


@router.get("", response_model=WebhookList)
async def list_webhooks(
    resources: Resources,
    principal: CurrentPrincipal,
    org: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
) -> WebhookList:
    """The registered webhooks (of one org when given)."""
    return await webhooks.list_webhooks(resources, principal, org)


@router.delete("/{webhook_id}", response_model=WebhookPublic)
async def remove_webhook(webhook_id: str, resources: Resources, principal: CurrentPrincipal) -> WebhookPublic:
    """Remove a webhook and its delivery records."""
    return await webhooks.remove_webhook(resources, principal, webhook_id)


@router.get("/{webhook_id}/deliveries", response_model=DeliveryList)
async def webhook_deliveries(
    webhook_id: str, resources: Resources, principal: CurrentPrincipal
) -> DeliveryList:
    """The webhook's deliveries, newest first: event, facts, state, attempts, last status."""
    return await webhooks.webhook_deliveries(resources, principal, webhook_id)
