"""Liveness with a database check."""

from __future__ import annotations

from api.schemas.health import HealthPublic
from api.services.gateway import GatewayResources
from governance.errors import Unavailable
from governance.storage.health import ping

__all__ = ["health"]


async def health(resources: GatewayResources) -> HealthPublic:
    """`ok` when the gateway reaches its database; Unavailable otherwise."""
    try:
        await ping(resources.engine)
    except Exception as exc:
        raise Unavailable(f"database check failed: {type(exc).__name__}") from exc
    return HealthPublic(status="ok", database="ok")
