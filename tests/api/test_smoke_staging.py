"""The staging write path end to end over real HTTP."""

from __future__ import annotations

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType
from tests.utils.factories import make_actor, new_tenant


async def test_staging_round_trip(engine: AsyncEngine, gateway_url: str) -> None:
    org, project = new_tenant()
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    async with httpx.AsyncClient(base_url=gateway_url) as client:
        r = await client.post(
            "/v1/tasks",
            json={"org": org, "project": project, "worktree": "main", "description": "fix login"},
            headers=orchestrator.headers,
        )
        assert r.status_code == 201, r.text
        task_id = r.json()["task_id"]
        r = await client.post(
            f"/v1/tasks/{task_id}/entries",
            headers=agent.headers,
            json={
                "entries": [
                    {"kind": "decision", "content": "use psycopg 3", "idempotency_key": "k1"},
                    {"kind": "log", "content": "ran tests", "payload": {"n": 3}},
                ]
            },
        )
        assert r.status_code == 201, r.text
        assert [e["seq"] for e in r.json()["entries"]] == [1, 2]
        again = await client.post(
            f"/v1/tasks/{task_id}/entries",
            headers=agent.headers,
            json={"entries": [{"kind": "decision", "content": "use psycopg 3", "idempotency_key": "k1"}]},
        )
        assert again.json()["entries"][0] == {**r.json()["entries"][0], "replayed": True}
        page = await client.get(f"/v1/tasks/{task_id}/entries", headers=agent.headers)
        assert [(e["seq"], e["actor"]) for e in page.json()["entries"]] == [
            (1, agent.principal.id),
            (2, agent.principal.id),
        ]
        assert page.json()["entries"][1]["payload"] == {"n": 3}
