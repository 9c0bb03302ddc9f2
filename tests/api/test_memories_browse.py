"""Published memory listed by scope (`GET /v1/memories?scope_key=`) and a memory's events, over real HTTP."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import numpy as np
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType, Scope
from tests.utils.factories import make_actor, new_tenant
from tests.utils.memory_factories import add_memory, new_task

VECTOR = np.ones(384, dtype=np.float32) / np.sqrt(384)


async def test_list_memories_filters_by_state_type_trust_and_text(
    gateway_url: str, engine: AsyncEngine
) -> None:
    org, project = new_tenant()
    reader = await make_actor(engine, ActorType.HUMAN, org, project)
    now = datetime.now(UTC)
    async with engine.begin() as conn:
        task = await new_task(conn, org=org, project=project)
        old = await add_memory(
            conn, task, title="old", content="psycopg2", embedding=VECTOR, deprecated_at=now
        )
        await add_memory(
            conn, task, title="new", content="psycopg 3", embedding=VECTOR, supersedes_id=old["id"]
        )
        await add_memory(conn, task, title="gone", content="x", embedding=VECTOR, deprecated_at=now)
        await add_memory(
            conn, task, title="stale", content="y", embedding=VECTOR, expires_at=now - timedelta(days=1)
        )
        await add_memory(conn, task, title="rule", content="z", embedding=VECTOR, memory_type="code_rule")
    scope = task.key(Scope.PROJECT)

    async def titles(**params: object) -> set[str]:
        async with httpx.AsyncClient(base_url=gateway_url, headers=reader.headers) as http:
            answer = await http.get("/v1/memories", params={"scope_key": scope, **params})
        assert answer.status_code == 200, answer.text
        return {m["title"] for m in answer.json()["memories"]}

    assert await titles() == {"old", "new", "gone", "stale", "rule"}
    assert await titles(state="active") == {"new", "rule"}
    assert await titles(state="superseded") == {"old"}
    assert await titles(state="retired") == {"gone"}
    assert await titles(state="expired") == {"stale"}
    assert await titles(type="code_rule") == {"rule"}
    assert await titles(q="PSYCOPG") == {"old", "new"}
    assert await titles(min_trust=0.7) == set()
    assert len(await titles(limit=2)) == 2


async def test_list_memories_of_another_tenant_is_404(gateway_url: str, engine: AsyncEngine) -> None:
    org, project = new_tenant()
    outsider = await make_actor(engine, ActorType.HUMAN, *new_tenant())
    async with engine.begin() as conn:
        task = await new_task(conn, org=org, project=project)
        memory = await add_memory(conn, task, title="secret", content="s", embedding=VECTOR)
    async with httpx.AsyncClient(base_url=gateway_url, headers=outsider.headers) as http:
        listed = await http.get("/v1/memories", params={"scope_key": task.key(Scope.PROJECT)})
        events = await http.get(f"/v1/memories/{memory['id']}/events")
    assert listed.status_code == 404 and events.status_code == 404


async def test_memory_events_list_its_audit_trail(gateway_url: str, engine: AsyncEngine) -> None:
    org, project = new_tenant()
    human = await make_actor(engine, ActorType.HUMAN, org, project)
    async with engine.begin() as conn:
        task = await new_task(conn, org=org, project=project)
        memory = await add_memory(conn, task, title="t", content="c", embedding=VECTOR)
    async with httpx.AsyncClient(base_url=gateway_url, headers=human.headers) as http:
        boosted = await http.post(f"/v1/memories/{memory['id']}/validate", json={"source": "human_approved"})
        assert boosted.status_code == 200, boosted.text
        events = await http.get(f"/v1/memories/{memory['citation']}/events")
    assert events.status_code == 200
    assert [(e["type"], e["actor_id"]) for e in events.json()["events"]] == [("BOOSTED", human.principal.id)]
