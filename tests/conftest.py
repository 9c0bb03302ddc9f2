"""Session-wide real components: one embedded Postgres+pgvector (migrated), Temporal servers on demand.

Tests isolate themselves by fresh ids (task ids, orgs, projects made with `uuid4`), never by mocks.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from api.cli.embedded import start_embedded_postgres, temporal_test_server_path
from governance.config import Settings
from governance.storage.engine import make_engine
from governance.storage.migrate import upgrade_head


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    """One embedded Postgres 16 + pgvector for the whole run.

    Its data lives outside pytest's temp root: pytest resets that root to mode 0700 whenever a session
    starts, and the server runs as the unprivileged `pgserver` user when tests run as root.
    """
    data_dir = Path(tempfile.mkdtemp(prefix="loregate-test-pg-"))
    server, _ = start_embedded_postgres(data_dir)
    yield server
    server.cleanup()
    shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def database_url(pg_server: Any) -> str:
    """A fresh, migrated database; also exported as LOREGATE_DATABASE_URL for child processes."""
    pg_server.psql("DROP DATABASE IF EXISTS loregate_test; CREATE DATABASE loregate_test;")
    url = pg_server.get_uri("loregate_test")
    upgrade_head(url)
    os.environ["LOREGATE_DATABASE_URL"] = url
    return str(url)


@pytest.fixture(scope="session")
def settings(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """Settings pointing at the test database, with a data dir of its own.

    The suite starts most workflows raw, as their own single operator: `approval_mode=trusting` unless the
    run sets LOREGATE_APPROVAL_MODE (child processes inherit it); tests/api/test_approval_tokens.py runs
    the default, authenticated mode.
    """
    os.environ.setdefault("LOREGATE_APPROVAL_MODE", "trusting")
    return Settings(database_url=database_url, data_dir=tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="session")
async def engine(settings: Settings) -> AsyncIterator[AsyncEngine]:
    """The async engine the code under test uses."""
    eng = make_engine(settings)
    yield eng
    await eng.dispose()


@pytest.fixture(scope="session")
async def time_skipping_env() -> AsyncIterator[Any]:
    """Temporal's time-skipping test server (for timeouts and schedules)."""
    from temporalio.testing import WorkflowEnvironment

    env = await WorkflowEnvironment.start_time_skipping(test_server_existing_path=temporal_test_server_path())
    yield env
    await env.shutdown()


@pytest.fixture(scope="session")
async def local_env() -> AsyncIterator[Any]:
    """A real Temporal dev server (the one `loregate up` runs), with loregate's search attributes."""
    from tests.utils.temporal_env import start_dev_server

    env = await start_dev_server()
    yield env
    await env.shutdown()


def repo_root() -> Path:
    return Path(__file__).resolve().parent.parent
