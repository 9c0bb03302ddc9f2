"""The memory answer (GET /v1/memories/{ref}) carries `related_ids`; a search answer no `widened`."""

from __future__ import annotations

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType
from tests.utils.factories import make_actor, new_tenant
from tests.utils.memory_factories import add_memory, new_task


async def test_memory_answer_lists_its_related_ids(engine: AsyncEngine, gateway_url: str) -> None:
    org, project = new_tenant()
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    async with engine.begin() as conn:
        task = await new_task(conn, org=org, project=project)
        near = await add_memory(conn, task, title="Retry webhooks", content="queue and ack", embedding=None)
        alone = await add_memory(conn, task, title="Pin pgserver", content="pin it", embedding=None)
        linked = await add_memory(
            conn,
            task,
            title="Webhook timeouts",
            content="acks within 10 s",
            embedding=None,
            related_ids=[near["id"]],
        )
    async with httpx.AsyncClient(base_url=gateway_url, headers=agent.headers) as http:
        with_related = await http.get(f"/v1/memories/mem:{linked['citation']}")
        without = await http.get(f"/v1/memories/mem:{alone['citation']}")
    assert with_related.status_code == 200, with_related.text
    assert with_related.json()["memory"]["related_ids"] == [near["id"]]
    assert without.json()["memory"]["related_ids"] == []


async def test_search_answer_no_longer_carries_widened(gateway_url: str) -> None:
    async with httpx.AsyncClient(base_url=gateway_url) as http:
        schema = (await http.get("/openapi.json")).json()
    properties = schema["components"]["schemas"]["SearchPublic"]["properties"]
    assert "widened" not in properties
    assert {"intent", "types", "preferred_types", "results"} <= set(properties)
