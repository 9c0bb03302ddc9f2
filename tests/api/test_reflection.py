"""Reflection end to end: the real gateway, the Temporal dev server and a worker running every activity.

Tasks that meet the same error (under varied messages) publish episodes; once their pending importance passes
the threshold, the last promotion starts the project's reflection. Its insights wait for a human's approval at
project scope like any promotion, are published with links to the episodes they came from, and show in
search and the context block. Reflecting again finds nothing new and publishes nothing twice.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ActivityError

from governance.config import Settings
from governance.scopes import ActorType
from governance.storage.identity import revoke_key
from tests.utils.factories import Actor, make_actor
from tests.utils.promotion_gateway import (
    open_task,
    stage,
    start_promotion,
    temporal_settings,
    wait_promotion_state,
)
from tests.utils.tenancy import task_key_of
from workflows.reflection_contract import ReflectionInput, SweepInput, SweepResult, workflow_id_for
from workflows.schedules import REFLECTION_SCHEDULE_ID, RETENTION_SCHEDULE_ID, apply_schedules

FIX = "Guard the lookup with dict.get and a default"
# three successful episodes (importance ~0.76 each) pass it; two do not
THRESHOLD = 2.0


@pytest.fixture(scope="module")
def promo_settings(settings: Settings, temporal: Client) -> Settings:
    return temporal_settings(settings, temporal, reflection_importance_threshold=THRESHOLD)


def _error(name: str, path: str, line: int) -> str:
    return (
        f'Traceback (most recent call last):\n  File "{path}", line {line}, in load\n'
        f"    return cache[key]\nKeyError: '{name}'"
    )


async def _open_task(http: httpx.AsyncClient, team: dict[str, Actor], description: str) -> str:
    return await open_task(http, team["orchestrator"], description)


async def _task_meeting(http: httpx.AsyncClient, team: dict[str, Actor], n: int, fix: str = FIX) -> str:
    task_id = await _open_task(http, team, f"load the user cache, attempt {n}")
    entries = [
        {"kind": "error", "content": _error(f"user_{n}", f"/srv/build/{n}/cache.py", 40 + n)},
        {"kind": "result", "content": fix},
    ]
    await stage(http, team["agent"], task_id, entries)
    await start_promotion(http, team["orchestrator"], task_id, "worktree")
    await wait_promotion_state(http, team["human"].headers, task_id, "published")
    return task_id


async def _reflections(http: httpx.AsyncClient, human: Actor) -> list[dict[str, Any]]:
    answer = await http.get("/v1/reflections", headers=human.headers)
    assert answer.status_code == 200, answer.text
    listed: list[dict[str, Any]] = answer.json()["reflections"]
    return listed


async def _wait_reflection(
    http: httpx.AsyncClient, human: Actor, state: str, *, count: int = 1, timeout: float = 90.0
) -> list[dict[str, Any]]:
    deadline = asyncio.get_running_loop().time() + timeout
    listed: list[dict[str, Any]] = []
    while asyncio.get_running_loop().time() < deadline:
        listed = await _reflections(http, human)
        if len([r for r in listed if r["state"] == state]) >= count:
            return listed
        await asyncio.sleep(0.3)
    raise AssertionError(f"no {count} reflection(s) reached {state}; last {listed}")


async def _active_insights(engine: AsyncEngine, org: str) -> list[dict[str, Any]]:
    async with engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT id::text AS id, citation, canonical_key, content FROM memories WHERE org = :org "
                "AND memory_type = 'insight' AND deprecated_at IS NULL ORDER BY canonical_key"
            ),
            {"org": org},
        )
        return [dict(r._mapping) for r in rows]


async def test_reflection_threshold_publishes_insights_through_the_gate(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    human = team["human"]
    org = human.principal.org
    await _task_meeting(http, team, 1)
    await _task_meeting(http, team, 2)
    assert await _reflections(http, human) == []  # two episodes weigh less than the threshold
    await _task_meeting(http, team, 3)

    # the third promotion started the project's reflection; its insights wait for a human at project scope
    [staged] = await _wait_reflection(http, human, "staged")
    assert staged["trigger"] == "threshold" and staged["episode_count"] == 3
    assert staged["insight_count"] >= 1
    task_id = staged["task_id"]
    waiting = await wait_promotion_state(http, human.headers, task_id, "awaiting_approval")
    assert waiting["target_scope"] == "project"
    assert await _active_insights(engine, org) == []  # nothing published before the approval
    # an agent cannot approve it
    refused = await http.post(
        f"/v1/promotions/{task_id}/approve", headers=team["agent"].headers, json={"note": "me"}
    )
    assert refused.status_code == 403, refused.text

    approved = await http.post(
        f"/v1/promotions/{task_id}/approve", headers=human.headers, json={"note": "ok"}
    )
    assert approved.status_code == 200, approved.text
    await wait_promotion_state(http, human.headers, task_id, "published")
    [done] = await _wait_reflection(http, human, "published")
    insights = await _active_insights(engine, org)
    assert len(insights) == done["insight_count"] >= 1
    error_insight = next(i for i in insights if i["canonical_key"].startswith("insight.error."))
    assert "recurred in 3 tasks" in error_insight["content"] and FIX in error_insight["content"]

    # provenance: the insight is derived from the three episodes, each marked DISTILLED
    async with engine.connect() as conn:
        sources = (
            await conn.execute(
                text(
                    "SELECT m.id::text AS id FROM memory_derivations d "
                    "JOIN memories m ON m.id = d.derived_from_id "
                    "WHERE d.memory_id = CAST(:i AS uuid) AND m.memory_type = 'episode'"
                ),
                {"i": error_insight["id"]},
            )
        ).all()
    assert len(sources) == 3
    events = await http.get(f"/v1/memories/{sources[0].id}/events", headers=human.headers)
    assert events.status_code == 200, events.text
    distilled = [e for e in events.json()["events"] if e["type"] == "DISTILLED"]
    assert len(distilled) == 1 and error_insight["id"] in distilled[0]["payload"]["insights"]

    # insights are found by search and cited in the context block of a new task
    reader = await _open_task(http, team, "a new task loading the cache")
    found = await http.post(
        "/v1/search",
        headers=team["agent"].headers,
        json={"task_id": reader, "query": "KeyError when loading the user cache", "k": 10},
    )
    assert found.status_code == 200, found.text
    assert error_insight["citation"] in [r["citation"] for r in found.json()["results"]]
    context = await http.post(
        "/v1/context",
        headers=team["agent"].headers,
        json={"task_id": reader, "query": "KeyError when loading the user cache", "max_tokens": 3000},
    )
    assert f"[mem:{error_insight['citation']}]" in context.json()["context"]

    # reflecting again (a human, by hand) finds nothing new and publishes nothing twice
    again = await http.post("/v1/reflections", headers=human.headers, json={})
    assert again.status_code == 202, again.text
    assert again.json()["workflow_id"] == workflow_id_for(org, human.principal.project or "")
    listed = await _wait_reflection(http, human, "nothing")
    assert [r["trigger"] for r in listed if r["state"] == "nothing"] == ["manual"]
    assert await _active_insights(engine, org) == insights


async def test_reflection_scheduled_sweep_reflects_what_stayed_below_the_threshold(
    http: httpx.AsyncClient,
    team: dict[str, Actor],
    engine: AsyncEngine,
    temporal: Client,
    promo_settings: Settings,
) -> None:
    human = team["human"]
    org, project = human.principal.org, human.principal.project or ""
    await _task_meeting(http, team, 1)
    await _task_meeting(http, team, 2)
    assert await _reflections(http, human) == []  # below the threshold: no reflection yet
    # what the schedule starts (limited to this test's org: the database is shared by every test)
    swept = await temporal.execute_workflow(
        "ReflectionSweepWorkflow",
        SweepInput(orgs=[org]),
        id=f"sweep-{org}",
        task_queue=promo_settings.task_queue,
        result_type=SweepResult,
    )
    assert (swept.due, swept.started) == (1, 1)
    [staged] = await _wait_reflection(http, human, "staged")
    assert staged["trigger"] == "schedule" and staged["episode_count"] == 2
    await wait_promotion_state(http, human.headers, staged["task_id"], "awaiting_approval")

    async def sweep(name: str) -> SweepResult:
        result: SweepResult = await temporal.execute_workflow(
            "ReflectionSweepWorkflow",
            SweepInput(orgs=[org]),
            id=f"{name}-{org}",
            task_queue=promo_settings.task_queue,
            result_type=SweepResult,
        )
        return result

    # two more episodes while the project reflects: due, but one reflection per project at a time
    await _task_meeting(http, team, 3)
    await _task_meeting(http, team, 4)
    busy = await sweep("sweep-busy")
    assert (busy.due, busy.started) == (1, 0)

    rejected = await http.post(
        f"/v1/promotions/{staged['task_id']}/reject", headers=human.headers, json={"note": "not yet"}
    )
    assert rejected.status_code == 200, rejected.text
    ended = await temporal.get_workflow_handle(workflow_id_for(org, project)).result()
    assert ended["state"] == "rejected" and ended["episodes"] == 2
    assert await _active_insights(engine, org) == []
    # once it ended, the next sweep reflects on the two new episodes only (the rejected ones stay claimed)
    after = await sweep("sweep-after")
    assert (after.due, after.started) == (1, 1)
    listed = await _wait_reflection(http, human, "staged")
    second = next(r for r in listed if r["state"] == "staged")
    assert second["episode_count"] == 2 and second["id"] != staged["id"]
    await wait_promotion_state(http, human.headers, second["task_id"], "awaiting_approval")
    await http.post(f"/v1/promotions/{second['task_id']}/reject", headers=human.headers, json={"note": "no"})
    await _wait_reflection(http, human, "rejected", count=2)

    # `loregate schedules apply` creates the sweep's schedule on the configured cron
    ours = promo_settings.model_copy(update={"reflection_cron": "17 4 * * *"})
    await apply_schedules(temporal, ours)
    handle = temporal.get_schedule_handle(REFLECTION_SCHEDULE_ID)
    try:
        described = await handle.describe()
        # the server stores cron expressions as calendar specs
        (calendar,) = described.schedule.spec.calendars
        assert (calendar.hour[0].start, calendar.minute[0].start) == (4, 17)
        assert described.schedule.action.workflow == "ReflectionSweepWorkflow"  # type: ignore[attr-defined]
    finally:
        await handle.delete()
        await temporal.get_schedule_handle(RETENTION_SCHEDULE_ID).delete()


async def test_reflection_start_is_for_approvers_of_the_project(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    for who in ("agent", "orchestrator"):
        answer = await http.post("/v1/reflections", headers=team[who].headers, json={})
        assert answer.status_code == 403, (who, answer.text)
    human = team["human"].principal
    foreign = await http.post(
        "/v1/reflections",
        headers=team["outsider"].headers,
        json={"org": human.org, "project": human.project},
    )
    assert foreign.status_code == 404, foreign.text
    listed = await http.get(
        "/v1/reflections",
        headers=team["outsider"].headers,
        params={"org": human.org, "project": human.project},
    )
    assert listed.status_code == 404, listed.text
    for body in ({"org": "a/b"}, {"project": ""}, {"project": "x" * 200}, {"org": 5}):
        bad = await http.post("/v1/reflections", headers=team["human"].headers, json=body)
        assert bad.status_code == 422, (body, bad.text)
    revoked = await make_actor(engine, ActorType.HUMAN, human.org, human.project)
    async with engine.begin() as conn:
        await revoke_key(conn, revoked.key.split("_")[1])
    gone = await http.post("/v1/reflections", headers=revoked.headers, json={})
    assert gone.status_code == 401, gone.text
    assert await _reflections(http, team["human"]) == []  # none of these started anything


async def test_reflection_again_updates_insights_by_key_without_duplicates(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    human = team["human"]
    org = human.principal.org
    for n in range(1, 4):
        await _task_meeting(http, team, n)
    [first] = await _wait_reflection(http, human, "staged")
    await wait_promotion_state(http, human.headers, first["task_id"], "awaiting_approval")
    await http.post(f"/v1/promotions/{first['task_id']}/approve", headers=human.headers, json={"note": "ok"})
    await _wait_reflection(http, human, "published")
    before = await _active_insights(engine, org)

    # three more tasks meet the error: the next reflection restates the same insights with the new counts
    for n in range(4, 7):
        await _task_meeting(http, team, n)
    listed = await _wait_reflection(http, human, "staged")
    second = next(r for r in listed if r["state"] == "staged")
    assert second["episode_count"] == 3 and second["id"] != first["id"]
    await wait_promotion_state(http, human.headers, second["task_id"], "awaiting_approval")
    await http.post(f"/v1/promotions/{second['task_id']}/approve", headers=human.headers, json={"note": "ok"})
    await _wait_reflection(http, human, "published", count=2)
    after = await _active_insights(engine, org)
    assert [i["canonical_key"] for i in after] == [i["canonical_key"] for i in before]  # one per key
    error_insight = next(i for i in after if i["canonical_key"].startswith("insight.error."))
    assert "recurred in 6 tasks (6 succeeded)" in error_insight["content"]
    async with engine.connect() as conn:
        linked = (
            await conn.execute(
                text("SELECT count(*) FROM memory_derivations WHERE memory_id = CAST(:i AS uuid)"),
                {"i": error_insight["id"]},
            )
        ).scalar_one()
    assert linked >= 6  # the new head is linked to all six episodes


async def test_erasing_a_task_takes_the_reflection_quoting_it(
    http: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    """Stop 40: a reflection awaiting approval quoted an erased task's fix; its staging and plan kept the
    text, its workflow was not in the receipt, and approving it published the text."""
    human = team["human"]
    marker = f"zx-{uuid.uuid4().hex[:12]}"
    await _task_meeting(http, team, 1)
    await _task_meeting(http, team, 2)
    quoted = await _task_meeting(http, team, 3, fix=f"Ask {marker} to reseed the cache")
    [staged] = await _wait_reflection(http, human, "staged")
    reflection_task = staged["task_id"]
    await wait_promotion_state(http, human.headers, reflection_task, "awaiting_approval")
    entries = await http.get(f"/v1/tasks/{reflection_task}/entries", headers=human.headers)
    assert marker in entries.text  # the insight quotes the fix that held in task 3

    erased = await http.post("/v1/erasures", headers=human.headers, json={"task": quoted})
    assert erased.status_code == 200, erased.text
    body = erased.json()
    assert any(e["task_id"] == reflection_task for e in body["staging_entries"]), body["staging_entries"]
    reflection_workflow = f"promote-{task_key_of(reflection_task)}"
    assert reflection_workflow in body["temporal_workflows"], body["temporal_workflows"]
    for path in (
        f"/v1/tasks/{reflection_task}/entries",
        f"/v1/promotions/{reflection_task}",
        f"/v1/promotions/{reflection_task}/plan",
    ):
        answer = await http.get(path, headers=human.headers)
        assert marker not in answer.text, (path, answer.text)
    # nothing is left to approve into published memory
    approved = await http.post(f"/v1/promotions/{reflection_task}/approve", headers=human.headers, json={})
    assert approved.status_code in (404, 409), approved.text
    reader = await _open_task(http, team, "a new task loading the cache")
    context = await http.post(
        "/v1/context",
        headers=team["agent"].headers,
        json={"task_id": reader, "query": "KeyError when loading the user cache", "max_tokens": 3000},
    )
    assert context.status_code == 200 and marker not in context.text


async def test_raw_reflection_starts_meet_the_checks_and_make_no_principal(
    http: httpx.AsyncClient,
    team: dict[str, Actor],
    engine: AsyncEngine,
    temporal: Client,
    promo_settings: Settings,
) -> None:
    # what `temporal workflow start --type ReflectionWorkflow` can send: a made-up org, a manual reflection
    # naming nobody, one naming an agent (it may not approve the project scope), and an unknown principal
    human = team["human"].principal
    made_up = f"made-up-{uuid.uuid4().hex[:8]}"
    starts = [
        (ReflectionInput(made_up, "api", "schedule"), f"org {made_up!r} does not exist"),
        (ReflectionInput(human.org, human.project or "", "manual"), "names its requester"),
        (
            ReflectionInput(human.org, human.project or "", "manual", team["agent"].principal.id),
            "needs the right to approve the project scope",
        ),
        (ReflectionInput(human.org, human.project or "", "manual", "nobody-at-all"), "unknown or disabled"),
    ]
    for data, reason in starts:
        workflow_id = f"reflect-{data.org}/{data.project}"
        handle = await temporal.start_workflow(
            "ReflectionWorkflow", data, id=workflow_id, task_queue=promo_settings.task_queue
        )
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
        cause = failed.value.cause
        assert isinstance(cause, ActivityError) and reason in str(cause.cause), cause
        async with engine.connect() as conn:
            rejected = (
                await conn.execute(
                    text(
                        "SELECT reason, payload FROM memory_events WHERE workflow_id = :w "
                        "AND event_type = 'REJECTED' AND payload->>'refused' = 'reflection' "
                        "AND idempotency_key LIKE :run"
                    ),
                    {"w": workflow_id, "run": f"%:{handle.result_run_id}:%"},
                )
            ).all()
        assert len(rejected) == 1 and reason in rejected[0].reason
    async with engine.connect() as conn:
        made = await conn.scalar(text("SELECT count(*) FROM principals WHERE org = :o"), {"o": made_up})
    assert made == 0  # no reflector for an org nobody created
    assert await _reflections(http, team["human"]) == []  # nothing claimed


async def test_raw_reflection_start_naming_a_real_approver_needs_the_gateways_grant(
    auth_http: httpx.AsyncClient,
    team: dict[str, Actor],
    engine: AsyncEngine,
    temporal: Client,
    auth_settings: Settings,
) -> None:
    # `approval_mode=authenticated`: the human may start a reflection, but a raw start naming them proves
    # nothing; the API's start (its grant) runs
    human = team["human"].principal
    data = ReflectionInput(human.org, human.project or "", "manual", human.id)
    handle = await temporal.start_workflow(
        "ReflectionWorkflow",
        data,
        id=workflow_id_for(data.org, data.project),
        task_queue=auth_settings.task_queue,
    )
    with pytest.raises(WorkflowFailureError) as failed:
        await handle.result()
    cause = failed.value.cause
    assert isinstance(cause, ActivityError) and "must be started through the API" in str(cause.cause)
    started = await auth_http.post("/v1/reflections", headers=team["human"].headers, json={})
    assert started.status_code == 202, started.text
    listed = await _wait_reflection(auth_http, team["human"], "nothing")
    assert [r["state"] for r in listed] == ["nothing"]  # the refused start claimed nothing
