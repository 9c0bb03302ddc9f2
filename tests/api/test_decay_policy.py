"""PUT /v1/memories/{ref}/decay-policy: an approver sets `manual_only`; the nightly decay leaves it be."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType
from governance.storage.retention import decay_confidences
from tests.utils.factories import make_actor, new_tenant
from tests.utils.memory_factories import add_memory, new_task


async def _world(engine: AsyncEngine) -> tuple[dict[str, str], dict[str, str], dict[str, str], str]:
    org, project = new_tenant()
    human = await make_actor(engine, ActorType.HUMAN, org, project)
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    old = datetime.now(UTC) - timedelta(days=300)
    async with engine.begin() as conn:
        task = await new_task(conn, org=org, project=project)
        memory = await add_memory(
            conn, task, title="Pin pgserver", content="pin it", embedding=None, confidence=0.9, created_at=old
        )
    return human.headers, agent.headers, memory, org


async def test_approver_sets_manual_only_and_decay_skips_it(engine: AsyncEngine, gateway_url: str) -> None:
    human, _, memory, org = await _world(engine)
    path = f"/v1/memories/{memory['citation']}/decay-policy"
    async with httpx.AsyncClient(base_url=gateway_url, headers=human) as http:
        first = await http.put(path, json={"decay_policy": "manual_only", "reason": "a law, not a habit"})
        again = await http.put(path, json={"decay_policy": "manual_only"})
        shown = await http.get(f"/v1/memories/{memory['citation']}")
    assert first.status_code == 200, first.text
    assert first.json()["changed"] is True and again.json()["changed"] is False
    assert shown.json()["memory"]["decay_policy"] == "manual_only"
    async with engine.begin() as conn:
        await decay_confidences(conn, now=datetime.now(UTC), dry_run=False, orgs=[org])
        confidence = (
            await conn.execute(text("SELECT confidence FROM memories WHERE id = :id"), {"id": memory["id"]})
        ).scalar_one()
        events = (
            await conn.execute(
                text(
                    "SELECT payload FROM memory_events WHERE memory_id = :id AND event_type = 'DECAY_POLICY'"
                ),
                {"id": memory["id"]},
            )
        ).all()
    assert confidence == 0.9
    assert [e.payload for e in events] == [{"from": "stable", "to": "manual_only"}]


async def test_agent_may_not_set_a_decay_policy(engine: AsyncEngine, gateway_url: str) -> None:
    _, agent, memory, _ = await _world(engine)
    async with httpx.AsyncClient(base_url=gateway_url, headers=agent) as http:
        refused = await http.put(
            f"/v1/memories/{memory['id']}/decay-policy", json={"decay_policy": "manual_only"}
        )
    assert refused.status_code == 403 and refused.json()["error"] == "forbidden"


async def test_unknown_decay_policy_is_422(engine: AsyncEngine, gateway_url: str) -> None:
    human, _, memory, _ = await _world(engine)
    async with httpx.AsyncClient(base_url=gateway_url, headers=human) as http:
        refused = await http.put(
            f"/v1/memories/{memory['id']}/decay-policy", json={"decay_policy": "forever"}
        )
    assert refused.status_code == 422 and "decay_policy" in refused.json()["detail"]
