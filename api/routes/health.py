"""Liveness with a database check, and Prometheus metrics."""

from __future__ import annotations

from fastapi import APIRouter
from sqlalchemy import text

from api.deps import EngineDep
from api.metrics import metrics_response
from governance.errors import Unavailable

__all__ = ["router"]

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz(engine: EngineDep) -> dict[str, str]:
    """200 when the gateway can reach its database, 503 otherwise."""
    try:
        async with engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
    except Exception as exc:
        raise Unavailable(f"database check failed: {type(exc).__name__}") from exc
    return {"status": "ok", "database": "ok"}


router.add_api_route("/metrics", metrics_response, methods=["GET"], include_in_schema=False)
