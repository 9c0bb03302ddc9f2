"""The pool pings a pooled connection before handing it out, and replaces a dead one."""

from __future__ import annotations

import asyncio

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.config import Settings
from governance.storage.engine import PING_IDLE_SECONDS, make_engine


async def _backend(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        return int((await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one())


async def test_engine_replaces_a_pooled_connection_that_died_while_idle(
    settings: Settings, engine: AsyncEngine
) -> None:
    pooled = make_engine(settings.model_copy(update={"db_pool_size": 1}))
    try:
        first = await _backend(pooled)
        async with engine.connect() as conn:  # the server ends that session while it sits in the pool
            await conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": first})
        await asyncio.sleep(PING_IDLE_SECONDS + 0.2)
        second = await _backend(pooled)  # no error reaches the caller: the ping found it dead
        assert second != first
    finally:
        await pooled.dispose()


async def test_engine_reuses_a_connection_checked_in_a_moment_ago(settings: Settings) -> None:
    pooled = make_engine(settings.model_copy(update={"db_pool_size": 1}))
    try:
        assert await _backend(pooled) == await _backend(pooled)
    finally:
        await pooled.dispose()
