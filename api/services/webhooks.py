"""Webhooks: an admin registers, lists and removes them, and reads each one's deliveries.

A destination is checked when registered (http(s), no credentials, a public address unless
`LOREGATE_WEBHOOK_ALLOW_PRIVATE`), and again at each delivery (a name may resolve elsewhere later).
"""

from __future__ import annotations

import dataclasses

from api.schemas.webhooks import (
    DeliveryList,
    DeliveryPublic,
    WebhookCreated,
    WebhookIn,
    WebhookList,
    WebhookPublic,
)
from api.services.gateway import GatewayResources
from governance.adapters.resolver import resolve_addresses
from governance.errors import NotFound, PolicyDenied
from governance.identity import Principal
from governance.storage import webhooks as store
from governance.webhooks import check_destination, destination_host, new_secret

__all__ = ["register_webhook", "list_webhooks", "remove_webhook", "webhook_deliveries"]


def _require_admin(principal: Principal) -> None:
    if not principal.is_admin:
        raise PolicyDenied("only an admin registers, lists or removes webhooks")


async def register_webhook(
    resources: GatewayResources, principal: Principal, body: WebhookIn
) -> WebhookCreated:
    """Register a webhook for a tenant; its secret is in this answer only."""
    _require_admin(principal)
    check_destination(
        body.url,
        await resolve_addresses(destination_host(body.url)),
        allow_private=resources.settings.webhook_allow_private,
    )
    secret = new_secret()
    async with resources.engine.begin() as conn:
        created = await store.create_webhook(
            conn,
            org=body.org,
            project=body.project,
            url=body.url,
            secret=secret,
            events=sorted({e.value for e in body.events}),
            created_by=principal.id,
        )
    return WebhookCreated(**dataclasses.asdict(created), secret=secret)


async def list_webhooks(resources: GatewayResources, principal: Principal, org: str | None) -> WebhookList:
    """Every webhook (of `org` when given)."""
    _require_admin(principal)
    async with resources.engine.connect() as conn:
        found = await store.list_webhooks(conn, org=org)
    return WebhookList(webhooks=[WebhookPublic(**dataclasses.asdict(w)) for w in found])


async def remove_webhook(resources: GatewayResources, principal: Principal, webhook_id: str) -> WebhookPublic:
    """Remove a webhook and its delivery records."""
    _require_admin(principal)
    async with resources.engine.begin() as conn:
        found = await store.get_webhook(conn, webhook_id)
        if found is None or not await store.delete_webhook(conn, webhook_id):
            raise NotFound(f"webhook {webhook_id!r} does not exist")
    return WebhookPublic(**dataclasses.asdict(found))


async def webhook_deliveries(
    resources: GatewayResources, principal: Principal, webhook_id: str
) -> DeliveryList:
    """A webhook's deliveries, newest first (the last 100)."""
    _require_admin(principal)
    async with resources.engine.connect() as conn:
        if await store.get_webhook(conn, webhook_id) is None:
            raise NotFound(f"webhook {webhook_id!r} does not exist")
        found = await store.list_deliveries(conn, webhook_id)
    return DeliveryList(deliveries=[DeliveryPublic(**dataclasses.asdict(d)) for d in found])
