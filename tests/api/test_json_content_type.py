"""A JSON body sent without a JSON media type (`curl -d '{…}'` sends a form) is a 422 that says so, and writes
nothing: the message names the header to add, where FastAPI's own says only "a valid dictionary"."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.config import Settings
from governance.scopes import ActorType
from tests.utils.factories import make_actor, new_tenant
from tests.utils.gateway import running_gateway
from tests.utils.staging import assert_refused, count_entries, count_tasks, open_task_http

HINT = r"^body: send a JSON object with the header `Content-Type: application/json` \(this request's: "


@pytest.fixture(scope="module")
def url(settings: Settings) -> Iterator[str]:
    with running_gateway(settings) as gateway_url:
        yield gateway_url


@pytest.fixture
async def client(url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=url, timeout=30) as c:
        yield c


async def test_open_task_sent_as_curl_form_names_the_content_type(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    org, project = new_tenant()
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    before = await count_tasks(engine, org)
    body = f'{{"org": "{org}", "project": "{project}", "worktree": "main", "description": "x"}}'
    r = await client.post(
        "/v1/tasks",
        content=body,
        headers={**orchestrator.headers, "content-type": "application/x-www-form-urlencoded"},
    )
    assert_refused(r, 422, "validation_error", HINT + r"`application/x-www-form-urlencoded`\)$")
    assert r.json()["errors"][0]["loc"] == ["body"]
    assert await count_tasks(engine, org) == before


async def test_append_without_content_type_names_the_header(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    org, project = new_tenant()
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    task_id = await open_task_http(client, orchestrator, org, project)
    r = await client.post(
        f"/v1/tasks/{task_id}/entries",
        content=b'{"entries": [{"kind": "log", "content": "x"}]}',
        headers={**agent.headers, "content-type": ""},
    )
    assert_refused(r, 422, "validation_error", HINT + r"none\)$")
    assert await count_entries(engine, task_id) == 0


async def test_json_body_with_charset_is_read_as_json(engine: AsyncEngine, client: httpx.AsyncClient) -> None:
    org, project = new_tenant()
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    r = await client.post(
        "/v1/tasks",
        content=f'{{"org": "{org}", "project": "{project}", "worktree": "main"}}',
        headers={**orchestrator.headers, "content-type": "application/json; charset=utf-8"},
    )
    # a JSON body that misses a field keeps the field's own message
    assert_refused(r, 422, "validation_error", r"^description: Field required$")
