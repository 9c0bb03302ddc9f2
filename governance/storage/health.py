"""The database check behind `/healthz` and the supervisor's readiness wait."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["ping"]


async def ping(engine: AsyncEngine) -> None:
    """One round trip to the database; raises what the driver raises when it cannot answer."""
    async with engine.connect() as conn:
        await conn.execute(text("SELECT 1"))
