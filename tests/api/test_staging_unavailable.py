"""A gateway whose database goes away answers 503 `unavailable` quickly — never a hang, never a 500.

Uses a second embedded Postgres of its own (never the session one): the gateway starts against it, the
server is stopped, and every request must be refused within `db_timeout_seconds` (2 s here). A socket that
accepts connections but never answers stands in for a database host that has stopped responding. When the
server comes back, the gateway serves again and the database holds exactly what was acknowledged.
"""

from __future__ import annotations

import asyncio
import socket
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.cli.embedded import start_embedded_postgres
from governance.config import Settings
from governance.scopes import ActorType
from governance.storage.engine import make_engine
from governance.storage.migrate import upgrade_head
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.gateway import running_gateway
from tests.utils.staging import assert_refused, count_entries, open_task_http

DB_TIMEOUT = 2.0
# time for a refusal: the configured timeout plus scheduling slack on a busy 2-core machine
REFUSAL_BUDGET = DB_TIMEOUT + 2.0


@dataclass
class DownWorld:
    """A gateway whose (own) database has been stopped, and what was written before that."""

    url: str
    data_dir: Path
    server: Any
    database_url: str
    agent: Actor
    unused_agent: Actor
    task_id: str


@pytest.fixture(scope="module")
async def down(settings: Settings) -> AsyncIterator[DownWorld]:
    # a private directory: pytest's shared basetemp may be pruned by concurrent sessions on this machine
    with tempfile.TemporaryDirectory(prefix="loregate-pg-down-") as tmp:
        async for world in _down_world(settings, Path(tmp)):
            yield world


async def _down_world(settings: Settings, data_dir: Path) -> AsyncIterator[DownWorld]:
    server, _ = start_embedded_postgres(data_dir)
    try:
        server.psql("CREATE DATABASE loregate_down;")
        database_url = server.get_uri("loregate_down")
        upgrade_head(database_url)
        own = settings.model_copy(update={"database_url": database_url, "db_timeout_seconds": DB_TIMEOUT})
        engine = make_engine(own)
        org, project = new_tenant()
        orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
        agent = await make_actor(engine, ActorType.AGENT, org, project)
        unused_agent = await make_actor(engine, ActorType.AGENT, org, project)
        await engine.dispose()
        with running_gateway(own) as gateway:
            async with httpx.AsyncClient(base_url=gateway, timeout=30) as client:
                task_id = await open_task_http(client, orchestrator, org, project)
                r = await client.post(
                    f"/v1/tasks/{task_id}/entries",
                    headers=agent.headers,
                    json={"entries": [{"kind": "log", "content": "before the outage"}]},
                )
                assert r.status_code == 201, r.text
            server.cleanup()  # stops the server; its data directory stays
            world = DownWorld(gateway, data_dir, server, database_url, agent, unused_agent, task_id)
            yield world
            server = world.server  # the last test may have started it again
    finally:
        server.cleanup()


async def _timed(client: httpx.AsyncClient, method: str, path: str, **kwargs: Any) -> httpx.Response:
    start = time.monotonic()
    r = await client.request(method, path, **kwargs)
    elapsed = time.monotonic() - start
    assert elapsed < REFUSAL_BUDGET, f"{method} {path} took {elapsed:.1f}s with the database down"
    return r


@pytest.fixture
async def client(down: DownWorld) -> AsyncIterator[httpx.AsyncClient]:
    # the client's own timeout is far above the budget, so a hang shows up as a failed budget, not a timeout
    async with httpx.AsyncClient(base_url=down.url, timeout=30) as c:
        yield c


async def test_append_with_database_down_is_503(down: DownWorld, client: httpx.AsyncClient) -> None:
    r = await _timed(
        client,
        "POST",
        f"/v1/tasks/{down.task_id}/entries",
        headers=down.agent.headers,
        json={"entries": [{"kind": "log", "content": "during the outage", "idempotency_key": "k1"}]},
    )
    assert_refused(r, 503, "unavailable", "database is unavailable; retry later")
    assert r.headers["retry-after"] == "1"


async def test_uncached_key_with_database_down_is_503_not_401(
    down: DownWorld, client: httpx.AsyncClient
) -> None:
    """A key the gateway cannot check is not an unknown key: the client must retry, not give up."""
    r = await _timed(
        client,
        "POST",
        f"/v1/tasks/{down.task_id}/entries",
        headers=down.unused_agent.headers,
        json={"entries": [{"kind": "log", "content": "during the outage"}]},
    )
    assert_refused(r, 503, "unavailable", "database is unavailable")


async def test_read_with_database_down_is_503(down: DownWorld, client: httpx.AsyncClient) -> None:
    r = await _timed(client, "GET", f"/v1/tasks/{down.task_id}/entries", headers=down.agent.headers)
    assert_refused(r, 503, "unavailable", "database is unavailable")


async def test_healthz_with_database_down_is_503(down: DownWorld, client: httpx.AsyncClient) -> None:
    r = await _timed(client, "GET", "/healthz")
    assert_refused(r, 503, "unavailable", "database check failed")


async def test_unresponsive_database_is_503_within_timeout(
    down: DownWorld, client: httpx.AsyncClient
) -> None:
    """A listener that accepts connections and never answers: connect_timeout bounds the wait."""
    socket_path = str(down.data_dir / "postgres" / ".s.PGSQL.5432")
    black_hole = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        black_hole.bind(socket_path)
        black_hole.listen(64)
        r = await _timed(
            client,
            "POST",
            f"/v1/tasks/{down.task_id}/entries",
            headers=down.agent.headers,
            json={"entries": [{"kind": "log", "content": "into the void"}]},
        )
        assert_refused(r, 503, "unavailable", "database is unavailable")
    finally:
        black_hole.close()
        Path(socket_path).unlink(missing_ok=True)


async def test_gateway_recovers_and_nothing_was_written_during_outage(
    down: DownWorld, client: httpx.AsyncClient, settings: Settings
) -> None:
    down.server = start_embedded_postgres(down.data_dir)[0]
    deadline = time.monotonic() + 15
    while (await client.get("/healthz")).status_code != 200:
        assert time.monotonic() < deadline, "gateway did not recover after the database came back"
        await asyncio.sleep(0.2)
    engine = make_engine(settings.model_copy(update={"database_url": down.database_url}))
    try:
        assert await count_entries(engine, down.task_id) == 1  # only the entry acknowledged before the outage
    finally:
        await engine.dispose()
    r = await client.post(
        f"/v1/tasks/{down.task_id}/entries",
        headers=down.agent.headers,
        json={"entries": [{"kind": "log", "content": "during the outage", "idempotency_key": "k1"}]},
    )
    assert r.status_code == 201, r.text
    assert r.json()["entries"][0]["seq"] == 2
