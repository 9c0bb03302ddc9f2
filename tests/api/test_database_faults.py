"""While Postgres is down the gateway answers 503 quickly (never 500, never a hang), and it recovers by
itself when Postgres returns; a write retried with its idempotency key is stored exactly once."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from api.cli.embedded import start_embedded_postgres
from governance.config import Settings
from governance.scopes import ActorType
from governance.staging import task_key
from governance.storage.engine import make_engine
from governance.storage.migrate import upgrade_head
from tests.utils.factories import make_actor, new_tenant
from tests.utils.gateway import running_gateway
from tests.utils.pgcontrol import start_postgres, stop_postgres

DB_TIMEOUT = 2.0


@pytest.fixture(scope="module")
def own_postgres() -> Iterator[tuple[Any, str]]:
    """A Postgres of this module's own, since the test stops it."""
    data_dir = Path(tempfile.mkdtemp(prefix="loregate-fault-pg-"))
    server, url = start_embedded_postgres(data_dir)
    upgrade_head(url)
    yield server, url
    server.cleanup()
    shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(scope="module")
async def own_engine(own_postgres: tuple[Any, str]) -> AsyncIterator[AsyncEngine]:
    engine = make_engine(Settings(database_url=own_postgres[1]))
    yield engine
    await engine.dispose()


async def test_gateway_answers_503_while_database_is_down_and_recovers(
    own_postgres: tuple[Any, str], own_engine: AsyncEngine
) -> None:
    server, url = own_postgres
    settings = Settings(database_url=url, db_timeout_seconds=DB_TIMEOUT, data_dir=Path(tempfile.mkdtemp()))
    org, project = new_tenant()
    orchestrator = await make_actor(own_engine, ActorType.ORCHESTRATOR, org, project)
    agent = await make_actor(own_engine, ActorType.AGENT, org, project)
    entry = {"kind": "log", "content": "written across an outage", "idempotency_key": "outage-1"}
    with running_gateway(settings) as base:
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            task = await client.post(
                "/v1/tasks",
                headers=orchestrator.headers,
                json={"org": org, "project": project, "worktree": "w", "description": "d"},
            )
            task_id = task.json()["task_id"]
            ok = await client.post(
                f"/v1/tasks/{task_id}/entries",
                headers=agent.headers,
                json={"entries": [{"kind": "log", "content": "before"}]},
            )
            assert ok.status_code == 201

            stop_postgres(server)
            try:
                started = time.monotonic()
                down = await client.post(
                    f"/v1/tasks/{task_id}/entries", headers=agent.headers, json={"entries": [entry]}
                )
                elapsed = time.monotonic() - started
                assert down.status_code == 503, down.text
                assert down.json()["error"] == "unavailable" and "retry" in down.json()["detail"]
                assert down.headers.get("retry-after")
                assert elapsed < DB_TIMEOUT + 3, f"503 took {elapsed:.1f}s"
                health = await client.get("/healthz")
                assert health.status_code == 503
            finally:
                start_postgres(server)

            deadline = time.monotonic() + 30
            while True:  # no restart of the gateway: its pool reconnects on its own
                again = await client.post(
                    f"/v1/tasks/{task_id}/entries", headers=agent.headers, json={"entries": [entry]}
                )
                if again.status_code == 201 or time.monotonic() > deadline:
                    break
                assert again.status_code == 503, again.text
                time.sleep(0.5)
            assert again.status_code == 201, again.text
            assert (await client.get("/healthz")).status_code == 200
            replay = await client.post(
                f"/v1/tasks/{task_id}/entries", headers=agent.headers, json={"entries": [entry]}
            )
            assert replay.json()["entries"][0] == {**again.json()["entries"][0], "replayed": True}
    async with own_engine.connect() as conn:
        contents = (
            (
                await conn.execute(
                    text("SELECT content FROM staging_entries WHERE task_id = :t ORDER BY seq"),
                    {"t": task_key(org, task_id)},
                )
            )
            .scalars()
            .all()
        )
    assert contents == ["before", "written across an outage"]
