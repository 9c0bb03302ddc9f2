"""Preferences from repeated corrections, through the real gateway, the Temporal dev server and a worker.

A human corrects agents the same way in three tasks of a project: the third correction stages a
`preference` entry (by the org's system principal) that the task's promotion carries through the gate;
nobody finds it before a human approves. Agents' corrections, other projects and other wordings count apart.
"""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.promotion_gateway import open_task, start_promotion, wait_promotion_state

PATHLIB = "Use pathlib.Path for file paths, not os.path string joins"


async def _correct(
    http: httpx.AsyncClient, actor: Actor, task_id: str, content: str, **extra: Any
) -> httpx.Response:
    return await http.post(
        f"/v1/tasks/{task_id}/corrections", headers=actor.headers, json={"content": content, **extra}
    )


async def _entries(http: httpx.AsyncClient, actor: Actor, task_id: str) -> list[dict[str, Any]]:
    page = await http.get(f"/v1/tasks/{task_id}/entries", headers=actor.headers)
    assert page.status_code == 200, page.text
    entries: list[dict[str, Any]] = page.json()["entries"]
    return entries


async def test_corrections_same_in_three_tasks_propose_a_preference_through_the_gate(
    http: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    human = team["human"]
    tasks = [await open_task(http, team["orchestrator"], f"write the exporter, part {n}") for n in range(3)]
    wordings = [PATHLIB, "use pathlib.Path for file paths -- not os.path string joins!", PATHLIB.upper()]
    answers = []
    for task_id, wording in zip(tasks, wordings, strict=True):
        answer = await _correct(http, human, task_id, wording)
        assert answer.status_code == 201, answer.text
        answers.append(answer.json())
    assert [a["tasks_seen"] for a in answers] == [1, 2, 3]
    assert [a["preference_proposed"] for a in answers] == [False, False, True]
    assert all(a["threshold"] == 3 for a in answers)
    for task_id in tasks[:2]:
        assert [e["kind"] for e in await _entries(http, human, task_id)] == ["correction"]
    third = await _entries(http, human, tasks[2])
    assert [e["kind"] for e in third] == ["correction", "preference"]
    preference = third[1]
    assert preference["actor_type"] == "system" and preference["payload"]["corrections"] == 3
    assert preference["payload"]["tasks"] == tasks
    assert preference["payload"]["key"].startswith("preference.correction.")
    # a fourth correction of the same kind proposes nothing new
    fourth_task = await open_task(http, team["orchestrator"], "write the exporter, part 4")
    fourth = await _correct(http, human, fourth_task, PATHLIB)
    assert fourth.json()["tasks_seen"] == 4 and fourth.json()["preference_proposed"] is True
    assert [e["kind"] for e in await _entries(http, human, fourth_task)] == ["correction"]

    # through the gate: waits for a human at project scope, unseen in search until approved
    reader = await open_task(http, team["orchestrator"], "an agent reading the project's preferences")
    ask = {"task_id": reader, "query": "pathlib or os.path for file paths?", "k": 20}

    async def found() -> list[dict[str, Any]]:
        answer = await http.post("/v1/search", headers=team["agent"].headers, json=ask)
        assert answer.status_code == 200, answer.text
        return [r for r in answer.json()["results"] if r["type"] == "preference"]

    await start_promotion(http, team["orchestrator"], tasks[2], "project")
    waiting = await wait_promotion_state(http, human.headers, tasks[2], "awaiting_approval")
    assert any(p["memory_type"] == "preference" for p in waiting["plan"]), waiting["plan"]
    assert await found() == []
    approved = await http.post(f"/v1/promotions/{tasks[2]}/approve", headers=human.headers, json={})
    assert approved.status_code == 200, approved.text
    await wait_promotion_state(http, human.headers, tasks[2], "published")
    assert [r["content"] for r in await found()] == [PATHLIB.upper()]


async def test_corrections_by_non_humans_elsewhere_or_reworded_count_apart(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    human = team["human"]
    tasks = [await open_task(http, team["orchestrator"], f"tidy the logging, part {n}") for n in range(3)]
    # agents and orchestrators may write a `correction` entry; it counts for nothing
    for task_id in tasks:
        written = await http.post(
            f"/v1/tasks/{task_id}/entries",
            headers=team["agent"].headers,
            json={"entries": [{"kind": "correction", "content": "Log with %-style arguments"}]},
        )
        assert written.status_code == 201, written.text
    refused = await _correct(http, team["agent"], tasks[0], "Log with %-style arguments")
    assert refused.status_code == 403, refused.text
    outsider = await _correct(http, team["outsider"], tasks[0], "Log with %-style arguments")
    assert outsider.status_code == 404, outsider.text
    # two wordings under one key count together; a third wording without the key is another correction
    keyed = {"payload": {"key": "style.logging-args"}}
    first = await _correct(http, human, tasks[0], "Log with %-style arguments", **keyed)
    second = await _correct(http, human, tasks[1], "Pass logger arguments lazily, no f-strings", **keyed)
    other = await _correct(http, human, tasks[2], "Pass logger arguments lazily, no f-strings")
    assert [a.json()["tasks_seen"] for a in (first, second, other)] == [1, 2, 1]
    # the same key in another project of the org is another project's count
    elsewhere_human = await make_actor(engine, ActorType.HUMAN, human.principal.org, new_tenant()[1])
    opener = await make_actor(
        engine, ActorType.ORCHESTRATOR, elsewhere_human.principal.org, elsewhere_human.principal.project
    )
    elsewhere = await open_task(http, opener, "another project's logging")
    counted = await _correct(http, elsewhere_human, elsewhere, "Log with %-style arguments", **keyed)
    assert counted.json()["tasks_seen"] == 1 and counted.json()["preference_proposed"] is False
    for task_id in tasks:
        assert all(e["kind"] != "preference" for e in await _entries(http, human, task_id))


async def test_corrections_empty_or_bad_payload_is_refused(
    http: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    task_id = await open_task(http, team["orchestrator"], "bad corrections")
    empty = await _correct(http, team["human"], task_id, "")
    assert empty.status_code == 422, empty.text
    extra = await http.post(
        f"/v1/tasks/{task_id}/corrections",
        headers=team["human"].headers,
        json={"content": "x", "actor": "me"},
    )
    assert extra.status_code == 422, extra.text
    assert await _entries(http, team["human"], task_id) == []
