"""Numbers JSON cannot hold and text Postgres cannot store are 422 / INVALID_ARGUMENT, never a 500.

Python's `json` accepts `NaN`, `Infinity`, `-Infinity`, `1e400` (read as infinity) and lone surrogate escapes
(`"\\ud800"`); Postgres' `jsonb` and `text` refuse them. Each request here is sent as raw bytes, so exactly
these tokens arrive, and each refusal must name the field, leave the client's keep-alive connection usable
and store nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import grpc
import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.config import Settings
from governance.scopes import ActorType
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.grpc_gateway import bearer, grpc_gateway, pb2, refusal
from tests.utils.staging import count_entries, count_tasks, open_task_http

JSON = {"content-type": "application/json"}


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def _entries(payload: bytes, content: bytes = b'"c"') -> bytes:
    return b'{"entries":[{"kind":"log","content":' + content + b',"payload":' + payload + b"}]}"


# (id, raw body of POST entries, what the detail must say: the field, then where inside it and what)
BAD_ENTRIES = [
    ("nan", _entries(b'{"a":NaN}'), ["entries.0.payload", "at /a", "NaN"]),
    ("infinity", _entries(b'{"a":[1,Infinity]}'), ["entries.0.payload", "at /a/1", "Infinity"]),
    ("minus-infinity", _entries(b"-Infinity"), ["entries.0.payload", "the value itself", "-Infinity"]),
    ("1e400", _entries(b'{"n":1e400}'), ["entries.0.payload", "at /n", "1e400"]),
    ("minus-1e400", _entries(b'{"n":[-1e400]}'), ["entries.0.payload", "at /n/0", "-Infinity"]),
    ("surrogate-in-content", _entries(b"null", b'"a\\ud800b"'), ["entries.0.content", "lone surrogate"]),
    ("surrogate-in-key", _entries(b'{"\\udc00":1}'), ["entries.0.payload", "the key", "lone surrogate"]),
    (
        "surrogate-in-value",
        _entries(b'{"k":["ok","\\udbff"]}'),
        ["entries.0.payload", "at /k/1", "surrogate"],
    ),
    (
        "surrogate-in-idempotency-key",
        b'{"entries":[{"kind":"log","content":"c","idempotency_key":"\\ud800"}]}',
        ["entries.0.idempotency_key", "lone surrogate"],
    ),
    ("nested-150", _entries(_nested(150)), ["entries.0.payload", "nested deeper than 100 levels"]),
    ("nested-5000", _entries(_nested(5000)), ["body", "nested too deeply"]),
    (
        "second-entry-of-a-batch",
        b'{"entries":[{"kind":"log","content":"fine"},{"kind":"log","content":"c","payload":[NaN]}]}',
        ["entries.1.payload", "at /0", "NaN"],
    ),
]


@pytest.fixture(scope="module")
async def team(engine: AsyncEngine) -> dict[str, Actor]:
    org, project = new_tenant()
    return {
        "orchestrator": await make_actor(engine, ActorType.ORCHESTRATOR, org, project),
        "agent": await make_actor(engine, ActorType.AGENT, org, project),
    }


@pytest.fixture
async def client(gateway_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=gateway_url, timeout=30) as c:
        yield c


def _local_port(r: httpx.Response) -> int:
    """The client's end of the TCP connection that carried `r` (the same port: the same connection)."""
    return int(r.extensions["network_stream"].get_extra_info("client_addr")[1])


def _assert_422(r: httpx.Response, says: list[str]) -> None:
    assert r.status_code == 422, (r.status_code, r.text)
    assert r.headers.get("connection", "").lower() != "close", r.headers
    body = r.json()
    assert body["error"] in ("validation_error", "invalid_input"), body
    for words in says:
        assert words in body["detail"], (words, body["detail"])


@pytest.mark.parametrize(
    ("raw", "says"), [pytest.param(raw, says, id=name) for name, raw, says in BAD_ENTRIES]
)
async def test_unstorable_entry_is_422_naming_the_field_and_the_connection_survives(
    client: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine, raw: bytes, says: list[str]
) -> None:
    agent = team["agent"]
    task_id = await open_task_http(client, team["orchestrator"], agent.principal.org, agent.principal.project)
    bad = await client.post(f"/v1/tasks/{task_id}/entries", headers={**agent.headers, **JSON}, content=raw)
    _assert_422(bad, says)

    # the same keep-alive connection serves the next requests, and nothing of the refused batch was stored
    listed = await client.get(f"/v1/tasks/{task_id}/entries", headers=agent.headers)
    assert listed.status_code == 200, listed.text
    assert listed.json()["entries"] == []
    good = await client.post(
        f"/v1/tasks/{task_id}/entries",
        headers=agent.headers,
        json={"entries": [{"kind": "log", "content": "fine", "payload": {"n": 1.5e300, "s": "\U0001f600"}}]},
    )
    assert good.status_code == 201, good.text
    assert _local_port(bad) == _local_port(listed) == _local_port(good)
    assert await count_entries(engine, task_id) == 1


async def test_a_surrogate_pair_is_one_valid_character_and_is_stored(
    client: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    agent = team["agent"]
    task_id = await open_task_http(client, team["orchestrator"], agent.principal.org, agent.principal.project)
    raw = _entries(b'{"\\ud83d\\ude00":"\\ud83d\\ude00"}', b'"smile \\ud83d\\ude00"')
    r = await client.post(f"/v1/tasks/{task_id}/entries", headers={**agent.headers, **JSON}, content=raw)
    assert r.status_code == 201, r.text
    listed = (await client.get(f"/v1/tasks/{task_id}/entries", headers=agent.headers)).json()["entries"]
    assert listed[0]["content"] == "smile \U0001f600" and listed[0]["payload"] == {"\U0001f600": "\U0001f600"}


async def test_lone_surrogates_in_other_text_inputs_are_422_and_store_nothing(
    client: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    orchestrator, agent = team["orchestrator"], team["agent"]
    org, project = agent.principal.org, agent.principal.project
    task_id = await open_task_http(client, orchestrator, org, project)
    tasks_before = await count_tasks(engine, org)
    fresh_org = f"org-{uuid.uuid4().hex}"
    cases: list[tuple[str, dict[str, str], bytes, str]] = [
        (
            "/v1/tasks",
            orchestrator.headers,
            b'{"org":"%s","project":"%s","worktree":"w","description":"fix \\ud800"}'
            % (org.encode(), project.encode()),
            "description",
        ),
        (
            "/v1/tasks",
            orchestrator.headers,
            b'{"org":"%s\\udfff","project":"p","worktree":"w","description":"d"}' % fresh_org.encode(),
            "org",
        ),
        ("/v1/search", agent.headers, b'{"query":"why \\ud800","task_id":"%s"}' % task_id.encode(), "query"),
        ("/v1/context", agent.headers, b'{"query":"\\udc00","task_id":"%s"}' % task_id.encode(), "query"),
        (f"/v1/tasks/{task_id}/approaches/check", agent.headers, b'{"approach":"retry \\ud800"}', "approach"),
        (
            f"/v1/tasks/{task_id}/approaches",
            agent.headers,
            b'{"approach":"a","outcome":"failed","reason":"\\ud800"}',
            "reason",
        ),
        (
            f"/v1/memories/{uuid.uuid4()}/supersede",
            agent.headers,
            b'{"content":"new \\ud800","reason":"r"}',
            "content",
        ),
    ]
    for path, headers, raw, field in cases:
        r = await client.post(path, headers={**headers, **JSON}, content=raw)
        _assert_422(r, [field, "lone surrogate"])
    assert await count_tasks(engine, org) == tasks_before
    assert await count_entries(engine, task_id) == 0
    r = await client.get("/healthz")  # the connection is still the one all refusals went over
    assert r.status_code == 200


async def test_unparsable_json_bodies_are_422_not_400_or_500(
    client: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    agent = team["agent"]
    task_id = await open_task_http(client, team["orchestrator"], agent.principal.org, agent.principal.project)
    huge_integer = _entries(b'{"n":' + b"9" * 5000 + b"}")
    r = await client.post(
        f"/v1/tasks/{task_id}/entries", headers={**agent.headers, **JSON}, content=huge_integer
    )
    _assert_422(r, ["body", "cannot be parsed"])
    r = await client.post(
        f"/v1/tasks/{task_id}/entries", headers={**agent.headers, **JSON}, content=b"\xff{}"
    )
    _assert_422(r, ["body"])


# -- gRPC ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
async def stub(settings: Settings) -> AsyncIterator[Any]:
    async with grpc_gateway(settings) as s:
        yield s


def _stream(task_id: str, *entries: Any) -> Iterator[Any]:
    yield pb2.AppendRequest(task_id=task_id, entries=list(entries))


BAD_PAYLOAD_JSON = [
    ("nan", '{"a": NaN}', ["entries.0.payload", "at /a", "NaN"]),
    ("infinity", "[1, Infinity]", ["entries.0.payload", "at /1", "Infinity"]),
    ("minus-infinity", "-Infinity", ["entries.0.payload", "-Infinity"]),
    ("1e400", '{"n": 1e400}', ["entries.0.payload", "at /n", "1e400"]),
    ("surrogate-in-value", '"\\ud800"', ["entries.0.payload", "lone surrogate"]),
    ("surrogate-in-key", '{"\\udc00": 1}', ["entries.0.payload", "the key", "lone surrogate"]),
    ("nested-150", _nested(150).decode(), ["entries.0.payload", "nested deeper than 100 levels"]),
    ("nested-5000", _nested(5000).decode(), ["entries.0.payload_json", "nested too deeply"]),
    ("huge-integer", "9" * 5000, ["entries.0.payload_json", "not valid JSON"]),
]


@pytest.mark.parametrize(
    ("payload_json", "says"), [pytest.param(text, says, id=name) for name, text, says in BAD_PAYLOAD_JSON]
)
async def test_grpc_unstorable_payload_is_invalid_argument_naming_the_field(
    stub: Any, team: dict[str, Actor], engine: AsyncEngine, payload_json: str, says: list[str]
) -> None:
    agent = team["agent"]
    opened = await stub.OpenTask(
        pb2.OpenTaskRequest(
            org=agent.principal.org, project=agent.principal.project, worktree="main", description="grpc"
        ),
        metadata=bearer(team["orchestrator"].key),
    )
    task_id = str(opened.task_id)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.AppendEntries(
            _stream(task_id, pb2.Entry(kind="log", content="c", payload_json=payload_json)),
            metadata=bearer(agent.key),
        )
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT, caught.value
    body = refusal(caught.value)
    assert body["error"] in ("validation_error", "invalid_input"), body
    for words in says:
        assert words in body["detail"], (words, body["detail"])
    assert await count_entries(engine, task_id) == 0
    ack = await stub.AppendEntries(
        _stream(task_id, pb2.Entry(kind="log", content="fine", payload_json='{"n": 1e300}')),
        metadata=bearer(agent.key),
    )
    assert len(ack.entries) == 1
    assert await count_entries(engine, task_id) == 1


async def test_grpc_deeply_nested_search_json_is_invalid_argument(stub: Any, team: dict[str, Actor]) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.Search(pb2.JsonRequest(json=_nested(5000).decode()), metadata=bearer(team["agent"].key))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT, caught.value
    assert "json is nested too deeply" in refusal(caught.value)["detail"]
