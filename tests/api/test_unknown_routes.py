"""A path no route takes says so, naming it: an id with `/` or `..` in it used to answer a bare "Not Found".

Clients quote ids (api/client), so `../../etc` reaches the gateway as one segment that Starlette decodes
back into three; no route matches, and the caller (an MCP tool, a hook) showed `not_found: Not Found` with
nothing to go on. A route's own 404 (an unknown task) keeps naming what does not exist.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from api.client import LoregateClient, NotFoundError
from governance.config import Settings
from governance.scopes import ActorType
from tests.utils.factories import make_actor, new_tenant
from tests.utils.gateway import running_gateway


@pytest.fixture(scope="module")
def url(settings: Settings) -> Iterator[str]:
    with running_gateway(settings) as gateway_url:
        yield gateway_url


async def test_unknown_route_names_the_method_and_path(url: str, engine: AsyncEngine) -> None:
    agent = await make_actor(engine, ActorType.AGENT, *new_tenant())
    async with httpx.AsyncClient(base_url=url) as http:
        answer = await http.get("/v1/tasks/a%2Fb/entries", headers=agent.headers)
        unknown_task = await http.get("/v1/tasks/no-such-task/entries", headers=agent.headers)
    assert answer.status_code == 404
    assert answer.json() == {
        "error": "not_found",
        "detail": "no API route matches GET /v1/tasks/a/b/entries (ids hold no `/`; the routes are at /docs)",
    }
    assert unknown_task.status_code == 404
    assert unknown_task.json()["detail"] == "task 'no-such-task' does not exist"


async def test_unknown_route_reaches_the_python_client_as_not_found_naming_it(
    url: str, engine: AsyncEngine
) -> None:
    agent = await make_actor(engine, ActorType.AGENT, *new_tenant())
    with LoregateClient(url, agent.key) as lore, pytest.raises(NotFoundError) as refused:
        lore.memory("../../etc/passwd")
    assert refused.value.detail.startswith("no API route matches GET /v1/memories/../../etc/passwd")
