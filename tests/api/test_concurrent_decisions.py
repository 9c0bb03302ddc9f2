"""Humans deciding one promotion at once: one decision is taken, every other is a 409, none a 404.

The losers' updates were admitted while the winner's decision ended the run, and Temporal answers those
with NOT_FOUND ("workflow update was aborted by closing workflow"): the gateway said the task had no
promotion.
"""

from __future__ import annotations

import asyncio

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType
from tests.utils.factories import Actor, make_actor
from tests.utils.promotion_gateway import awaiting_approval, wait_promotion_state


async def test_concurrent_decisions_take_one_and_refuse_the_rest_as_conflicts(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    human = team["human"]
    org, project = human.principal.org, human.principal.project
    others = [await make_actor(engine, ActorType.HUMAN, org, project) for _ in range(3)]
    task_id, _ = await awaiting_approval(http, team, [{"kind": "decision", "content": "race.color: blue"}])
    deciders = [(human, "approve"), (others[0], "reject"), (others[1], "approve"), (others[2], "reject")]
    answers = await asyncio.gather(
        *(
            http.post(f"/v1/promotions/{task_id}/{decision}", headers=actor.headers, json={"note": decision})
            for actor, decision in deciders
        )
    )
    statuses = sorted(a.status_code for a in answers)
    assert statuses == [200, 409, 409, 409], [(a.status_code, a.text) for a in answers]
    for answer in answers:
        if answer.status_code == 409:
            assert answer.json()["error"] == "conflict", answer.text
    winner = next(i for i, a in enumerate(answers) if a.status_code == 200)
    ended = "published" if deciders[winner][1] == "approve" else "rejected"
    status = await wait_promotion_state(http, human.headers, task_id, ended)
    assert status["decided_by"] == deciders[winner][0].principal.id, status
