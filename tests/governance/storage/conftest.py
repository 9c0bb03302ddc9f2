"""Fixtures for storage tests: an engine wide enough for 32 concurrent transactions, fresh scopes."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from governance.config import Settings
from tests.utils.lifecycle_factories import Place, new_place


@pytest.fixture(scope="session")
async def wide_engine(settings: Settings) -> AsyncIterator[AsyncEngine]:
    """A pool of 40: the race tests hold 32 connections at once, each in its own transaction."""
    eng = create_async_engine(
        settings.sqlalchemy_url(), pool_size=40, max_overflow=0, connect_args={"prepare_threshold": None}
    )
    yield eng
    await eng.dispose()


@pytest.fixture
def place() -> Place:
    """A fresh tenant for one test."""
    return new_place()
