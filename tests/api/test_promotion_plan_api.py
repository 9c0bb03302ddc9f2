"""The promotion's plan over HTTP: served from the database, a page at a time, with full contents.

The workflow holds only the first plan items, shortened (its history must stay small); the gateway reads the
whole plan from Postgres: `GET /v1/promotions/{task_id}` shows its first page, `GET .../plan?offset=&limit=`
pages through it. Against a real gateway, a Temporal dev server and a worker with the real activities.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client

from api.client import AsyncLoregateClient
from governance.scopes import ActorType
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.promotion_factories import Entry, make_large_task
from tests.utils.promotion_gateway import staged_promotion, wait_promotion_state
from tests.utils.tenancy import task_key_of
from workflows.promotion_contract import Names, PromotionStatus, workflow_id_for

FACTS = 230
DISTINCT = 40
LONG = "db.pool: " + "the pool keeps twenty connections per worker and recycles them hourly; " * 7


async def _awaiting_approval(
    http: httpx.AsyncClient, engine: AsyncEngine
) -> tuple[str, dict[str, Actor], dict[str, Any]]:
    """A task of 231 staged facts (one long) waiting for approval into project scope."""
    org, project = new_tenant()
    team = {
        "orchestrator": await make_actor(engine, ActorType.ORCHESTRATOR, org, project),
        "agent": await make_actor(engine, ActorType.AGENT, org, project),
        "human": await make_actor(engine, ActorType.HUMAN, org, project),
        "outsider": await make_actor(engine, ActorType.HUMAN, *new_tenant()),
    }
    token = uuid.uuid4().hex[:6]
    entries = [Entry("fact", LONG)] + [
        Entry(
            "fact", f"Fact {i % DISTINCT} of {token}: shard {i % DISTINCT} lives in zone {i % DISTINCT % 7}."
        )
        for i in range(FACTS)
    ]
    task = await make_large_task(engine, org, project, entries)
    started = await http.post(
        f"/v1/tasks/{task.task_id}/promotion",
        headers=team["orchestrator"].headers,
        json={"target_scope": "project", "verification": {"source": "tests_passed", "success": True}},
    )
    assert started.status_code == 202, started.text
    status = await wait_promotion_state(http, team["human"].headers, task.task_id, "awaiting_approval")
    return task.task_id, team, status


async def test_promotion_plan_is_served_from_the_database_page_by_page(
    http: httpx.AsyncClient, engine: AsyncEngine, local_env: Any, gateway: str
) -> None:
    task_id, team, status = await _awaiting_approval(http, engine)
    total = FACTS + 2  # the facts, the long one and the episode
    assert status["plan_total"] == total and len(status["plan"]) == 100
    assert [p["index"] for p in status["plan"]] == list(range(100))
    assert status["plan"][0]["content"] == LONG  # full content, not the workflow's preview

    # the workflow itself holds the first 20 entries, shortened
    temporal: Client = local_env.client
    query: PromotionStatus = await temporal.get_workflow_handle(workflow_id_for(task_key_of(task_id))).query(
        Names.STATE, result_type=PromotionStatus
    )
    assert query.plan_total == total and len(query.plan) == 20
    # no title, no content: the texts stay in Postgres, so an erasure there leaves no copy in the history
    assert query.plan[0].content == "" and query.plan[0].title == "" and query.plan[0].memory_type

    pages: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        answer = await http.get(
            f"/v1/promotions/{task_id}/plan",
            headers=team["agent"].headers,  # `read` on the task is enough
            params={"offset": offset, "limit": 100},
        )
        assert answer.status_code == 200, answer.text
        pages.append(answer.json())
        offset = answer.json()["next_offset"]
    assert [len(p["items"]) for p in pages] == [100, 100, total - 200]
    assert all(p["total"] == total and p["task_id"] == task_id for p in pages)
    entries = [e for p in pages for e in p["items"]]
    assert [e["index"] for e in entries] == list(range(total))
    assert entries[:100] == status["plan"]
    assert {e["memory_type"] for e in entries} == {"fact", "episode"}

    beyond = await http.get(
        f"/v1/promotions/{task_id}/plan", headers=team["agent"].headers, params={"offset": total}
    )
    assert beyond.json() == {
        "task_id": task_id,
        "total": total,
        "offset": total,
        "limit": 100,
        "next_offset": None,
        "items": [],
    }
    for bad in ({"limit": 0}, {"limit": 1001}, {"offset": -1}):
        refused = await http.get(f"/v1/promotions/{task_id}/plan", headers=team["agent"].headers, params=bad)
        assert refused.status_code == 422, bad
    outsider = await http.get(f"/v1/promotions/{task_id}/plan", headers=team["outsider"].headers)
    assert outsider.status_code in (403, 404) and "items" not in outsider.json()

    # the Python client pages the same way
    async with AsyncLoregateClient(gateway, team["human"].key) as client:
        page = await client.promotion_plan(task_id, 200, 50)
        assert [e.index for e in page.items] == list(range(200, total))
        assert [e.index async for e in client.promotion_plan_all(task_id, page_size=64)] == list(range(total))

    approved = await http.post(f"/v1/promotions/{task_id}/approve", headers=team["human"].headers, json={})
    assert approved.status_code == 200, approved.text
    done = await wait_promotion_state(http, team["human"].headers, task_id, "published")
    assert done["published_total"] == total and len(done["published"]) == 100
    # the same plan, each item now showing its fate (the memory it published)
    fate = ("fate", "published_memory_id")
    assert done["plan_total"] == total
    assert [{k: v for k, v in p.items() if k not in fate} for p in done["plan"]] == [
        {k: v for k, v in p.items() if k not in fate} for p in status["plan"]
    ]
    assert {p["fate"] for p in done["plan"]} == {"published"} and all(
        p["published_memory_id"] for p in done["plan"]
    )


async def _promote_into_worktree(http: httpx.AsyncClient, team: dict[str, Actor], content: str) -> str:
    entry = {"kind": "decision", "content": content, "payload": {"key": "db.driver"}}
    task_id = await staged_promotion(http, team, "pick the db driver", [entry], "worktree")
    await wait_promotion_state(http, team["orchestrator"].headers, task_id, "published")
    return task_id


async def test_plan_shows_what_a_supersede_replaces(http: httpx.AsyncClient, team: dict[str, Actor]) -> None:
    await _promote_into_worktree(http, team, "db.driver: psycopg 3 with the async API")
    second = await _promote_into_worktree(http, team, "db.driver: asyncpg for the connection pool")
    answer = await http.get(f"/v1/promotions/{second}/plan", headers=team["human"].headers)
    assert answer.status_code == 200, answer.text
    superseding = [e for e in answer.json()["items"] if e["decision"] == "supersede"]
    assert len(superseding) == 1, answer.json()["items"]
    assert superseding[0]["content"] == "db.driver: asyncpg for the connection pool"
    assert superseding[0]["target_content"] == "db.driver: psycopg 3 with the async API"
    assert superseding[0]["target_title"]
    new = [e for e in answer.json()["items"] if e["decision"] == "new"]
    assert new and all(e["target_title"] is None and e["target_content"] is None for e in new)
