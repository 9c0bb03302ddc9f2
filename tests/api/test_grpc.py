"""The gRPC gateway on loopback against the session database: auth, the append stream, errors."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import grpc
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from api.grpc.server import COMMITTED_METADATA
from governance.config import Settings
from governance.scopes import ActorType
from governance.storage.identity import revoke_key
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.gateway import free_port
from tests.utils.grpc_gateway import bearer, grpc_gateway, pb2, refusal


@pytest.fixture(scope="module")
async def stub(settings: Settings) -> AsyncIterator[Any]:
    async with grpc_gateway(settings) as s:
        yield s


@pytest.fixture
async def team(engine: AsyncEngine) -> dict[str, Actor]:
    org, project = new_tenant()
    return {
        "orchestrator": await make_actor(engine, ActorType.ORCHESTRATOR, org, project),
        "agent": await make_actor(engine, ActorType.AGENT, org, project),
        "outsider": await make_actor(engine, ActorType.AGENT, *new_tenant()),
    }


async def _open(stub: Any, actor: Actor) -> str:
    org, project = actor.principal.org, actor.principal.project
    task = await stub.OpenTask(
        pb2.OpenTaskRequest(org=org, project=project, worktree="main", description="grpc test"),
        metadata=bearer(actor.key),
    )
    return str(task.task_id)


def _batches(task_id: str, *batches: list[Any]) -> Iterator[Any]:
    for i, entries in enumerate(batches):
        yield pb2.AppendRequest(task_id=task_id if i == 0 else "", entries=entries)


async def test_grpc_missing_key_is_unauthenticated(stub: Any) -> None:
    request = pb2.OpenTaskRequest(org="o", project="p", worktree="main", description="d")
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.OpenTask(request)
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert refusal(caught.value)["error"] == "unauthenticated"


async def test_grpc_unknown_key_is_unauthenticated(stub: Any) -> None:
    request = pb2.OpenTaskRequest(org="o", project="p", worktree="main", description="d")
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.OpenTask(request, metadata=bearer(f"lg_{uuid.uuid4().hex[:12]}_nope"))
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED


async def test_grpc_open_task_outside_tenant_is_denied(stub: Any, team: dict[str, Actor]) -> None:
    orchestrator = team["orchestrator"]
    org, project = new_tenant()
    request = pb2.OpenTaskRequest(org=org, project=project, worktree="main", description="d")
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.OpenTask(request, metadata=bearer(orchestrator.key))
    assert caught.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert refusal(caught.value)["error"] == "forbidden"


async def test_grpc_open_task_twice_returns_the_same_task(stub: Any, team: dict[str, Actor]) -> None:
    orchestrator = team["orchestrator"]
    org, project = orchestrator.principal.org, orchestrator.principal.project
    request = pb2.OpenTaskRequest(
        org=org, project=project, worktree="main", description="d", task_id=f"t-{uuid.uuid4().hex[:10]}"
    )
    first = await stub.OpenTask(request, metadata=bearer(orchestrator.key))
    again = await stub.OpenTask(request, metadata=bearer(orchestrator.key))
    assert (first.created, again.created) == (True, False)
    assert (again.task_id, again.created_at) == (first.task_id, first.created_at)


async def test_grpc_append_stream_numbers_entries_across_messages(stub: Any, team: dict[str, Actor]) -> None:
    task_id = await _open(stub, team["orchestrator"])
    reply = await stub.AppendEntries(
        _batches(
            task_id,
            [pb2.Entry(kind="decision", content="use psycopg 3", idempotency_key="k1")],
            [
                pb2.Entry(kind="log", content="ran tests", payload_json=json.dumps({"n": 3})),
                pb2.Entry(kind="thought", content="looks fine"),
            ],
        ),
        metadata=bearer(team["agent"].key),
    )
    assert reply.task_id == task_id
    assert [(a.seq, a.replayed) for a in reply.entries] == [(1, False), (2, False), (3, False)]


async def test_grpc_append_retry_with_key_replays_first_result(stub: Any, team: dict[str, Actor]) -> None:
    task_id = await _open(stub, team["orchestrator"])
    agent = team["agent"]
    entry = pb2.Entry(kind="decision", content="pin numpy", idempotency_key=f"k-{uuid.uuid4().hex}")
    first = await stub.AppendEntries(_batches(task_id, [entry]), metadata=bearer(agent.key))
    again = await stub.AppendEntries(_batches(task_id, [entry]), metadata=bearer(agent.key))
    assert (again.entries[0].id, again.entries[0].seq) == (first.entries[0].id, first.entries[0].seq)
    assert again.entries[0].replayed and not first.entries[0].replayed


async def test_grpc_append_key_reused_with_other_body_is_conflict(stub: Any, team: dict[str, Actor]) -> None:
    task_id = await _open(stub, team["orchestrator"])
    agent = team["agent"]
    key = f"k-{uuid.uuid4().hex}"
    await stub.AppendEntries(
        _batches(task_id, [pb2.Entry(kind="log", content="one", idempotency_key=key)]),
        metadata=bearer(agent.key),
    )
    call = stub.AppendEntries(
        _batches(
            task_id,
            [pb2.Entry(kind="log", content="fresh")],
            [pb2.Entry(kind="log", content="two", idempotency_key=key)],
        ),
        metadata=bearer(agent.key),
    )
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    assert caught.value.code() == grpc.StatusCode.ALREADY_EXISTS
    assert refusal(caught.value)["error"] == "conflict"
    # the first message of the failed stream was stored; the trailer says so, and a retry is safe
    assert dict(caught.value.trailing_metadata() or ())[COMMITTED_METADATA] == "1"


async def test_grpc_append_bad_message_writes_nothing_of_it(stub: Any, team: dict[str, Actor]) -> None:
    task_id = await _open(stub, team["orchestrator"])
    agent = team["agent"]
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.AppendEntries(
            _batches(task_id, [pb2.Entry(kind="log", content="ok"), pb2.Entry(kind="gossip", content="no")]),
            metadata=bearer(agent.key),
        )
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert refusal(caught.value)["error"] == "validation_error"
    reply = await stub.AppendEntries(
        _batches(task_id, [pb2.Entry(kind="log", content="after")]), metadata=bearer(agent.key)
    )
    assert [a.seq for a in reply.entries] == [1]


async def test_grpc_append_over_entry_limit_is_resource_exhausted(
    stub: Any, team: dict[str, Actor], settings: Settings
) -> None:
    task_id = await _open(stub, team["orchestrator"])
    big = "x" * (settings.max_entry_bytes + 1)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.AppendEntries(
            _batches(task_id, [pb2.Entry(kind="log", content=big)]), metadata=bearer(team["agent"].key)
        )
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


async def test_grpc_append_unknown_task_is_not_found(stub: Any, team: dict[str, Actor]) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.AppendEntries(
            _batches("no-such-task", [pb2.Entry(kind="log", content="x")]), metadata=bearer(team["agent"].key)
        )
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND


async def test_grpc_append_to_other_tenants_task_is_not_found(stub: Any, team: dict[str, Actor]) -> None:
    task_id = await _open(stub, team["orchestrator"])
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.AppendEntries(
            _batches(task_id, [pb2.Entry(kind="log", content="x")]), metadata=bearer(team["outsider"].key)
        )
    # as for an unknown task: an outsider must not learn that the task exists
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    assert refusal(caught.value)["detail"] == f"task {task_id!r} does not exist"


async def test_grpc_search_with_malformed_json_is_invalid_argument(stub: Any, team: dict[str, Actor]) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.Search(pb2.JsonRequest(json="{not json"), metadata=bearer(team["agent"].key))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert refusal(caught.value)["error"] == "invalid_input"


async def test_grpc_database_down_is_unavailable(settings: Settings, team: dict[str, Actor]) -> None:
    # a gateway whose database cannot be reached: nothing listens on this port
    dead = settings.model_copy(
        update={
            "database_url": f"postgresql://nobody@127.0.0.1:{free_port()}/none",
            "db_timeout_seconds": 1.0,
        }
    )
    from api.grpc.server import start_grpc_server
    from api.services.gateway import GatewayResources, KeyCache, TaskCache
    from governance.storage.engine import make_engine
    from policy.enforcer import make_authorizer

    authorizer = make_authorizer(settings.sqlalchemy_url(), watch=False)  # policy loads from the live DB
    state = GatewayResources(
        settings=dead,
        engine=make_engine(dead),
        authorizer=authorizer,
        key_cache=KeyCache(),
        task_cache=TaskCache(),
    )
    server, port = await start_grpc_server(state, "127.0.0.1", 0)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            from api.grpc.proto import pb2_grpc

            request = pb2.OpenTaskRequest(org="o", project="p", worktree="main", description="d")
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await pb2_grpc.LoregateStub(channel).OpenTask(request, metadata=bearer(team["agent"].key))
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
        assert refusal(caught.value)["error"] == "unavailable"
    finally:
        await server.stop(grace=1)
        await state.engine.dispose()


async def test_grpc_runs_inside_the_http_gateway_process(settings: Settings, team: dict[str, Actor]) -> None:
    """What `loregate serve` runs: one app serving HTTP and gRPC, sharing its engine and key cache."""
    import threading

    import httpx
    import uvicorn

    from api.grpc.proto import pb2_grpc
    from api.http.app import create_app
    from tests.utils.gateway import wait_healthy

    grpc_port, http_port = free_port(), free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(settings, grpc_port=grpc_port), host="127.0.0.1", port=http_port, log_level="warning"
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_healthy(f"http://127.0.0.1:{http_port}")
        orchestrator = team["orchestrator"]
        async with grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
            org, project = orchestrator.principal.org, str(orchestrator.principal.project)
            request = pb2.OpenTaskRequest(org=org, project=project, worktree="main", description="both")
            task = await pb2_grpc.LoregateStub(channel).OpenTask(request, metadata=bearer(orchestrator.key))
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{http_port}") as http:
            seen = await http.get(f"/v1/tasks/{task.task_id}", headers=orchestrator.headers)
        assert seen.status_code == 200 and seen.json()["description"] == "both"
    finally:
        server.should_exit = True
        thread.join(timeout=15)


async def test_grpc_match_bug_pattern_answers_like_http(stub: Any, team: dict[str, Actor]) -> None:
    task_id = await _open(stub, team["orchestrator"])
    body = {"task_id": task_id, "error": "KeyError: 'user_42' at /app/x.py line 3"}
    reply = await stub.MatchBugPattern(
        pb2.JsonRequest(json=json.dumps(body)), metadata=bearer(team["agent"].key)
    )
    answer = json.loads(reply.json)
    assert answer == {
        "error_type": "KeyError",
        "signature": "KeyError: <q> at <path> line <n>",
        "patterns": [],
    }


async def test_grpc_observe_code_rule_bad_outcome_is_invalid_argument(
    stub: Any, team: dict[str, Actor]
) -> None:
    request = pb2.MemoryJsonRequest(memory_id="abc", json='{"outcome": "ignored"}')
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.ObserveCodeRule(request, metadata=bearer(team["orchestrator"].key))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.parametrize("method", ["CheckApproach", "RecordApproach"])
async def test_grpc_approach_without_task_id_is_invalid_argument(
    stub: Any, team: dict[str, Actor], method: str
) -> None:
    """No task id is a malformed request (as over HTTP, where it is part of the path), not an unknown task."""
    request = pb2.TaskJsonRequest(task_id="", json='{"approach": "retry with backoff"}')
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await getattr(stub, method)(request, metadata=bearer(team["agent"].key))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "task_id" in (caught.value.details() or "")


async def test_grpc_reflections_refuse_agents_other_tenants_and_bad_input(
    stub: Any, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    agent, outsider = team["agent"], team["outsider"]
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.StartReflection(pb2.JsonRequest(json="{}"), metadata=bearer(agent.key))
    assert caught.value.code() == grpc.StatusCode.PERMISSION_DENIED
    theirs = json.dumps({"org": agent.principal.org, "project": agent.principal.project})
    for call in (stub.StartReflection, stub.ListReflections):
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await call(pb2.JsonRequest(json=theirs), metadata=bearer(outsider.key))
        assert caught.value.code() == grpc.StatusCode.NOT_FOUND
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await call(pb2.JsonRequest(json='{"org": "a/b"}'), metadata=bearer(agent.key))
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    human = await make_actor(engine, ActorType.HUMAN, agent.principal.org, agent.principal.project)
    async with engine.begin() as conn:
        await revoke_key(conn, human.key.split("_")[1])
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.StartReflection(pb2.JsonRequest(json="{}"), metadata=bearer(human.key))
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
    listed = await stub.ListReflections(pb2.JsonRequest(json=""), metadata=bearer(agent.key))
    assert json.loads(listed.json) == {"reflections": []}


async def test_grpc_append_with_a_key_revoked_a_moment_ago_is_unauthenticated(
    stub: Any, engine: AsyncEngine, team: dict[str, Actor]
) -> None:
    agent = team["agent"]
    task_id = await _open(stub, team["orchestrator"])
    entry = pb2.Entry(kind="log", content="before the revocation")
    reply = await stub.AppendEntries(_batches(task_id, [entry]), metadata=bearer(agent.key))
    assert [a.seq for a in reply.entries] == [1]  # the gateway now holds the key in its cache
    async with engine.begin() as conn:
        assert await revoke_key(conn, agent.key.split("_")[1])
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.AppendEntries(_batches(task_id, [entry]), metadata=bearer(agent.key))
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert refusal(caught.value)["error"] == "unauthenticated"
    # nothing was written: the next live writer gets the next number
    reply = await stub.AppendEntries(_batches(task_id, [entry]), metadata=bearer(team["orchestrator"].key))
    assert [a.seq for a in reply.entries] == [2]
