"""Org-scope memories over real HTTP: judged in the caller's own project, alike for every operation.

An org memory has no project; a project-bound human of its org may write and approve org scope (the
policy's rows), and any reader of the org may read, give feedback on and see the history of it, as
GET /v1/memories/{ref} always allowed. Callers of another org are told it does not exist.
"""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType, Scope
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.lifecycle_factories import Place, insert_memory


@pytest.fixture
async def org_team(engine: AsyncEngine) -> dict[str, Actor | Place]:
    org, project = new_tenant()
    return {
        "place": Place(org=org, project=project, worktree="main", task_id=f"task-{project}"),
        "human": await make_actor(engine, ActorType.HUMAN, org, project),
        "agent": await make_actor(engine, ActorType.AGENT, org, project),
        # another project of the same org: an org memory is theirs as much
        "human_elsewhere": await make_actor(engine, ActorType.HUMAN, org, f"{project}-web"),
        "outsider": await make_actor(engine, ActorType.HUMAN, *new_tenant()),
    }


async def _org_memory(engine: AsyncEngine, place: Place, **columns: object) -> str:
    async with engine.begin() as conn:
        return await insert_memory(
            conn,
            place,
            memory_type="fact",
            scope=Scope.ORG.value,
            scope_key=place.key(Scope.ORG),
            project=None,
            **columns,
        )


@pytest.mark.parametrize("who", ["human", "human_elsewhere"])
async def test_project_bound_human_validates_supersedes_and_retires_org_memory(
    gateway_url: str, engine: AsyncEngine, org_team: dict, who: str
) -> None:
    human = org_team[who].headers
    place = org_team["place"]
    validated, superseded, retired = [await _org_memory(engine, place) for _ in range(3)]
    async with httpx.AsyncClient(base_url=gateway_url, timeout=30) as client:
        v = await client.post(
            f"/v1/memories/{validated}/validate", json={"source": "human_approved"}, headers=human
        )
        s = await client.post(
            f"/v1/memories/{superseded}/supersede",
            json={"content": "Every service logs JSON.", "reason": "the org standard changed"},
            headers=human,
        )
        r = await client.post(f"/v1/memories/{retired}/retire", json={"reason": "obsolete"}, headers=human)
    assert v.status_code == 200, v.text
    assert v.json()["confidence"] == 1.0
    assert s.status_code == 201, s.text
    assert r.status_code == 200, r.text


async def test_reader_of_org_memory_gets_history_and_feedback_like_show(
    gateway_url: str, engine: AsyncEngine, org_team: dict
) -> None:
    mid = await _org_memory(engine, org_team["place"])
    agent = org_team["agent"].headers
    async with httpx.AsyncClient(base_url=gateway_url, timeout=30) as client:
        shown = await client.get(f"/v1/memories/{mid}", headers=agent)
        history = await client.get(f"/v1/memories/{mid}/history", headers=agent)
        feedback = await client.post(f"/v1/memories/{mid}/feedback", json={"helpful": True}, headers=agent)
        validate = await client.post(
            f"/v1/memories/{mid}/validate", json={"source": "tests_passed"}, headers=agent
        )
    assert shown.status_code == 200, shown.text
    assert history.status_code == 200, history.text
    assert [v["id"] for v in history.json()["versions"]] == [mid]
    assert feedback.status_code == 200, feedback.text
    assert feedback.json()["usefulness"] == pytest.approx(0.65)
    # an agent may read org scope but not write it: a 403 with the reason, judged in its own project
    place = org_team["place"]
    assert validate.status_code == 403
    assert validate.json()["detail"].endswith(f"may not write at org scope in {place.org}/{place.project}")


async def test_other_org_cannot_see_org_memory_through_any_operation(
    gateway_url: str, engine: AsyncEngine, org_team: dict
) -> None:
    mid = await _org_memory(engine, org_team["place"])
    outsider = org_team["outsider"].headers
    async with httpx.AsyncClient(base_url=gateway_url, timeout=30) as client:
        answers = [
            await client.get(f"/v1/memories/{mid}", headers=outsider),
            await client.get(f"/v1/memories/{mid}/history", headers=outsider),
            await client.post(f"/v1/memories/{mid}/feedback", json={"helpful": False}, headers=outsider),
            await client.post(
                f"/v1/memories/{mid}/validate", json={"source": "human_approved"}, headers=outsider
            ),
            await client.post(f"/v1/memories/{mid}/retire", json={"reason": "x"}, headers=outsider),
            await client.post(
                f"/v1/memories/{mid}/supersede", json={"content": "y", "reason": "x"}, headers=outsider
            ),
        ]
    assert [a.status_code for a in answers] == [404] * len(answers)
    assert {a.json()["detail"] for a in answers} == {f"memory {mid!r} does not exist"}
