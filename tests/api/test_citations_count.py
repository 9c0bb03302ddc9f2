"""Citations are counted over real HTTP: per memory and task, used-by and most used, and only others' use
lifts a memory in ranking (an author citing its own memory counts for nothing there)."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import grpc
import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.config import Settings
from governance.scopes import ActorType, Scope
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.grpc_gateway import bearer, grpc_gateway, pb2
from tests.utils.memory_factories import add_memory, new_task

CONTENT = "db.driver: the billing service talks to Postgres through psycopg 3 with a pool of 10"


@pytest.fixture
async def client(gateway_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=gateway_url, timeout=60) as c:
        yield c


@pytest.fixture
async def world(engine: AsyncEngine) -> dict[str, Any]:
    """A project memory written by `author`, two other agents, an orchestrator, and a memory elsewhere."""
    org, project = new_tenant()
    author = await make_actor(engine, ActorType.AGENT, org, project)
    async with engine.begin() as conn:
        source = await new_task(conn, org=org, project=project, created_by=author.principal.id)
        memory = await add_memory(
            conn,
            source,
            title="Billing database driver",
            content=CONTENT,
            embedding=None,
            scope=Scope.PROJECT,
        )
        hidden = await add_memory(
            conn,
            await new_task(conn, org=org),
            title="Another project's driver",
            content=CONTENT,
            embedding=None,
            scope=Scope.PROJECT,
        )
    return {
        "author": author,
        "readers": [await make_actor(engine, ActorType.AGENT, org, project) for _ in range(2)],
        "orchestrator": await make_actor(engine, ActorType.ORCHESTRATOR, org, project),
        "citation": memory["citation"],
        "hidden": hidden["citation"],
    }


async def _task(client: httpx.AsyncClient, orchestrator: Actor) -> str:
    p = orchestrator.principal
    r = await client.post(
        "/v1/tasks",
        headers=orchestrator.headers,
        json={"org": p.org, "project": p.project, "worktree": "main", "description": "billing work"},
    )
    assert r.status_code == 201, r.text
    return str(r.json()["task_id"])


async def _cite_in_staging(client: httpx.AsyncClient, agent: Actor, task_id: str, citation: str) -> None:
    entry = {
        "kind": "decision",
        "content": f"Kept the driver as [mem:{citation}] says",
        "idempotency_key": f"cite-{task_id}-{agent.principal.id}",
    }
    for _ in range(2):  # a retried append counts once
        r = await client.post(
            f"/v1/tasks/{task_id}/entries", headers=agent.headers, json={"entries": [entry]}
        )
        assert r.status_code == 201, r.text


async def _used_by(client: httpx.AsyncClient, reader: Actor, citation: str) -> dict[str, Any]:
    r = await client.get(f"/v1/memories/{citation}/used-by", headers=reader.headers)
    assert r.status_code == 200, r.text
    answer: dict[str, Any] = r.json()
    return answer


async def _usefulness(client: httpx.AsyncClient, reader: Actor, task_id: str, citation: str) -> float:
    r = await client.post(
        "/v1/search",
        headers=reader.headers,
        json={"task_id": task_id, "query": "which driver does billing use for postgres", "k": 5},
    )
    assert r.status_code == 200, r.text
    [hit] = [h for h in r.json()["results"] if h["citation"] == citation]
    return float(hit["score_parts"]["usefulness"])


async def test_staging_citations_counted_per_task_used_by_and_most_used(
    client: httpx.AsyncClient, world: dict[str, Any]
) -> None:
    reader, _ = world["readers"]
    theirs = await _task(client, world["orchestrator"])
    authors = await _task(client, world["orchestrator"])

    await _cite_in_staging(client, reader, theirs, world["citation"])
    await _cite_in_staging(client, world["author"], authors, world["citation"])

    used = await _used_by(client, reader, world["citation"])
    by_task = {t["task_id"]: t for t in used["tasks"]}
    assert used["total_tasks"] == 2 and used["hidden_tasks"] == 0
    assert by_task[theirs]["uses"] == 1 and by_task[theirs]["independent"] is True
    assert by_task[theirs]["agents"] == [reader.principal.id]
    assert by_task[authors]["independent"] is False  # its author's own use
    r = await client.get("/v1/citations/most-used", headers=reader.headers, params={"task_id": theirs})
    assert r.status_code == 200, r.text
    [top] = r.json()["results"]
    assert top["citation"] == world["citation"]
    assert (top["tasks"], top["independent_tasks"], top["independent_principals"]) == (2, 1, 1)


async def test_declared_citations_count_once_and_unreadable_ones_stay_unknown(
    client: httpx.AsyncClient, world: dict[str, Any]
) -> None:
    reader, _ = world["readers"]
    task_id = await _task(client, world["orchestrator"])
    body = {"citations": [f"[mem:{world['citation']}]", world["hidden"], "nosuchmem"]}

    first = await client.post(f"/v1/tasks/{task_id}/citations", headers=reader.headers, json=body)
    again = await client.post(f"/v1/tasks/{task_id}/citations", headers=reader.headers, json=body)

    assert first.status_code == 201, first.text
    assert first.json()["counted"] == [{"citation": world["citation"], "independent": True, "new": True}]
    # another project's memory answers exactly as a citation nobody holds
    assert first.json()["unknown"] == [world["hidden"], "nosuchmem"]
    assert again.json()["counted"][0]["new"] is False
    assert (await _used_by(client, reader, world["citation"]))["tasks"][0]["uses"] == 1
    empty = await client.post(
        f"/v1/tasks/{task_id}/citations", headers=reader.headers, json={"citations": []}
    )
    assert empty.status_code == 422


async def test_independent_use_lifts_usefulness_and_the_authors_does_not(
    client: httpx.AsyncClient, world: dict[str, Any]
) -> None:
    citation = world["citation"]
    reader_task = await _task(client, world["orchestrator"])
    before = await _usefulness(client, world["readers"][0], reader_task, citation)
    for _ in range(3):  # an author citing its own memory, however often
        await client.post(
            f"/v1/tasks/{await _task(client, world['orchestrator'])}/citations",
            headers=world["author"].headers,
            json={"citations": [citation]},
        )
    after_author = await _usefulness(client, world["readers"][0], reader_task, citation)
    for reader in world["readers"]:
        await _cite_in_staging(client, reader, await _task(client, world["orchestrator"]), citation)
    after_others = await _usefulness(client, world["readers"][0], reader_task, citation)

    assert before == pytest.approx(0.5) and after_author == pytest.approx(before)
    # two independent principals close half of the share (0.5) of the distance to 1: 0.5 + 0.5 * 0.5 * 0.5
    assert after_others == pytest.approx(0.625)


async def test_used_by_counts_tasks_the_caller_may_not_read_without_naming_them(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    org = f"org-{uuid.uuid4().hex[:8]}"
    here, there = (f"proj-{uuid.uuid4().hex[:8]}" for _ in range(2))
    async with engine.begin() as conn:
        memory = await add_memory(
            conn,
            await new_task(conn, org=org, project=here),
            title="Org rule on time zones",
            content="Store timestamps in UTC everywhere",
            embedding=None,
            scope=Scope.ORG,
        )
    citation = memory["citation"]
    tasks = {}
    for project in (here, there):
        orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
        agent = await make_actor(engine, ActorType.AGENT, org, project)
        tasks[project] = (agent, await _task(client, orchestrator))
        r = await client.post(
            f"/v1/tasks/{tasks[project][1]}/citations", headers=agent.headers, json={"citations": [citation]}
        )
        assert r.status_code == 201 and r.json()["counted"], r.text

    used = await _used_by(client, tasks[here][0], citation)

    assert [t["task_id"] for t in used["tasks"]] == [tasks[here][1]]
    assert (used["total_tasks"], used["hidden_tasks"]) == (2, 1)
    outsider = await make_actor(engine, ActorType.AGENT, *new_tenant())
    r = await client.get(f"/v1/memories/{citation}/used-by", headers=outsider.headers)
    assert r.status_code == 404


async def test_grpc_citations_answer_as_over_http(
    settings: Settings, client: httpx.AsyncClient, world: dict[str, Any]
) -> None:
    reader, _ = world["readers"]
    task_id = await _task(client, world["orchestrator"])
    async with grpc_gateway(settings) as stub:
        reply = await stub.RecordCitations(
            pb2.TaskJsonRequest(task_id=task_id, json=json.dumps({"citations": [world["citation"]]})),
            metadata=bearer(reader.key),
        )
        used = await stub.MemoryUsedBy(
            pb2.MemoryJsonRequest(memory_id=world["citation"], json="{}"), metadata=bearer(reader.key)
        )
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.RecordCitations(
                pb2.TaskJsonRequest(task_id=task_id, json=json.dumps({"citations": []})),
                metadata=bearer(reader.key),
            )
    assert json.loads(reply.json)["counted"] == [
        {"citation": world["citation"], "independent": True, "new": True}
    ]
    assert [t["task_id"] for t in json.loads(used.json)["tasks"]] == [task_id]
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
