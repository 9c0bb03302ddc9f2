"""A path holding an encoded `/` (`%2F`) is refused with 404 naming it, and reaches no route.

Starlette routes on the decoded path: `POST /v1/memories/<id>%2Fretire` retired the memory, one quoted id
becoming another route; `GET /v1/memories/<id>%2Fhistory` read its history.
"""

from __future__ import annotations

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType
from tests.utils.factories import make_actor, new_tenant
from tests.utils.lifecycle_factories import Place, insert_memory


async def test_encoded_slash_in_memory_id_retires_nothing(gateway_url: str, engine: AsyncEngine) -> None:
    org, project = new_tenant()
    human = await make_actor(engine, ActorType.HUMAN, org, project)
    async with engine.begin() as conn:
        mid = await insert_memory(conn, Place(org, project, "main", f"task-{project}"), memory_type="fact")
    async with httpx.AsyncClient(base_url=gateway_url) as http:
        answer = await http.post(f"/v1/memories/{mid}%2Fretire", json={"reason": "x"}, headers=human.headers)
        lower = await http.get(f"/v1/memories/{mid}%2fhistory", headers=human.headers)
        history = await http.get(f"/v1/memories/{mid}/history", headers=human.headers)
    assert answer.status_code == 404, answer.text
    assert answer.json() == {
        "error": "not_found",
        "detail": f"path /v1/memories/{mid}%2Fretire holds an encoded '/' (%2F): ids hold no '/', and an "
        "encoded one is not read as a path separator nor as part of an id (the routes are at /docs)",
    }
    assert lower.status_code == 404 and "%2f" in lower.json()["detail"]
    assert [v["active"] for v in history.json()["versions"]] == [True]


async def test_encoded_slash_in_task_id_reaches_no_route(gateway_url: str, engine: AsyncEngine) -> None:
    agent = await make_actor(engine, ActorType.AGENT, *new_tenant())
    async with httpx.AsyncClient(base_url=gateway_url) as http:
        answer = await http.post(
            "/v1/tasks/t-1%2Fentries/x",
            json={"entries": [{"kind": "log", "content": "x"}]},
            headers=agent.headers,
        )
    assert answer.status_code == 404
    assert answer.json()["detail"].startswith("path /v1/tasks/t-1%2Fentries/x holds an encoded '/'")
