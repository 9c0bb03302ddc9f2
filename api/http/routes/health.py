"""Liveness with a database check, and Prometheus metrics."""

from __future__ import annotations

from fastapi import APIRouter

from api.http.deps import Resources
from api.http.metrics import metrics_response
from api.schemas.health import HealthPublic
from api.services.health import health

__all__ = ["router"]

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=HealthPublic)
async def healthz(resources: Resources) -> HealthPublic:
    """200 when the gateway can reach its database, 503 otherwise."""
    return await health(resources)


router.add_api_route("/metrics", metrics_response, methods=["GET"], include_in_schema=False)
