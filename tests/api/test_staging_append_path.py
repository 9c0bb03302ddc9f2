"""The append's own way through the gateway (api/http/append_path.py) answers as the route did.

Well-formed appends are answered without FastAPI's routing and dependencies; everything else reaches the
route. What a client notices must not differ: the answer, the order of the checks (who you are before what
you sent), the metrics, and a key revoked a moment ago is refused on its very next append.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.identity import key_id_of
from governance.scopes import ActorType
from governance.storage.identity import revoke_key
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.staging import assert_refused, count_entries, open_task_http

ENTRY = {"kind": "log", "content": "ran the suite: 12 passed", "payload": {"exit_code": 0}}


@pytest.fixture
async def client(gateway_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=gateway_url, timeout=30) as c:
        yield c


async def _world(engine: AsyncEngine, client: httpx.AsyncClient) -> tuple[Actor, str]:
    org, project = new_tenant()
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    return agent, await open_task_http(client, orchestrator, org, project)


def _appends(exposition: str, status: str) -> float:
    return sum(
        s.value
        for family in text_string_to_metric_families(exposition)
        for s in family.samples
        if s.name == "loregate_http_requests_total"
        and s.labels == {"method": "POST", "route": "/v1/tasks/{task_id}/entries", "status": status}
    )


async def test_append_with_a_key_revoked_a_moment_ago_is_401(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    agent, task_id = await _world(engine, client)
    first = await client.post(
        f"/v1/tasks/{task_id}/entries", headers=agent.headers, json={"entries": [ENTRY]}
    )
    assert first.status_code == 201, first.text  # the gateway now holds the key in its cache
    async with engine.begin() as conn:
        assert await revoke_key(conn, str(key_id_of(agent.key)))
    again = await client.post(
        f"/v1/tasks/{task_id}/entries", headers=agent.headers, json={"entries": [ENTRY]}
    )
    assert_refused(again, 401, "unauthenticated", "revoked")
    assert again.headers["www-authenticate"] == "Bearer"
    assert await count_entries(engine, task_id) == 1


async def test_append_answer_carries_every_field_and_counts_in_the_route_metrics(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    agent, task_id = await _world(engine, client)
    before = _appends((await client.get("/metrics")).text, "201")
    answer = await client.post(
        f"/v1/tasks/{task_id}/entries",
        headers={**agent.headers, "Content-Type": "application/json; charset=utf-8"},
        content=b'{"entries": [{"kind": "log", "content": "one"}, {"kind": "decision", "content": "two"}]}',
    )
    assert answer.status_code == 201, answer.text
    assert answer.headers["content-type"] == "application/json"
    body = answer.json()
    assert set(body) == {"task_id", "entries", "promotion", "hints"}
    assert body["task_id"] == task_id and body["promotion"] == 1 and body["hints"] == []
    assert [(e["seq"], e["replayed"]) for e in body["entries"]] == [(1, False), (2, False)]
    assert _appends((await client.get("/metrics")).text, "201") - before == 1


async def test_append_checks_the_key_before_the_body(engine: AsyncEngine, client: httpx.AsyncClient) -> None:
    agent, task_id = await _world(engine, client)
    unknown = {"Authorization": "Bearer lg_000000000000_not-a-key"}
    for body in ({"entries": []}, {"entries": [ENTRY]}):  # invalid, then valid: 401 either way
        answer = await client.post(f"/v1/tasks/{task_id}/entries", headers=unknown, json=body)
        assert_refused(answer, 401, "unauthenticated", "unknown or revoked API key")
    invalid = await client.post(f"/v1/tasks/{task_id}/entries", headers=agent.headers, json={"entries": []})
    assert_refused(invalid, 422, "validation_error", "entries")
    assert [e["loc"] for e in invalid.json()["errors"]] == [["body", "entries"]]
    assert await count_entries(engine, task_id) == 0


async def test_append_of_a_body_that_is_not_json_is_answered_by_the_route(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    agent, task_id = await _world(engine, client)
    for content_type, content in (
        ("application/json", b'{"entries": [{"kind": "log", "content": "unterminated'),
        ("text/plain", b'{"entries": [{"kind": "log", "content": "plain"}]}'),
    ):
        answer = await client.post(
            f"/v1/tasks/{task_id}/entries",
            headers={**agent.headers, "Content-Type": content_type},
            content=content,
        )
        assert answer.status_code == 422, answer.text
        assert answer.json()["error"] == "validation_error"
    assert await count_entries(engine, task_id) == 0
