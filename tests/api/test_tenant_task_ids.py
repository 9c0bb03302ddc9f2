"""Task ids belong to their tenant (the org): two orgs may both open a task `t-1`.

Before, task ids were global: another org's `POST /v1/tasks` with an existing id answered 409 "already
exists" — an existence oracle across tenants, and a way to squat the ids another tenant will use. Now each
org has its own namespace: both opens answer 201, each tenant appends to, promotes and reads only its own
task (HTTP and gRPC), and the 409 still answers a second open with other attributes inside one tenant.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.config import Settings
from governance.scopes import ActorType
from governance.staging import task_key
from governance.storage.tables import memories, staging_entries, tasks
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.grpc_gateway import bearer, grpc_gateway, pb2
from tests.utils.promotion_gateway import wait_promotion_state
from workflows.promotion_contract import workflow_id_for


async def _tenant(engine: AsyncEngine) -> dict[str, Actor]:
    org, project = new_tenant()
    return {
        "orchestrator": await make_actor(engine, ActorType.ORCHESTRATOR, org, project),
        "agent": await make_actor(engine, ActorType.AGENT, org, project),
    }


def _open_body(actor: Actor, task_id: str, description: str = "same id, another tenant") -> dict[str, Any]:
    return {
        "org": actor.principal.org,
        "project": actor.principal.project,
        "worktree": "main",
        "description": description,
        "task_id": task_id,
    }


async def _entries(http: httpx.AsyncClient, actor: Actor, task_id: str) -> list[str]:
    r = await http.get(f"/v1/tasks/{task_id}/entries", headers=actor.headers)
    assert r.status_code == 200, r.text
    assert r.json()["task_id"] == task_id
    return [e["content"] for e in r.json()["entries"]]


async def test_tenant_task_ids_two_orgs_open_append_promote_and_read_their_own(
    http: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    """Both 201 over HTTP; each appends, promotes (task scope) and reads only its own task and memory."""
    task_id = f"t-{uuid.uuid4().hex[:10]}"
    a, b = await _tenant(engine), await _tenant(engine)
    for team in (a, b):
        opened = await http.post(
            "/v1/tasks", headers=team["orchestrator"].headers, json=_open_body(team["orchestrator"], task_id)
        )
        assert opened.status_code == 201, opened.text
        assert opened.json()["task_id"] == task_id
        assert opened.json()["org"] == team["agent"].principal.org
    for team, driver in ((a, "asyncpg"), (b, "psycopg")):
        entry = {"kind": "decision", "content": f"db.driver: {driver}", "payload": {"key": "db.driver"}}
        appended = await http.post(
            f"/v1/tasks/{task_id}/entries", headers=team["agent"].headers, json={"entries": [entry]}
        )
        assert appended.status_code == 201 and appended.json()["task_id"] == task_id, appended.text
    assert await _entries(http, a["agent"], task_id) == ["db.driver: asyncpg"]
    assert await _entries(http, b["agent"], task_id) == ["db.driver: psycopg"]

    workflow_ids = set()
    for team in (a, b):
        started = await http.post(
            f"/v1/tasks/{task_id}/promotion",
            headers=team["orchestrator"].headers,
            json={"target_scope": "task", "verification": {"source": "tests_passed", "success": True}},
        )
        assert started.status_code == 202, started.text
        # a promotion of its own, not the other tenant's running one
        assert started.json()["created"] is True and started.json()["task_id"] == task_id
        assert started.json()["workflow_id"] == workflow_id_for(
            task_key(team["agent"].principal.org, task_id)
        )
        workflow_ids.add(started.json()["workflow_id"])
    assert len(workflow_ids) == 2
    for team, driver in ((a, "asyncpg"), (b, "psycopg")):
        done = await wait_promotion_state(http, team["agent"].headers, task_id, "published")
        assert done["task_id"] == task_id and done["published"]
        found = await http.post(
            "/v1/search",
            headers=team["agent"].headers,
            json={"query": "which db driver", "task_id": task_id, "k": 10},
        )
        assert found.status_code == 200, found.text
        contents = " ".join(h["content"] for h in found.json()["results"])
        assert driver in contents and ({"asyncpg", "psycopg"} - {driver}).pop() not in contents
        memory = await http.get(
            f"/v1/memories/{found.json()['results'][0]['id']}", headers=team["agent"].headers
        )
        assert memory.status_code == 200, memory.text
        assert memory.json()["memory"]["source_task_ids"] == [task_id]
        assert [e["task_id"] for e in memory.json()["provenance"]] == [task_id]
        listed = await http.get(
            "/v1/memories", headers=team["agent"].headers, params={"scope_key": f"task:{task_id}"}
        )
        assert listed.status_code == 200, listed.text
        assert [m["title"] for m in listed.json()["memories"]]
        assert all(
            m["scope_key"] == f"task:{task_key(team['agent'].principal.org, task_id)}"
            for m in listed.json()["memories"]
        )
    async with engine.connect() as conn:
        keys = {
            r.id: r.org
            for r in await conn.execute(select(tasks.c.id, tasks.c.org).where(tasks.c.public_id == task_id))
        }
        scope_keys = {
            r.scope_key
            for r in await conn.execute(
                select(memories.c.scope_key).where(memories.c.source_task_ids.overlap(list(keys)))
            )
        }
    assert set(keys.values()) == {a["agent"].principal.org, b["agent"].principal.org}
    assert scope_keys == {f"task:{key}" for key in keys}


async def test_tenant_task_ids_within_one_tenant_conflict_still_answers(
    gateway_url: str, engine: AsyncEngine
) -> None:
    """Same id again in the same org: identical attributes return it (200), others are a 409."""
    team = await _tenant(engine)
    orchestrator = team["orchestrator"]
    task_id = f"t-{uuid.uuid4().hex[:10]}"
    async with httpx.AsyncClient(base_url=gateway_url, timeout=30) as http:
        first = await http.post(
            "/v1/tasks", headers=orchestrator.headers, json=_open_body(orchestrator, task_id)
        )
        again = await http.post(
            "/v1/tasks", headers=orchestrator.headers, json=_open_body(orchestrator, task_id)
        )
        other = await http.post(
            "/v1/tasks", headers=orchestrator.headers, json=_open_body(orchestrator, task_id, "another task")
        )
    assert (first.status_code, again.status_code) == (201, 200), (first.text, again.text)
    assert other.status_code == 409, other.text
    assert other.json() == {
        "error": "conflict",
        "detail": f"task {task_id!r} already exists with different attributes",
    }


async def test_tenant_task_ids_no_oracle_across_tenants(gateway_url: str, engine: AsyncEngine) -> None:
    """Another org's id answers exactly as a free id does: 201, its own task, nothing of the first."""
    owner, stranger = await _tenant(engine), await _tenant(engine)
    taken, free = f"t-{uuid.uuid4().hex[:10]}", f"t-{uuid.uuid4().hex[:10]}"
    async with httpx.AsyncClient(base_url=gateway_url, timeout=30) as http:
        first = await http.post(
            "/v1/tasks",
            headers=owner["orchestrator"].headers,
            json=_open_body(owner["orchestrator"], taken, "the owner's secret plan"),
        )
        assert first.status_code == 201, first.text
        await http.post(
            f"/v1/tasks/{taken}/entries",
            headers=owner["agent"].headers,
            json={"entries": [{"kind": "fact", "content": "owner's staging"}]},
        )
        answers = [
            await http.post(
                "/v1/tasks",
                headers=stranger["orchestrator"].headers,
                json=_open_body(stranger["orchestrator"], i),
            )
            for i in (taken, free)
        ]
        assert [r.status_code for r in answers] == [201, 201], [r.text for r in answers]
        bodies = [{k: v for k, v in r.json().items() if k not in ("task_id", "created_at")} for r in answers]
        assert bodies[0] == bodies[1]
        assert answers[0].json()["description"] == "same id, another tenant"
        # the stranger reads its own (empty) task under that id, never the owner's
        assert await _entries(http, stranger["agent"], taken) == []
        shown = await http.get(f"/v1/tasks/{taken}", headers=stranger["agent"].headers)
        assert shown.json()["org"] == stranger["agent"].principal.org
        # and the owner's key, spelt out, is still no way in for the stranger
        key = task_key(owner["agent"].principal.org, taken)
        peek = await http.post(
            "/v1/search", headers=stranger["agent"].headers, json={"query": "plan", "task_id": key}
        )
        assert peek.status_code == 404 and peek.json()["detail"] == f"task {key!r} does not exist"
    assert await _entries_in_db(engine, task_key(owner["agent"].principal.org, taken)) == ["owner's staging"]


async def _entries_in_db(engine: AsyncEngine, key: str) -> list[str]:
    async with engine.connect() as conn:
        rows = await conn.execute(select(staging_entries.c.content).where(staging_entries.c.task_id == key))
        return [r.content for r in rows]


async def test_tenant_task_ids_grpc_two_orgs_open_append_promote_and_read_their_own(
    http: httpx.AsyncClient, engine: AsyncEngine, promo_settings: Settings
) -> None:
    """The same over gRPC: both OpenTask calls create; each tenant appends, promotes and reads its own."""
    task_id = f"t-{uuid.uuid4().hex[:10]}"
    a, b = await _tenant(engine), await _tenant(engine)
    texts = {
        id(a): "cache.ttl: 60 seconds in the quokka service",
        id(b): "cache.ttl: 5 seconds in the wombat service",
    }
    marks = {id(a): "quokka", id(b): "wombat"}
    async with grpc_gateway(promo_settings) as stub:
        for team in (a, b):
            principal = team["orchestrator"].principal
            task = await stub.OpenTask(
                pb2.OpenTaskRequest(
                    org=principal.org,
                    project=principal.project,
                    worktree="main",
                    description="grpc, same id",
                    task_id=task_id,
                ),
                metadata=bearer(team["orchestrator"].key),
            )
            assert (task.task_id, task.org, task.created) == (task_id, principal.org, True)
        for team in (a, b):
            entry = pb2.Entry(kind="decision", content=texts[id(team)], payload_json='{"key": "cache.ttl"}')
            reply = await stub.AppendEntries(
                iter([pb2.AppendRequest(task_id=task_id, entries=[entry])]),
                metadata=bearer(team["agent"].key),
            )
            assert reply.task_id == task_id and len(reply.entries) == 1
            assert await _entries_in_db(engine, task_key(team["agent"].principal.org, task_id)) == [
                texts[id(team)]
            ]
        body = json.dumps(
            {"target_scope": "task", "verification": {"source": "tests_passed", "success": True}}
        )
        for team in (a, b):
            started = json.loads(
                (
                    await stub.StartPromotion(
                        pb2.TaskJsonRequest(task_id=task_id, json=body),
                        metadata=bearer(team["orchestrator"].key),
                    )
                ).json
            )
            assert started["created"] is True
            assert started["workflow_id"] == workflow_id_for(task_key(team["agent"].principal.org, task_id))
        for team in (a, b):
            await wait_promotion_state(http, team["agent"].headers, task_id, "published")
            status = json.loads(
                (
                    await stub.GetPromotion(
                        pb2.TaskRequest(task_id=task_id), metadata=bearer(team["agent"].key)
                    )
                ).json
            )
            assert status["task_id"] == task_id and status["state"] == "published"
            context = json.loads(
                (
                    await stub.Context(
                        pb2.JsonRequest(json=json.dumps({"query": "cache ttl", "task_id": task_id})),
                        metadata=bearer(team["agent"].key),
                    )
                ).json
            )["context"]
            other = marks[id(b if team is a else a)]
            assert marks[id(team)] in context and other not in context, context


# Which task `GET /v1/tasks/{id}` answers with, when orgs A and B both hold a task of that id (project p
# of each) and org C holds none: (caller, its org, its project, admin?) → the org whose task it reads, or
# the status it gets. Casbin's part (who may read a task of its own org) is tests/policy/test_truth_table.py;
# this is the gateway's part: an id names a task of the caller's own org only.
RESOLUTION = [
    ("agent of A, same project", "A", "p", False, "A"),
    ("agent of A, other project", "A", "q", False, 404),
    ("human of A, org-wide", "A", None, False, "A"),
    ("agent of B", "B", "p", False, "B"),
    ("agent of C (no such id)", "C", "p", False, 404),
    ("admin of A", "A", None, True, "A"),
    ("admin of C (the id is A's and B's)", "C", None, True, 409),
]


async def test_tenant_task_ids_resolution_truth_table(gateway_url: str, engine: AsyncEngine) -> None:
    task_id = f"t-{uuid.uuid4().hex[:10]}"
    orgs = {name: new_tenant()[0] for name in "ABC"}
    async with httpx.AsyncClient(base_url=gateway_url, timeout=30) as http:
        for name in "AB":
            opener = await make_actor(engine, ActorType.ORCHESTRATOR, orgs[name], "p")
            opened = await http.post("/v1/tasks", headers=opener.headers, json=_open_body(opener, task_id))
            assert opened.status_code == 201, opened.text
        for case, org, project, admin, expected in RESOLUTION:
            actor_type = ActorType.AGENT if project is not None else ActorType.HUMAN
            caller = await make_actor(engine, actor_type, orgs[org], project, is_admin=admin)
            answer = await http.get(f"/v1/tasks/{task_id}", headers=caller.headers)
            if isinstance(expected, int):
                assert answer.status_code == expected, (case, answer.text)
                if expected == 404:
                    assert answer.json()["detail"] == f"task {task_id!r} does not exist", case
                else:
                    assert "used in 2 tenants" in answer.json()["detail"], case
            else:
                assert answer.status_code == 200, (case, answer.text)
                assert (answer.json()["org"], answer.json()["task_id"]) == (orgs[expected], task_id), case


async def _two_orgs_with_one_task_id(
    http: httpx.AsyncClient, engine: AsyncEngine, task_id: str
) -> tuple[dict[str, Actor], dict[str, Actor]]:
    """Orgs A and B, each with a task `task_id` holding its own private note, and a human of each."""
    a, b = await _tenant(engine), await _tenant(engine)
    for team, text in ((a, "a's private note"), (b, "b's private note")):
        opened = await http.post(
            "/v1/tasks", headers=team["orchestrator"].headers, json=_open_body(team["orchestrator"], task_id)
        )
        assert opened.status_code == 201, opened.text
        appended = await http.post(
            f"/v1/tasks/{task_id}/entries",
            headers=team["agent"].headers,
            json={"entries": [{"kind": "log", "content": text}]},
        )
        assert appended.status_code == 201, appended.text
        team["human"] = await make_actor(
            engine, ActorType.HUMAN, team["agent"].principal.org, team["agent"].principal.project
        )
    return a, b


async def test_tenant_task_ids_erasure_takes_only_the_callers_task(
    http: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    """A human of A erasing task `t` takes A's staging of `t`; B's task `t` keeps all of its own."""
    task_id = f"t-{uuid.uuid4().hex[:10]}"
    a, b = await _two_orgs_with_one_task_id(http, engine, task_id)
    dry = await http.post("/v1/erasures", headers=b["human"].headers, json={"task": task_id, "dry_run": True})
    assert dry.status_code == 200, dry.text
    assert [e["task_id"] for e in dry.json()["staging_entries"]] == [task_id]
    erased = await http.post("/v1/erasures", headers=a["human"].headers, json={"task": task_id})
    assert erased.status_code == 200, erased.text
    assert [e["task_id"] for e in erased.json()["staging_entries"]] == [task_id]
    assert await _entries_in_db(engine, task_key(a["agent"].principal.org, task_id)) == []
    assert await _entries_in_db(engine, task_key(b["agent"].principal.org, task_id)) == ["b's private note"]
    assert await _entries(http, b["agent"], task_id) == ["b's private note"]


async def test_tenant_task_ids_an_admin_erases_one_orgs_task_by_its_key(
    http: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    """Where two orgs use one id, an admin of a third was told to name the task by its key, and the
    erasure's body refused the key: the 409's advice could not be followed."""
    task_id = f"t-{uuid.uuid4().hex[:10]}"
    a, b = await _two_orgs_with_one_task_id(http, engine, task_id)
    admin = await make_actor(engine, ActorType.HUMAN, new_tenant()[0], None, is_admin=True)
    dry = {"task": task_id, "dry_run": True}
    ambiguous = await http.post("/v1/erasures", headers=admin.headers, json=dry)
    assert ambiguous.status_code == 409 and "erasure's body" in ambiguous.json()["detail"], ambiguous.text
    b_org = b["agent"].principal.org
    erased = await http.post("/v1/erasures", headers=admin.headers, json={"task": f"{b_org}/{task_id}"})
    assert erased.status_code == 200, erased.text
    assert await _entries_in_db(engine, task_key(b_org, task_id)) == []
    assert await _entries_in_db(engine, task_key(a["agent"].principal.org, task_id)) == ["a's private note"]
    for bad in (f"/{task_id}", f"{b_org}/", f"a*b/{task_id}", f"{b_org}/{task_id}/x"):
        refused = await http.post("/v1/erasures", headers=admin.headers, json={"task": bad, "dry_run": True})
        assert refused.status_code == 422, (bad, refused.text)
