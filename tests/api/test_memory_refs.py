"""Every route under /v1/memories/{ref} reads a memory's reference in the forms a context block and the CLI
print it — `abc123`, `mem:abc123`, `[mem:abc123]` — as GET /v1/memories/{ref} does (README: `loregate
confirm mem:…`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.config import Settings
from governance.scopes import ActorType, Scope
from tests.utils.factories import make_actor, new_tenant
from tests.utils.gateway import running_gateway
from tests.utils.memory_factories import add_entries, add_memory, new_task


@pytest.fixture(scope="module")
def url(settings: Settings) -> Iterator[str]:
    with running_gateway(settings) as gateway_url:
        yield gateway_url


@pytest.fixture
async def http(url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        yield client


@pytest.fixture(scope="module")
async def world(engine: AsyncEngine, url: str) -> dict[str, Any]:
    org, project = new_tenant()
    human = await make_actor(engine, ActorType.HUMAN, org, project)
    async with engine.begin() as conn:
        task = await new_task(conn, org=org, project=project)
        sources = await add_entries(conn, task, ["pool size 10 held under load"])
        memory = await add_memory(
            conn,
            task,
            title="db.pool",
            scope=Scope.PROJECT,
            embedding=None,
            content="db.pool: 10 connections per gateway",
            source_entry_ids=sources,
        )
    return {"human": human, "citation": memory["citation"]}


@pytest.mark.parametrize("form", ["{c}", "mem:{c}", "[mem:{c}]", "MEM:{c}"])
async def test_memory_routes_read_every_citation_form(
    http: httpx.AsyncClient, world: dict[str, Any], form: str
) -> None:
    ref = form.format(c=world["citation"])
    headers = world["human"].headers
    for path in ("", "/history", "/events"):
        r = await http.get(f"/v1/memories/{ref}{path}", headers=headers)
        assert r.status_code == 200, (path, r.text)
    history = (await http.get(f"/v1/memories/{ref}/history", headers=headers)).json()
    assert history == (await http.get(f"/v1/memories/{world['citation']}/history", headers=headers)).json()
    # found, so the route's own rule answers: the memory is not stale
    confirmed = await http.post(f"/v1/memories/{ref}/confirm", headers=headers, json={"note": "holds"})
    assert confirmed.status_code == 409, confirmed.text
    assert "is not stale" in confirmed.json()["detail"]


async def test_unknown_prefixed_ref_is_404_naming_it(http: httpx.AsyncClient, world: dict[str, Any]) -> None:
    r = await http.post("/v1/memories/mem:nosuchthing/confirm", headers=world["human"].headers, json={})
    assert r.status_code == 404
    assert r.json() == {"error": "not_found", "detail": "memory 'mem:nosuchthing' does not exist"}
