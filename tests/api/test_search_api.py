"""Search, context and citation resolution over real HTTP, real Postgres+pgvector and the real embedder."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.adapters.embedders import make_embedder
from governance.config import Settings
from governance.context_block import estimate_tokens
from governance.scopes import ActorType, Scope
from tests.utils.factories import make_actor, new_tenant
from tests.utils.memory_factories import add_entries, add_memory, new_task

MEMORIES = [
    (
        "project",
        "bug_pattern",
        "Webhook retries",
        "Stripe webhook handler times out; ack first, process in a queue",
    ),
    ("project", "fact", "Database driver", "The API talks to Postgres through psycopg 3 with a pool of 20"),
    ("org", "preference", "Formatter", "We prefer ruff format over black for all python repositories"),
    ("task", "episode", "Login fix", "Fixed the login redirect loop by clearing the stale session cookie"),
    ("project", "fact", "Deploy freeze", "Deploys are frozen during the quarterly audit window"),
]


@pytest.fixture(scope="module")
async def world(engine: AsyncEngine, settings: Settings) -> dict[str, Any]:
    """Tenant A: memories at several scopes and an agent; tenant B: a look-alike memory and an agent."""
    embedder = make_embedder(settings)
    vectors = embedder.embed_passages([f"{t}: {c}" for _, _, t, c in MEMORIES] + ["Stripe webhook times out"])
    org, project = new_tenant()
    org_b, project_b = new_tenant()
    async with engine.begin() as conn:
        task = await new_task(conn, org=org, project=project)
        task_b = await new_task(conn, org=org_b, project=project_b)
        entries = await add_entries(conn, task, ["webhook took 31 s", "queue + ack fixed it"])
        cites: dict[str, dict[str, str]] = {}
        for (scope, mtype, title, content), vector in zip(MEMORIES, vectors, strict=False):
            cites[title] = await add_memory(
                conn,
                task,
                title=title,
                content=content,
                embedding=vector,
                memory_type=mtype,
                scope=Scope(scope),
                source_entry_ids=entries if title == "Webhook retries" else (),
            )
        cites["expired"] = await add_memory(
            conn,
            task,
            title="Old freeze",
            content="Deploys are frozen until the migration ends",
            embedding=vectors[4],
            expires_at=datetime.now(UTC) - timedelta(hours=1),
        )
        cites["b"] = await add_memory(
            conn,
            task_b,
            title="B webhook",
            content="Stripe webhook times out",
            embedding=vectors[-1],
            memory_type="bug_pattern",
        )
    return {
        "task": task,
        "task_b": task_b,
        "cites": cites,
        "agent": await make_actor(engine, ActorType.AGENT, org, project),
        "agent_b": await make_actor(engine, ActorType.AGENT, org_b, project_b),
    }


async def post(url: str, path: str, actor: Any, body: dict[str, Any]) -> httpx.Response:
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        return await client.post(path, json=body, headers=actor.headers)


async def test_search_returns_score_parts_and_citations(gateway_url: str, world: dict[str, Any]) -> None:
    r = await post(
        gateway_url,
        "/v1/search",
        world["agent"],
        {"query": "stripe webhook timeout", "task_id": world["task"].task_id, "k": 3, "intent": "general"},
    )
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert results[0]["citation"] == world["cites"]["Webhook retries"]["citation"]
    parts = results[0]["score_parts"]
    assert results[0]["score"] == pytest.approx(
        parts["type_weight"] * parts["similarity"]
        + 0.015 * parts["recency"]
        + 0.015 * parts["importance"]
        + 0.02 * parts["usefulness"]
    )
    assert len(results) <= 3


async def test_search_compact_returns_only_citation_title_type_score(
    gateway_url: str, world: dict[str, Any]
) -> None:
    r = await post(
        gateway_url,
        "/v1/search?compact=true",
        world["agent"],
        {"query": "stripe webhook timeout", "task_id": world["task"].task_id, "intent": "general"},
    )
    assert r.status_code == 200, r.text
    assert r.json()["results"]
    assert all(set(item) == {"citation", "title", "type", "score"} for item in r.json()["results"])


async def test_search_never_shows_another_projects_memories(gateway_url: str, world: dict[str, Any]) -> None:
    r = await post(
        gateway_url,
        "/v1/search",
        world["agent"],
        {"query": "Stripe webhook times out", "task_id": world["task"].task_id, "k": 20, "intent": "general"},
    )
    found = {item["citation"] for item in r.json()["results"]}
    assert world["cites"]["b"]["citation"] not in found
    assert world["cites"]["expired"]["citation"] not in found
    assert {world["cites"][t]["citation"] for t in ("Formatter", "Login fix")} <= found


async def test_search_with_another_tenants_task_is_not_found(gateway_url: str, world: dict[str, Any]) -> None:
    r = await post(
        gateway_url, "/v1/search", world["agent_b"], {"query": "webhook", "task_id": world["task"].task_id}
    )
    assert r.status_code == 404
    assert r.json() == {"error": "not_found", "detail": f"task {world['task'].task_id!r} does not exist"}


async def test_search_unknown_task_is_not_found(gateway_url: str, world: dict[str, Any]) -> None:
    r = await post(gateway_url, "/v1/search", world["agent"], {"query": "webhook", "task_id": "no-such-task"})
    assert r.status_code == 404
    assert r.json()["error"] == "not_found"


async def test_search_detected_intent_weights_types(gateway_url: str, world: dict[str, Any]) -> None:
    r = await post(
        gateway_url,
        "/v1/search",
        world["agent"],
        {"query": "which formatter do we prefer", "task_id": world["task"].task_id},
    )
    body = r.json()
    assert body["intent"] == "preference"
    assert body["types"] is None and body["preferred_types"] == ["code_rule", "preference"]
    assert body["results"][0]["type"] == "preference"
    assert len({item["type"] for item in body["results"]}) > 1  # a weight, not a filter


async def test_search_fact_answers_whatever_the_detected_intent(
    gateway_url: str, world: dict[str, Any]
) -> None:
    # "when did" reads as recall (episodes), "who is responsible" as profile: the facts answer both
    for query in ("when did we freeze deploys for the audit", "who is responsible for the deploy freeze"):
        r = await post(
            gateway_url, "/v1/search", world["agent"], {"query": query, "task_id": world["task"].task_id}
        )
        body = r.json()
        assert body["intent"] in {"recall", "profile"} and "widened" not in body
        assert body["results"][0]["title"] == "Deploy freeze"
        assert body["results"][0]["score_parts"]["type_weight"] < 1.0


async def test_search_explicit_intent_is_a_strong_weight(gateway_url: str, world: dict[str, Any]) -> None:
    r = await post(
        gateway_url,
        "/v1/search",
        world["agent"],
        {"query": "deploy freeze", "task_id": world["task"].task_id, "intent": "recall", "k": 10},
    )
    results = r.json()["results"]
    assert results[0]["type"] == "episode"
    assert "Deploy freeze" in [item["title"] for item in results]


async def test_search_asked_for_types_never_widen(gateway_url: str, world: dict[str, Any]) -> None:
    r = await post(
        gateway_url,
        "/v1/search",
        world["agent"],
        {"query": "deploy freeze", "task_id": world["task"].task_id, "types": ["profile"]},
    )
    assert r.status_code == 200
    assert r.json()["results"] == [] and "widened" not in r.json()


async def test_search_k_over_limit_is_rejected(gateway_url: str, world: dict[str, Any]) -> None:
    r = await post(
        gateway_url,
        "/v1/search",
        world["agent"],
        {"query": "webhook", "task_id": world["task"].task_id, "k": 10_000},
    )
    assert r.status_code == 422
    assert r.json()["error"] == "validation_error" and "k" in r.json()["detail"]


async def test_search_raises_retrieval_count(
    gateway_url: str, world: dict[str, Any], engine: AsyncEngine
) -> None:
    memory_id = world["cites"]["Deploy freeze"]["id"]

    async def count() -> int:
        async with engine.connect() as conn:
            return int(
                (
                    await conn.execute(
                        text("SELECT retrieval_count FROM memories WHERE id = CAST(:id AS uuid)"),
                        {"id": memory_id},
                    )
                ).scalar_one()
            )

    before = await count()
    r = await post(
        gateway_url,
        "/v1/search",
        world["agent"],
        {
            "query": "quarterly audit deploy freeze",
            "task_id": world["task"].task_id,
            "k": 1,
            "intent": "general",
        },
    )
    assert r.json()["results"][0]["id"] == memory_id
    for _ in range(50):  # counted by a background task after the response
        if await count() == before + 1:
            break
        await asyncio.sleep(0.05)
    assert await count() == before + 1


async def test_context_block_has_citations_within_budget(gateway_url: str, world: dict[str, Any]) -> None:
    r = await post(
        gateway_url,
        "/v1/context",
        world["agent"],
        {
            "query": "what do we know about webhooks, deploys and the database",
            "task_id": world["task"].task_id,
            "max_tokens": 150,
            "intent": "general",
        },
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["context"].startswith("[MEMORY CONTEXT]")
    assert estimate_tokens(body["context"]) == body["tokens"] <= 150
    assert body["citations"] and all(f"[mem:{c}]" in body["context"] for c in body["citations"])
    assert world["cites"]["b"]["citation"] not in body["citations"]


async def test_memory_by_citation_has_provenance(gateway_url: str, world: dict[str, Any]) -> None:
    cite = world["cites"]["Webhook retries"]["citation"]
    async with httpx.AsyncClient(base_url=gateway_url) as client:
        r = await client.get(f"/v1/memories/mem:{cite}", headers=world["agent"].headers)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["memory"]["citation"] == cite
    assert [e["content"] for e in body["provenance"]] == ["webhook took 31 s", "queue + ack fixed it"]
    assert body["history"][0]["is_this"] is True


async def test_memory_of_another_tenant_is_not_found(gateway_url: str, world: dict[str, Any]) -> None:
    async with httpx.AsyncClient(base_url=gateway_url) as client:
        other = await client.get(
            f"/v1/memories/{world['cites']['b']['citation']}", headers=world["agent"].headers
        )
        unknown = await client.get("/v1/memories/mem:zzzzzzzz", headers=world["agent"].headers)
    assert other.status_code == unknown.status_code == 404


async def test_org_memory_is_readable_by_project_reader(gateway_url: str, world: dict[str, Any]) -> None:
    async with httpx.AsyncClient(base_url=gateway_url) as client:
        r = await client.get(
            f"/v1/memories/{world['cites']['Formatter']['id']}", headers=world["agent"].headers
        )
    assert r.status_code == 200
    assert r.json()["memory"]["scope"] == "org"
