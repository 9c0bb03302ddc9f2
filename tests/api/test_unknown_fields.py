"""A field the request does not have is a 422 naming it, on reads and memory changes as on writes.

Search, context, approaches and the memory lifecycle ignored unknown fields: `"as_of"` or a misspelt
`"typs"` returned unfiltered results as if the filter held, and `{"source": ..., "confidence": 1.0}` looked
like it set a trust it never touched. Staging, promotions and change requests already refused them.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.config import Settings
from governance.scopes import ActorType, Scope
from tests.utils.factories import make_actor, new_tenant
from tests.utils.gateway import running_gateway
from tests.utils.memory_factories import add_memory, new_task


@pytest.fixture(scope="module")
def url(settings: Settings) -> Iterator[str]:
    with running_gateway(settings) as gateway_url:
        yield gateway_url


async def test_unknown_fields_are_refused_naming_them(url: str, engine: AsyncEngine) -> None:
    org, project = new_tenant()
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    async with engine.begin() as conn:
        task = await new_task(conn, org=org, project=project)
        memory = await add_memory(conn, task, title="Queue", content="queue.backend: redis", embedding=None)
    cases = [
        ("/v1/search", {"query": "queue", "task_id": task.task_id, "as_of": "2020-01-01T00:00:00Z"}, "as_of"),
        ("/v1/search", {"query": "queue", "task_id": task.task_id, "typs": ["fact"]}, "typs"),
        ("/v1/context", {"query": "queue", "task_id": task.task_id, "max_token": 50}, "max_token"),
        (
            f"/v1/memories/{memory['citation']}/validate",
            {"source": "tests_passed", "confidence": 1.0},
            "confidence",
        ),
        (f"/v1/memories/{memory['citation']}/feedback", {"helpful": True, "weight": 10}, "weight"),
        (
            f"/v1/tasks/{task.task_id}/approaches",
            {"approach": "use redis", "outcome": "failed", "actor": "human-1"},
            "actor",
        ),
    ]
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        for path, body, field in cases:
            answer = await http.post(path, json=body, headers=agent.headers)
            assert answer.status_code == 422, (path, answer.text)
            assert answer.json()["detail"] == f"{field}: Extra inputs are not permitted", answer.text
        # without the stray field, the same search is taken
        search = await http.post(
            "/v1/search", json={"query": "queue", "task_id": task.task_id}, headers=agent.headers
        )
    assert search.status_code == 200, search.text


async def test_erasure_lift_and_check_refuse_unknown_fields_and_change_nothing(
    url: str, engine: AsyncEngine
) -> None:
    """`{"memory": ..., "dryrun": true}` erased for real (the field is `dry_run`); a lift or an approach check
    carrying a stray field went ahead as if it were not there."""
    org, project = new_tenant()
    human = await make_actor(engine, ActorType.HUMAN, org, project)
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    async with engine.begin() as conn:
        task = await new_task(conn, org=org, project=project)
        memory = await add_memory(conn, task, title="Queue", content="queue.backend: redis", embedding=None)
    citation = memory["citation"]
    cases = [
        ("/v1/erasures", {"memory": citation, "dryrun": True}, "dryrun", human),
        (
            "/v1/memories/lift",
            {"memory_ids": [citation], "target_scope": {"scope": "org"}, "reason": "wider", "dryrun": True},
            "dryrun",
            human,
        ),
        (
            f"/v1/tasks/{task.task_id}/approaches/check",
            {"approach": "use redis", "subtsk": "cache"},
            "subtsk",
            agent,
        ),
    ]
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        failed = await http.post(
            f"/v1/tasks/{task.task_id}/approaches",
            json={"approach": "use redis", "outcome": "failed", "reason": "evicts", "subtask": "cache"},
            headers=agent.headers,
        )
        assert failed.status_code == 201, failed.text
        for path, body, field, actor in cases:
            answer = await http.post(path, json=body, headers=actor.headers)
            assert answer.status_code == 422, (path, answer.text)
            assert answer.json()["detail"] == f"{field}: Extra inputs are not permitted", answer.text
        history = await http.get(f"/v1/memories/{citation}/history", headers=human.headers)
        check = await http.post(
            f"/v1/tasks/{task.task_id}/approaches/check",
            json={"approach": "use redis", "subtask": "cache"},
            headers=agent.headers,
        )
    # the memory is neither erased nor lifted, and the refused check counted no refusal
    assert history.status_code == 200, history.text
    versions = history.json()["versions"]
    assert [(v["active"], v["scope_key"]) for v in versions] == [(True, f"project:{org}/{project}")]
    assert check.status_code == 200 and check.json()["refusals"] == 1, check.text


async def test_erase_memory_refuses_unknown_query_parameters_and_erases_nothing(
    url: str, engine: AsyncEngine
) -> None:
    """`DELETE /v1/memories/{id}?dryrun=true` erased for real: the parameter is `dry_run`."""
    org, project = new_tenant()
    human = await make_actor(engine, ActorType.HUMAN, org, project)
    async with engine.begin() as conn:
        task = await new_task(conn, org=org, project=project)
        memory = await add_memory(conn, task, title="Queue", content="queue.backend: redis", embedding=None)
    path = f"/v1/memories/{memory['citation']}"
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        answer = await http.delete(path, params={"dryrun": "true"}, headers=human.headers)
        shown = await http.get(path, headers=human.headers)
        dry = await http.delete(path, params={"dry_run": "true"}, headers=human.headers)
    assert answer.status_code == 422, answer.text
    detail = answer.json()["detail"]
    assert "unknown query parameter 'dryrun'" in detail and "dry_run" in detail, detail
    assert shown.status_code == 200, shown.text
    assert dry.status_code == 200 and dry.json()["dry_run"] is True, dry.text


async def test_every_route_refuses_a_query_parameter_it_does_not_take(url: str, engine: AsyncEngine) -> None:
    """`GET /v1/memories?limt=1` answered a full page, `?min_trsut=0.9` every memory: a typo'd filter was
    dropped without a word. Now any API route answers 422 naming the parameter and those it takes."""
    org, project = new_tenant()
    human = await make_actor(engine, ActorType.HUMAN, org, project)
    async with engine.begin() as conn:
        task = await new_task(conn, org=org, project=project)
        memory = await add_memory(conn, task, title="Queue", content="queue.backend: redis", embedding=None)
    citation = memory["citation"]
    scope = {"scope_key": task.key(Scope.PROJECT)}
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        listed = await http.get("/v1/memories", params=scope | {"limt": "1"}, headers=human.headers)
        trust = await http.get("/v1/memories", params=scope | {"min_trsut": "0.9"}, headers=human.headers)
        taken = await http.get("/v1/memories", params=scope | {"limit": "1"}, headers=human.headers)
        search = await http.post(
            "/v1/search",
            params={"as_of": "2020-01-01"},
            json={"query": "queue", "task_id": task.task_id},
            headers=human.headers,
        )
        retire = await http.post(
            f"/v1/memories/{citation}/retire",
            params={"force": "true"},
            json={"reason": "typo test"},
            headers=human.headers,
        )
        shown = await http.get(f"/v1/memories/{citation}", headers=human.headers)
        health = await http.get("/healthz", params={"verbose": "1"})
    assert listed.status_code == 422, listed.text
    detail = listed.json()["detail"]
    assert detail.startswith("unknown query parameter 'limt': GET /v1/memories takes "), detail
    assert "limit" in detail and "nothing was done" in detail, detail
    assert trust.status_code == 422 and "'min_trsut'" in trust.json()["detail"], trust.text
    assert taken.status_code == 200 and taken.json()["limit"] == 1, taken.text
    assert search.status_code == 422, search.text
    assert search.json()["detail"].endswith("POST /v1/search takes compact (see /docs); nothing was done")
    assert retire.status_code == 422 and "'force'" in retire.json()["detail"], retire.text
    assert shown.status_code == 200 and shown.json()["memory"]["deprecated_at"] is None, shown.text
    # a load balancer's probe is not refused for what it appends
    assert health.status_code == 200, health.text
