"""Trust cannot be spammed by one key, over real HTTP with real Postgres.

A principal's repeated validation of a memory with the same source counts once (`counted` false after);
feedback is one vote per principal, its latest, and usefulness is computed from the votes
(governance/trust.py `usefulness_from_votes`), so repeating a vote moves nothing while many principals'
votes, also when they arrive in parallel, all count.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType
from governance.trust import ema, usefulness_from_votes
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.lifecycle_factories import Place, insert_memory


@pytest.fixture
async def place() -> Place:
    org, project = new_tenant()
    return Place(org=org, project=project, worktree="main", task_id=f"task-{project}")


async def _memory(engine: AsyncEngine, place: Place, **columns: object) -> str:
    async with engine.begin() as conn:
        return await insert_memory(conn, place, memory_type="fact", **columns)


async def _shown(client: httpx.AsyncClient, actor: Actor, memory_id: str) -> dict[str, object]:
    r = await client.get(f"/v1/memories/{memory_id}", headers=actor.headers)
    assert r.status_code == 200, r.text
    memory: dict[str, object] = r.json()["memory"]
    return memory


def test_usefulness_from_votes_starts_like_one_ema_step_and_stays_inside_0_1() -> None:
    assert usefulness_from_votes(0, 0) == 0.5
    assert usefulness_from_votes(1, 1) == pytest.approx(ema(0.5, True))
    assert usefulness_from_votes(0, 1) == pytest.approx(ema(0.5, False))
    assert 0.0 < usefulness_from_votes(0, 10_000) < usefulness_from_votes(10_000, 10_000) < 1.0
    with pytest.raises(ValueError):
        usefulness_from_votes(2, 1)


async def test_repeated_validation_by_one_key_counts_once(
    gateway_url: str, engine: AsyncEngine, place: Place
) -> None:
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, place.org, place.project)
    other = await make_actor(engine, ActorType.ORCHESTRATOR, place.org, place.project)
    memory_id = await _memory(engine, place, confidence=0.8)
    url = f"/v1/memories/{memory_id}/validate"
    async with httpx.AsyncClient(base_url=gateway_url, timeout=30) as client:
        answers = [
            await client.post(url, json={"source": "repeated_success"}, headers=orchestrator.headers)
            for _ in range(10)
        ]
        assert [a.status_code for a in answers] == [200] * 10
        assert [a.json()["counted"] for a in answers] == [True] + [False] * 9
        # one principal's evidence never lifts a memory past the unreviewed ceiling (nor lowers it)
        assert [a.json()["confidence"] for a in answers] == pytest.approx([0.8] * 10)
        shown = await _shown(client, orchestrator, memory_id)
        assert shown["confidence"] == pytest.approx(0.8) and shown["validation_count"] == 1

        # another source by the same principal is other evidence, but still one principal's
        tests = await client.post(url, json={"source": "tests_passed"}, headers=orchestrator.headers)
        assert tests.json()["counted"] is True and tests.json()["confidence"] == pytest.approx(0.8)
        # a second independent principal confirms it: past the ceiling
        theirs = await client.post(url, json={"source": "repeated_success"}, headers=other.headers)
        assert theirs.json()["counted"] is True and theirs.json()["confidence"] == pytest.approx(0.95)
        assert (await _shown(client, orchestrator, memory_id))["validation_count"] == 3


async def test_parallel_repeats_of_one_validation_count_once(
    gateway_url: str, engine: AsyncEngine, place: Place
) -> None:
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, place.org, place.project)
    memory_id = await _memory(engine, place)
    async with httpx.AsyncClient(base_url=gateway_url, timeout=60) as client:
        answers = await asyncio.gather(
            *(
                client.post(
                    f"/v1/memories/{memory_id}/validate",
                    json={"source": "repeated_success"},
                    headers=orchestrator.headers,
                )
                for _ in range(8)
            )
        )
        assert [a.status_code for a in answers] == [200] * 8, [a.text for a in answers]
        assert sum(a.json()["counted"] for a in answers) == 1
        assert (await _shown(client, orchestrator, memory_id))["confidence"] == pytest.approx(0.75)


async def test_feedback_is_one_vote_per_principal_the_latest_counts(
    gateway_url: str, engine: AsyncEngine, place: Place
) -> None:
    agent = await make_actor(engine, ActorType.AGENT, place.org, place.project)
    memory_id = await _memory(engine, place)
    url = f"/v1/memories/{memory_id}/feedback"
    async with httpx.AsyncClient(base_url=gateway_url, timeout=60) as client:
        helpful = [(await client.post(url, json={"helpful": True}, headers=agent.headers)) for _ in range(50)]
        assert {a.status_code for a in helpful} == {200}
        assert [a.json()["usefulness"] for a in helpful] == pytest.approx([0.65] * 50)
        unhelpful = [
            (await client.post(url, json={"helpful": False}, headers=agent.headers)) for _ in range(30)
        ]
        # the latest vote replaced the first: one principal, one vote
        assert [a.json()["usefulness"] for a in unhelpful] == pytest.approx([0.35] * 30)
        assert (await _shown(client, agent, memory_id))["usefulness"] == pytest.approx(0.35)


async def test_parallel_voters_all_count(gateway_url: str, engine: AsyncEngine, place: Place) -> None:
    voters = [await make_actor(engine, ActorType.AGENT, place.org, place.project) for _ in range(10)]
    votes = [i < 7 for i in range(10)]  # seven helpful, three not
    memory_id = await _memory(engine, place)
    async with httpx.AsyncClient(base_url=gateway_url, timeout=60) as client:
        answers = await asyncio.gather(
            *(
                client.post(
                    f"/v1/memories/{memory_id}/feedback", json={"helpful": vote}, headers=voter.headers
                )
                for voter, vote in zip(voters, votes, strict=True)
            )
        )
        assert [a.status_code for a in answers] == [200] * 10, [a.text for a in answers]
        expected = usefulness_from_votes(7, 10)
        assert expected == pytest.approx((7 / 6 + 7) / (7 / 3 + 10))
        # the last vote to commit saw all ten: its answer is the stored value, computed from every vote
        assert any(a.json()["usefulness"] == pytest.approx(expected) for a in answers)
        assert (await _shown(client, voters[0], memory_id))["usefulness"] == pytest.approx(expected)
