"""Property: whatever bytes a client sends as content or payload are either stored and read back
byte-identical, or refused with a 4xx that names the problem — never a 5xx, never something else stored."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType
from tests.utils.factories import Actor, make_actor, new_tenant

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


@pytest.fixture(scope="module")
async def writer(engine: AsyncEngine, gateway_url: str) -> tuple[Actor, str]:
    org, project = new_tenant()
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    async with httpx.AsyncClient(base_url=gateway_url) as client:
        r = await client.post(
            "/v1/tasks",
            headers=orchestrator.headers,
            json={"org": org, "project": project, "worktree": "w", "description": "fuzz"},
        )
    return agent, r.json()["task_id"]


def _escape_for_json_string(raw: bytes) -> bytes:
    """Put raw bytes inside a JSON string literal, escaping only what JSON syntax itself needs."""
    return raw.replace(b"\\", b"\\\\").replace(b'"', b'\\"')


def _read_back(client: httpx.Client, agent: Actor, task_id: str, seq: int) -> dict[str, Any]:
    page = client.get(
        f"/v1/tasks/{task_id}/entries", params={"after_seq": seq - 1, "limit": 1}, headers=agent.headers
    )
    assert page.status_code == 200
    entry: dict[str, Any] = page.json()["entries"][0]
    assert entry["seq"] == seq
    return entry


@SETTINGS
@given(raw=st.binary(max_size=300))
def test_staging_raw_content_bytes_round_trip_or_4xx(
    gateway_url: str, writer: tuple[Actor, str], raw: bytes
) -> None:
    agent, task_id = writer
    body = b'{"entries": [{"kind": "log", "content": "' + _escape_for_json_string(raw) + b'"}]}'
    with httpx.Client(base_url=gateway_url) as client:
        r = client.post(
            f"/v1/tasks/{task_id}/entries",
            content=body,
            headers={**agent.headers, "Content-Type": "application/json"},
        )
        assert r.status_code < 500, r.text
        if r.status_code != 201:
            assert 400 <= r.status_code < 500 and r.json()["detail"]
            return
        sent = json.loads(body)["entries"][0]["content"]
        stored = _read_back(client, agent, task_id, r.json()["entries"][0]["seq"])
        assert stored["content"].encode("utf-8", "surrogatepass") == sent.encode("utf-8", "surrogatepass")


@SETTINGS
@given(content=st.text(max_size=200), payload=json_values)
def test_staging_any_text_and_json_payload_round_trip_or_4xx(
    gateway_url: str, writer: tuple[Actor, str], content: str, payload: Any
) -> None:
    agent, task_id = writer
    with httpx.Client(base_url=gateway_url) as client:
        r = client.post(
            f"/v1/tasks/{task_id}/entries",
            headers=agent.headers,
            json={"entries": [{"kind": "tool_output", "content": content, "payload": payload}]},
        )
        assert r.status_code < 500, r.text
        if r.status_code != 201:
            assert r.status_code == 422 and "NUL" in r.json()["detail"]
            return
        stored = _read_back(client, agent, task_id, r.json()["entries"][0]["seq"])
        assert stored["content"] == content
        assert stored["payload"] == payload
