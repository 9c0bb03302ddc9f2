"""A path no route takes says so, naming it: an id with `/` or `..` in it used to answer a bare "Not Found".

A path no route takes answered `not_found: Not Found`, and the caller (an MCP tool, a hook) had nothing to
go on. Clients quote ids (api/client), so `../../etc` arrives as one segment with `%2F` in it, refused
before routing (api/http/encoded_slash.py). A route's own 404 (an unknown task) keeps naming what does not
exist.
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
        answer = await http.get("/v1/tasks/a/b/entries", headers=agent.headers)
        unknown_task = await http.get("/v1/tasks/no-such-task/entries", headers=agent.headers)
    assert answer.status_code == 404
    assert answer.json() == {
        "error": "not_found",
        "detail": "no API route matches GET /v1/tasks/a/b/entries (ids hold no `/`; the routes are at /docs)",
    }
    assert unknown_task.status_code == 404
    assert unknown_task.json()["detail"] == "task 'no-such-task' does not exist"


async def test_id_holding_a_slash_reaches_the_python_client_as_not_found_naming_it(
    url: str, engine: AsyncEngine
) -> None:
    agent = await make_actor(engine, ActorType.AGENT, *new_tenant())
    with LoregateClient(url, agent.key) as lore, pytest.raises(NotFoundError) as refused:
        lore.memory("../../etc/passwd")
    # the client quotes the id: its `/` arrive as `%2F`, which no route takes (api/http/encoded_slash.py)
    assert refused.value.detail.startswith("path /v1/memories/..%2F..%2Fetc%2Fpasswd holds an encoded '/'")
