"""No existence oracle: a task or memory the caller may not read answers exactly as an unknown id does.

Before, another tenant's task or memory answered 403 naming its tenant while an unknown id answered 404, so
any key could probe which ids exist, and where. Now both are 404 with the same message shape, over HTTP and
gRPC; a caller who may read the thing but not do the action still gets the 403 with its reason.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import grpc
import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.config import Settings
from governance.scopes import ActorType
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.grpc_gateway import bearer, grpc_gateway, pb2, refusal
from tests.utils.lifecycle_factories import Place, insert_memory
from tests.utils.staging import open_task_http

ENTRY = {"entries": [{"kind": "decision", "content": "use the write-ahead log"}]}

# every task route, with a valid body: (method, path with {id}, json)
TASK_REQUESTS: list[tuple[str, str, dict[str, Any] | None]] = [
    ("GET", "/v1/tasks/{id}", None),
    ("GET", "/v1/tasks/{id}/entries", None),
    ("POST", "/v1/tasks/{id}/entries", ENTRY),
    ("POST", "/v1/tasks/{id}/approaches", {"approach": "retry", "outcome": "failure", "reason": "flaky"}),
    ("POST", "/v1/tasks/{id}/approaches/check", {"approach": "retry"}),
    ("POST", "/v1/tasks/{id}/promotion", {"target_scope": "project"}),
    ("GET", "/v1/promotions/{id}", None),
    ("POST", "/v1/promotions/{id}/verify", {"source": "tests_passed"}),
    ("POST", "/v1/promotions/{id}/approve", {"note": "fine"}),
    ("POST", "/v1/promotions/{id}/reject", {"note": "no"}),
    ("POST", "/v1/search", {"query": "wal", "task_id": "{id}"}),
    ("POST", "/v1/context", {"query": "wal", "task_id": "{id}"}),
]

MEMORY_REQUESTS: list[tuple[str, str, dict[str, Any] | None]] = [
    ("GET", "/v1/memories/{id}", None),
    ("GET", "/v1/memories/{id}/history", None),
    ("POST", "/v1/memories/{id}/feedback", {"helpful": False}),
    ("POST", "/v1/memories/{id}/validate", {"source": "tests_passed"}),
    ("POST", "/v1/memories/{id}/validate", {"source": "human_approved"}),
    ("POST", "/v1/memories/{id}/retire", {"reason": "mine now"}),
    ("POST", "/v1/memories/{id}/supersede", {"content": "mine", "reason": "mine now"}),
]


def _fill(value: Any, ident: str) -> Any:
    if isinstance(value, str):
        return value.replace("{id}", ident)
    if isinstance(value, dict):
        return {k: _fill(v, ident) for k, v in value.items()}
    return value


async def _send(
    client: httpx.AsyncClient, actor: Actor, request: tuple[str, str, dict[str, Any] | None], ident: str
) -> httpx.Response:
    method, path, body = request
    return await client.request(method, _fill(path, ident), json=_fill(body, ident), headers=actor.headers)


@pytest.fixture
async def client(gateway_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=gateway_url, timeout=30) as c:
        yield c


@pytest.fixture
async def world(engine: AsyncEngine, client: httpx.AsyncClient) -> dict[str, Any]:
    """A task and a project memory of one tenant, its own agent and human, and two outsiders."""
    org, project = new_tenant()
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    task_id = await open_task_http(client, orchestrator, org, project)
    place = Place(org=org, project=project, worktree="main", task_id=task_id)
    async with engine.begin() as conn:
        memory_id = await insert_memory(conn, place, memory_type="fact")
    return {
        "task_id": task_id,
        "memory_id": memory_id,
        "agent": await make_actor(engine, ActorType.AGENT, org, project),
        "human": await make_actor(engine, ActorType.HUMAN, org, project),
        "other_project": await make_actor(engine, ActorType.HUMAN, org, f"{project}-web"),
        "other_org": await make_actor(engine, ActorType.HUMAN, *new_tenant()),
    }


@pytest.mark.parametrize("outsider", ["other_project", "other_org"])
@pytest.mark.parametrize("request_", TASK_REQUESTS, ids=lambda r: f"{r[0]} {r[1]}")
async def test_task_of_another_tenant_answers_like_an_unknown_task(
    client: httpx.AsyncClient, world: dict[str, Any], outsider: str, request_: tuple[str, str, Any]
) -> None:
    caller = world[outsider]
    unknown = f"t-{uuid.uuid4().hex}"
    hidden = await _send(client, caller, request_, world["task_id"])
    missing = await _send(client, caller, request_, unknown)
    assert (hidden.status_code, missing.status_code) == (404, 404), (hidden.text, missing.text)
    assert hidden.json() == {"error": "not_found", "detail": f"task {world['task_id']!r} does not exist"}
    assert missing.json() == {"error": "not_found", "detail": f"task {unknown!r} does not exist"}


@pytest.mark.parametrize("outsider", ["other_project", "other_org"])
async def test_memory_of_another_tenant_answers_like_an_unknown_memory(
    client: httpx.AsyncClient, world: dict[str, Any], outsider: str
) -> None:
    """Every memory operation alike (GET /v1/memories/{ref} already answered so; the others did not)."""
    caller = world[outsider]
    for request_ in MEMORY_REQUESTS:
        unknown = str(uuid.uuid4())
        hidden = await _send(client, caller, request_, world["memory_id"])
        missing = await _send(client, caller, request_, unknown)
        assert (hidden.status_code, missing.status_code) == (404, 404), (request_, hidden.text, missing.text)
        assert hidden.json() == {
            "error": "not_found",
            "detail": f"memory {world['memory_id']!r} does not exist",
        }, request_
        assert missing.json() == {"error": "not_found", "detail": f"memory {unknown!r} does not exist"}


# (a caller who may read the task or memory but not act, the request, why it is refused)
READER_REFUSALS: list[tuple[str, tuple[str, str, dict[str, Any] | None], str]] = [
    (
        "agent",
        ("POST", "/v1/tasks/{id}/promotion", {"target_scope": "project"}),
        "may not promote at project",
    ),
    ("human", ("POST", "/v1/tasks/{id}/entries", ENTRY), "may not write at task scope"),
    ("agent", ("POST", "/v1/memories/{mid}/retire", {"reason": "x"}), "may not write at project scope"),
    (
        "agent",
        ("POST", "/v1/memories/{mid}/validate", {"source": "human_approved"}),
        "may not approve at project scope",
    ),
]


@pytest.mark.parametrize(
    ("reader", "request_", "reason"), READER_REFUSALS, ids=[f"{r[0]} {r[1][1]}" for r in READER_REFUSALS]
)
async def test_reader_denied_the_action_gets_403_where_an_outsider_gets_404(
    client: httpx.AsyncClient, world: dict[str, Any], reader: str, request_: tuple[str, str, Any], reason: str
) -> None:
    """Who may read the task or memory learns why it may not act; who may not read it learns nothing."""
    method, path, body = request_
    request_ = (method, path.replace("{mid}", world["memory_id"]), body)
    refused = await _send(client, world[reader], request_, world["task_id"])
    hidden = await _send(client, world["other_org"], request_, world["task_id"])
    assert refused.status_code == 403 and reason in refused.json()["detail"], refused.text
    assert hidden.status_code == 404 and hidden.json()["error"] == "not_found", hidden.text


# ---- gRPC ------------------------------------------------------------------------------------------------


def _grpc_calls(stub: Any, task_id: str) -> list[tuple[str, Any]]:
    """Every gRPC method that names a task, as (name, awaitable factory)."""
    search = json.dumps({"query": "wal", "task_id": task_id})
    return [
        (
            "AppendEntries",
            lambda md: stub.AppendEntries(
                iter([pb2.AppendRequest(task_id=task_id, entries=[pb2.Entry(kind="log", content="x")])]),
                metadata=md,
            ),
        ),
        ("Search", lambda md: stub.Search(pb2.JsonRequest(json=search), metadata=md)),
        ("Context", lambda md: stub.Context(pb2.JsonRequest(json=search), metadata=md)),
        (
            "CheckApproach",
            lambda md: stub.CheckApproach(
                pb2.TaskJsonRequest(task_id=task_id, json=json.dumps({"approach": "retry"})), metadata=md
            ),
        ),
        (
            "StartPromotion",
            lambda md: stub.StartPromotion(
                pb2.TaskJsonRequest(task_id=task_id, json=json.dumps({"target_scope": "project"})),
                metadata=md,
            ),
        ),
    ]


async def _grpc_refusal(call: Any, key: str) -> tuple[grpc.StatusCode, dict[str, Any]]:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call(bearer(key))
    return caught.value.code(), refusal(caught.value)


@pytest.mark.parametrize("outsider", ["other_project", "other_org"])
async def test_grpc_task_of_another_tenant_answers_like_an_unknown_task(
    settings: Settings, world: dict[str, Any], outsider: str
) -> None:
    key = world[outsider].key
    unknown = f"t-{uuid.uuid4().hex}"
    async with grpc_gateway(settings) as stub:
        hidden_calls = _grpc_calls(stub, world["task_id"])
        missing_calls = _grpc_calls(stub, unknown)
        for (name, hidden_call), (_, missing_call) in zip(hidden_calls, missing_calls, strict=True):
            hidden = await _grpc_refusal(hidden_call, key)
            missing = await _grpc_refusal(missing_call, key)
            assert hidden == (
                grpc.StatusCode.NOT_FOUND,
                {"error": "not_found", "detail": f"task {world['task_id']!r} does not exist"},
            ), name
            assert missing == (
                grpc.StatusCode.NOT_FOUND,
                {"error": "not_found", "detail": f"task {unknown!r} does not exist"},
            ), name


async def test_grpc_reader_denied_the_action_gets_permission_denied_where_an_outsider_gets_not_found(
    settings: Settings, world: dict[str, Any]
) -> None:
    async with grpc_gateway(settings) as stub:
        calls = dict(_grpc_calls(stub, world["task_id"]))
        for name, reader, reason in [
            ("AppendEntries", "human", "may not write at task scope"),
            ("StartPromotion", "agent", "may not promote at project scope"),
        ]:
            code, body = await _grpc_refusal(calls[name], world[reader].key)
            assert code == grpc.StatusCode.PERMISSION_DENIED and reason in body["detail"], name
            code, body = await _grpc_refusal(calls[name], world["other_org"].key)
            assert code == grpc.StatusCode.NOT_FOUND and body["error"] == "not_found", name
