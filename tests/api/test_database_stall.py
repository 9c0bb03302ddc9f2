"""A database that stops answering (its processes frozen by SIGSTOP) costs a 503 in bounded time, not a hang.

A frozen Postgres keeps its sockets open and its kernel keeps acknowledging: connections, statements and the
pool's pre-ping would wait for as long as the freeze lasts, and `statement_timeout` (enforced by the frozen
server) never fires. Every request must still be refused within 2 x `db_timeout_seconds` (503 with
`Retry-After` over HTTP, UNAVAILABLE over gRPC), nothing must be stored, and once the server is thawed the
same gateway must serve again without a restart.

Uses a Postgres of its own (never the session one), since the test freezes it.
"""

from __future__ import annotations

import asyncio
import signal
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import grpc
import httpx
import psutil
import pytest
from sqlalchemy import exc as sa_exc

from api.cli.embedded import start_embedded_postgres
from governance.config import Settings
from governance.scopes import ActorType
from governance.storage.engine import answer_bound, make_engine
from governance.storage.migrate import upgrade_head
from policy.enforcer import make_authorizer
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.gateway import running_gateway
from tests.utils.grpc_gateway import bearer, grpc_gateway, pb2, refusal
from tests.utils.staging import assert_refused, count_entries, open_task_http

T = TypeVar("T")

DB_TIMEOUT = 2.0
BUDGET = 2 * DB_TIMEOUT  # what the gateways promise for any request while the database stalls
POOL_SIZE = 2  # pool of 2 + overflow 2: the concurrent test exhausts it


@dataclass
class World:
    server: Any
    database_url: str
    url: str
    stub: Any
    org: str
    project: str
    orchestrator: Actor
    agent: Actor
    task_id: str


@pytest.fixture(scope="module")
async def world(settings: Settings) -> AsyncIterator[World]:
    # a private directory: pytest's shared basetemp may be pruned by concurrent sessions on this machine
    with tempfile.TemporaryDirectory(prefix="loregate-pg-stall-") as tmp:
        server, _ = start_embedded_postgres(Path(tmp))
        try:
            server.psql("CREATE DATABASE loregate_stall;")
            database_url = server.get_uri("loregate_stall")
            upgrade_head(database_url)
            own = settings.model_copy(
                update={
                    "database_url": database_url,
                    "db_timeout_seconds": DB_TIMEOUT,
                    "db_pool_size": POOL_SIZE,
                }
            )
            engine = make_engine(own)
            org, project = new_tenant()
            orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
            agent = await make_actor(engine, ActorType.AGENT, org, project)
            await engine.dispose()
            with running_gateway(own) as url:
                async with grpc_gateway(own) as stub, httpx.AsyncClient(base_url=url, timeout=60) as client:
                    task_id = await open_task_http(client, orchestrator, org, project)
                    r = await client.post(
                        f"/v1/tasks/{task_id}/entries",
                        headers=agent.headers,
                        json={"entries": [{"kind": "log", "content": "before the stall"}]},
                    )
                    assert r.status_code == 201, r.text
                    # warm up what is not the database (the embedding model, the gRPC channel), and fill
                    # both pools with idle connections: the stall then meets the pre-ping first
                    r = await client.post("/v1/search", headers=agent.headers, json=_search(task_id))
                    assert r.status_code == 200, r.text
                    await stub.AppendEntries(_append(task_id, "warm-up"), metadata=bearer(agent.key))
                    yield World(server, database_url, url, stub, org, project, orchestrator, agent, task_id)
        finally:
            server.cleanup()


@contextmanager
def frozen(server: Any) -> Iterator[None]:
    """SIGSTOP the postmaster and every child (backends included); SIGCONT them all, whatever happens."""
    postmaster = psutil.Process(int((Path(server.pgdata) / "postmaster.pid").read_text().split()[0]))
    stopped: list[psutil.Process] = []
    try:
        postmaster.send_signal(signal.SIGSTOP)  # first: a stopped postmaster forks no new backend
        stopped.append(postmaster)
        for child in postmaster.children(recursive=True):
            try:
                child.send_signal(signal.SIGSTOP)
                stopped.append(child)
            except psutil.NoSuchProcess:
                pass
        yield
    finally:
        for proc in reversed(stopped):
            try:
                proc.send_signal(signal.SIGCONT)
            except psutil.NoSuchProcess:
                pass


def _search(task_id: str) -> dict[str, Any]:
    return {"query": "how do retries work", "task_id": task_id, "intent": "general"}


def _append(task_id: str, content: str, key: str | None = None) -> Iterator[Any]:
    entry = pb2.Entry(kind="log", content=content)
    if key is not None:
        entry.idempotency_key = key
    yield pb2.AppendRequest(task_id=task_id, entries=[entry])


async def _within_budget(what: str, call: Callable[[], Awaitable[T]]) -> T:
    start = time.monotonic()
    result = await call()
    elapsed = time.monotonic() - start
    assert elapsed < BUDGET, f"{what} took {elapsed:.2f}s while the database stalled (budget {BUDGET}s)"
    return result


def _assert_503(r: httpx.Response) -> None:
    assert_refused(r, 503, "unavailable", r"database is unavailable; retry later|database check failed")
    assert r.headers["retry-after"] == "1"


async def test_every_http_request_is_503_within_budget_while_the_database_stalls(world: World) -> None:
    headers = world.agent.headers
    entry = {"kind": "log", "content": "during the stall", "idempotency_key": "stall-1"}
    task = {"org": world.org, "project": world.project, "worktree": "w", "description": "during the stall"}
    async with httpx.AsyncClient(base_url=world.url, timeout=60) as client:
        with frozen(world.server):
            requests: list[tuple[str, Callable[[], Awaitable[httpx.Response]]]] = [
                ("GET /healthz", lambda: client.get("/healthz")),
                (
                    "POST /v1/tasks",
                    lambda: client.post("/v1/tasks", headers=world.orchestrator.headers, json=task),
                ),
                (
                    "POST entries",
                    lambda: client.post(
                        f"/v1/tasks/{world.task_id}/entries", headers=headers, json={"entries": [entry]}
                    ),
                ),
                ("GET entries", lambda: client.get(f"/v1/tasks/{world.task_id}/entries", headers=headers)),
                (
                    "POST /v1/search",
                    lambda: client.post("/v1/search", headers=headers, json=_search(world.task_id)),
                ),
                ("GET /healthz again", lambda: client.get("/healthz")),
            ]
            for what, call in requests:
                _assert_503(await _within_budget(what, call))


async def test_concurrent_requests_beyond_the_pool_are_all_503_within_budget(world: World) -> None:
    """More requests than connections: those waiting for the pool are bounded as well as those holding one."""
    headers = world.agent.headers
    async with httpx.AsyncClient(base_url=world.url, timeout=60) as client:
        with frozen(world.server):
            start = time.monotonic()
            answers = await asyncio.gather(
                *(client.get(f"/v1/tasks/{world.task_id}/entries", headers=headers) for _ in range(12))
            )
            elapsed = time.monotonic() - start
    assert elapsed < BUDGET, f"12 concurrent reads took {elapsed:.2f}s while the database stalled"
    for r in answers:
        _assert_503(r)


async def test_grpc_is_unavailable_within_budget_while_the_database_stalls(world: World) -> None:
    metadata = bearer(world.agent.key)
    with frozen(world.server):
        calls: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
            (
                "AppendEntries",
                lambda: world.stub.AppendEntries(_append(world.task_id, "stalled", "g-1"), metadata=metadata),
            ),
            (
                "OpenTask",
                lambda: world.stub.OpenTask(
                    pb2.OpenTaskRequest(
                        org=world.org, project=world.project, worktree="w", description="stalled"
                    ),
                    metadata=bearer(world.orchestrator.key),
                ),
            ),
        ]
        for what, call in calls:
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await _within_budget(what, call)
            assert caught.value.code() == grpc.StatusCode.UNAVAILABLE, (what, caught.value)
            body = refusal(caught.value)
            assert body["error"] == "unavailable" and "retry later" in body["detail"], body


async def test_a_policy_reload_during_a_stall_fails_in_bounded_time(world: World) -> None:
    """Casbin's adapter is synchronous; a reload forced from a request must not hold the caller for the stall.

    Its bound is the answer bound (1.1 x timeout) plus libpq's own connect timeout (whole seconds, at least
    2), since a synchronous connect cannot be given a finer one.
    """
    authorizer = make_authorizer(world.database_url, watch=False, timeout_seconds=DB_TIMEOUT)
    try:
        with frozen(world.server):
            start = time.monotonic()
            with pytest.raises(sa_exc.OperationalError):
                await asyncio.to_thread(authorizer.reload)
            elapsed = time.monotonic() - start
        bound = answer_bound(DB_TIMEOUT) + 2 + 1  # + 1 s of scheduling slack
        assert elapsed < bound, f"a policy reload took {elapsed:.2f}s during the stall"
        await asyncio.to_thread(authorizer.reload)  # and works again at once
    finally:
        authorizer.close()


async def test_gateway_recovers_by_itself_once_the_database_answers_again(world: World) -> None:
    """Runs after the stalls above: nothing they refused was stored, and everything works again."""
    headers = world.agent.headers
    async with httpx.AsyncClient(base_url=world.url, timeout=60) as client:
        with frozen(world.server):
            _assert_503(await _within_budget("GET /healthz", lambda: client.get("/healthz")))
        thawed = time.monotonic()
        while (await client.get("/healthz")).status_code != 200:
            assert time.monotonic() - thawed < 5, "the gateway did not recover after the database came back"
            await asyncio.sleep(0.1)

        r = await client.get(f"/v1/tasks/{world.task_id}/entries", headers=headers)
        assert r.status_code == 200, r.text
        assert [e["content"] for e in r.json()["entries"]] == ["before the stall", "warm-up"]
        r = await client.post(
            f"/v1/tasks/{world.task_id}/entries",
            headers=headers,
            json={"entries": [{"kind": "log", "content": "after the stall", "idempotency_key": "stall-1"}]},
        )
        assert r.status_code == 201, r.text
        assert r.json()["entries"][0]["replayed"] is False  # the refused write was never stored
        task_id = f"t-{uuid.uuid4().hex}"
        r = await client.post(
            "/v1/tasks",
            headers=world.orchestrator.headers,
            json={
                "org": world.org,
                "project": world.project,
                "worktree": "w",
                "description": "d",
                "task_id": task_id,
            },
        )
        assert r.status_code == 201, r.text
        r = await client.post("/v1/search", headers=headers, json=_search(world.task_id))
        assert r.status_code == 200, r.text
    ack = await world.stub.AppendEntries(
        _append(world.task_id, "after the stall over gRPC", "g-1"), metadata=bearer(world.agent.key)
    )
    assert ack.entries[0].replayed is False
    engine = make_engine(Settings(database_url=world.database_url))
    try:
        assert await count_entries(engine, world.task_id) == 4
    finally:
        await engine.dispose()


async def test_an_append_on_the_driver_path_is_503_within_budget_while_the_database_stalls(
    world: World, settings: Settings
) -> None:
    """No daily quota, no idempotency key: the append pings on the driver's connection itself. A ping the
    frozen server never answers is the database's unavailability (503), not a dead connection to replace
    (the pool's next connection would wait as long again, past the budget), and the statement was never
    sent: the thawed server stores nothing of it."""
    own = settings.model_copy(
        update={
            "database_url": world.database_url,
            "db_timeout_seconds": DB_TIMEOUT,
            "db_pool_size": POOL_SIZE,
            "staging_max_tenant_entries_per_day": 0,
            "staging_max_tenant_bytes_per_day": 0,
        }
    )
    body = {"entries": [{"kind": "log", "content": "driver path"}]}
    with running_gateway(own) as url:
        async with httpx.AsyncClient(base_url=url, timeout=60) as client:
            task_id = await open_task_http(client, world.orchestrator, world.org, world.project)
            path = f"/v1/tasks/{task_id}/entries"
            # two appends at once leave two idle connections in the pool for the stall to meet
            warm = await asyncio.gather(
                *(client.post(path, headers=world.agent.headers, json=body) for _ in "ab")
            )
            assert [r.status_code for r in warm] == [201, 201], [r.text for r in warm]
            with frozen(world.server):
                stalled = await _within_budget(
                    "POST entries (pipelined)",
                    lambda: client.post(path, headers=world.agent.headers, json=body),
                )
            _assert_503(stalled)
            thawed = time.monotonic()
            while (await client.get("/healthz")).status_code != 200:
                assert time.monotonic() - thawed < 5, (
                    "the gateway did not recover after the database came back"
                )
                await asyncio.sleep(0.1)
            after = await client.post(path, headers=world.agent.headers, json=body)
            assert after.status_code == 201, after.text
            assert [e["seq"] for e in after.json()["entries"]] == [3]  # the refused append took no number
