"""Validate, feedback, supersede, retire and history over real HTTP, with real Casbin decisions."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.lifecycle_factories import Place, insert_memory


@pytest.fixture
async def tenant(engine: AsyncEngine) -> dict[str, Actor | Place]:
    org, project = new_tenant()
    place = Place(org=org, project=project, worktree="main", task_id=f"task-{project}")
    return {
        "place": place,
        "human": await make_actor(engine, ActorType.HUMAN, org, project),
        "agent": await make_actor(engine, ActorType.AGENT, org, project),
        "orchestrator": await make_actor(engine, ActorType.ORCHESTRATOR, org, project),
    }


async def _memory(engine: AsyncEngine, place: Place, **columns: object) -> str:
    async with engine.begin() as conn:
        return await insert_memory(conn, place, memory_type="fact", **columns)


async def test_validate_boosts_by_source_and_caps(
    gateway_url: str, engine: AsyncEngine, tenant: dict
) -> None:
    mid = await _memory(engine, tenant["place"])
    async with httpx.AsyncClient(base_url=gateway_url) as client:
        r = await client.post(
            f"/v1/memories/{mid}/validate",
            json={"source": "tests_passed"},
            headers=tenant["orchestrator"].headers,
        )
        # one non-human's evidence stops at the unreviewed ceiling (0.6 + 0.2 -> 0.75)
        assert r.status_code == 200 and r.json()["confidence"] == pytest.approx(0.75)
        r = await client.post(
            f"/v1/memories/{mid}/validate", json={"source": "human_approved"}, headers=tenant["human"].headers
        )
        assert r.status_code == 200 and r.json()["confidence"] == 1.0


async def test_validate_human_approved_denied_to_agent(
    gateway_url: str, engine: AsyncEngine, tenant: dict
) -> None:
    mid = await _memory(engine, tenant["place"])
    async with httpx.AsyncClient(base_url=gateway_url) as client:
        r = await client.post(
            f"/v1/memories/{mid}/validate", json={"source": "human_approved"}, headers=tenant["agent"].headers
        )
    assert r.status_code == 403 and r.json()["error"] == "forbidden"


async def test_feedback_updates_usefulness_by_citation(
    gateway_url: str, engine: AsyncEngine, tenant: dict
) -> None:
    mid = await _memory(engine, tenant["place"])
    async with httpx.AsyncClient(base_url=gateway_url) as client:
        cite = (await client.get(f"/v1/memories/{mid}/history", headers=tenant["agent"].headers)).json()
        citation = cite["versions"][0]["citation"]
        r = await client.post(
            f"/v1/memories/{citation}/feedback", json={"helpful": True}, headers=tenant["agent"].headers
        )
    assert r.status_code == 200 and r.json()["usefulness"] == pytest.approx(0.65)


async def test_supersede_then_history_and_non_head_conflict(
    gateway_url: str, engine: AsyncEngine, tenant: dict
) -> None:
    mid = await _memory(
        engine, tenant["place"], canonical_key="db.driver", content="The driver is psycopg 3."
    )
    human = tenant["human"].headers
    async with httpx.AsyncClient(base_url=gateway_url, timeout=30) as client:
        r = await client.post(
            f"/v1/memories/{mid}/supersede",
            headers=human,
            json={"content": "The driver is asyncpg.", "reason": "switched for speed"},
        )
        assert r.status_code == 201, r.text
        new = r.json()
        history = (await client.get(f"/v1/memories/{new['citation']}/history", headers=human)).json()
        again = await client.post(
            f"/v1/memories/{mid}/supersede",
            headers=human,
            json={"content": "The driver is pg8000.", "reason": "x"},
        )
    assert [v["id"] for v in history["versions"]] == [mid, new["id"]]
    assert [v["active"] for v in history["versions"]] == [False, True]
    assert history["versions"][0]["contradiction_note"] == "switched for speed"
    assert again.status_code == 409 and again.json()["error"] == "conflict"


async def test_retire_then_retire_again_conflicts(
    gateway_url: str, engine: AsyncEngine, tenant: dict
) -> None:
    mid = await _memory(engine, tenant["place"])
    async with httpx.AsyncClient(base_url=gateway_url) as client:
        first = await client.post(
            f"/v1/memories/{mid}/retire", json={"reason": "obsolete"}, headers=tenant["human"].headers
        )
        second = await client.post(
            f"/v1/memories/{mid}/retire", json={"reason": "obsolete"}, headers=tenant["human"].headers
        )
    assert first.status_code == 200 and second.status_code == 409


async def test_other_tenant_cannot_touch_memory(gateway_url: str, engine: AsyncEngine, tenant: dict) -> None:
    """Not a 403 naming the tenant: for an outsider the memory does not exist."""
    mid = await _memory(engine, tenant["place"])
    org, project = new_tenant()
    stranger = await make_actor(engine, ActorType.HUMAN, org, project)
    async with httpx.AsyncClient(base_url=gateway_url) as client:
        r = await client.post(
            f"/v1/memories/{mid}/retire", json={"reason": "mine now"}, headers=stranger.headers
        )
    assert r.status_code == 404 and r.json()["detail"] == f"memory {mid!r} does not exist"


async def test_unknown_memory_is_404(gateway_url: str, tenant: dict) -> None:
    async with httpx.AsyncClient(base_url=gateway_url) as client:
        r = await client.get("/v1/memories/zzzzzzzzzz/history", headers=tenant["human"].headers)
    assert r.status_code == 404 and r.json()["error"] == "not_found"
