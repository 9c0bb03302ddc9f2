"""A body sent to a route that takes none is a 422 and nothing is done.

`DELETE /v1/memories/{id}` with `{"dry_run": true}` erased the memory (the route reads `dry_run` from the
query, and ignored the body); `POST /v1/tasks/{id}/close` with any body at all, `not json{` included,
closed the task. An empty body and `{}` (what some clients send with every POST) still pass.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.config import Settings
from governance.scopes import ActorType
from tests.utils.factories import make_actor, new_tenant
from tests.utils.gateway import running_gateway
from tests.utils.memory_factories import add_memory, new_task


@pytest.fixture(scope="module")
def url(settings: Settings) -> Iterator[str]:
    with running_gateway(settings) as gateway_url:
        yield gateway_url


async def test_erase_with_a_body_is_refused_and_erases_nothing(url: str, engine: AsyncEngine) -> None:
    org, project = new_tenant()
    human = await make_actor(engine, ActorType.HUMAN, org, project)
    async with engine.begin() as conn:
        task = await new_task(conn, org=org, project=project)
        memory = await add_memory(conn, task, title="Queue", content="queue.backend: redis", embedding=None)
    path = f"/v1/memories/{memory['citation']}"
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        bodies: list[object] = [{"dry_run": True}, {"dryrun": True}, []]
        refused = [await http.request("DELETE", path, json=body, headers=human.headers) for body in bodies]
        plain = human.headers | {"content-type": "text/plain"}
        garbage = await http.request("DELETE", path, content=b"not json at all{", headers=plain)
        shown = await http.get(path, headers=human.headers)
        dry = await http.request("DELETE", path, params={"dry_run": "true"}, json={}, headers=human.headers)
        still = await http.get(path, headers=human.headers)
    for answer in (*refused, garbage):
        assert answer.status_code == 422, answer.text
        detail = answer.json()["detail"]
        assert detail.startswith("DELETE /v1/memories/{memory_id} takes no request body"), detail
        assert detail.endswith("nothing was done"), detail
    assert shown.status_code == 200, shown.text
    assert dry.status_code == 200 and dry.json()["dry_run"] is True, dry.text
    assert still.status_code == 200, still.text


async def test_close_with_a_body_is_refused_and_the_task_stays_open(url: str, engine: AsyncEngine) -> None:
    org, project = new_tenant()
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    async with engine.begin() as conn:
        task = await new_task(conn, org=org, project=project)
    path = f"/v1/tasks/{task.task_id}/close"
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        with_body = await http.post(path, json={"dry_run": True}, headers=orchestrator.headers)
        not_json = await http.post(
            path, content=b"not json at all{", headers=orchestrator.headers | {"content-type": "text/plain"}
        )
        shown = await http.get(f"/v1/tasks/{task.task_id}", headers=orchestrator.headers)
        empty_object = await http.post(path, content=b" { } ", headers=orchestrator.headers)
    assert with_body.status_code == 422 and not_json.status_code == 422, (with_body.text, not_json.text)
    assert shown.status_code == 200 and shown.json()["status"] == "open", shown.text
    assert empty_object.status_code == 200, empty_object.text


async def test_every_route_without_a_body_refuses_one(url: str) -> None:
    """Walks the OpenAPI description: each operation that takes no body refuses one before anything else
    (no key is needed to be told)."""
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        paths = (await http.get("/openapi.json")).json()["paths"]
        tried = 0
        for path, operations in paths.items():
            if path == "/healthz":
                continue
            concrete = re.sub(r"\{[^}]+\}", "x1", path)
            for method, operation in operations.items():
                if method not in {"get", "post", "put", "patch", "delete"} or "requestBody" in operation:
                    continue
                answer = await http.request(method.upper(), concrete, json={"dry_run": True})
                assert answer.status_code == 422, (method, path, answer.text)
                assert "takes no request body" in answer.json()["detail"], (method, path, answer.text)
                tried += 1
    assert tried >= 20, tried
