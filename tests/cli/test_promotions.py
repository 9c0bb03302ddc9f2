"""`loregate promote|verify|approve|reject|promotion|promotions` as a person runs them.

Against a real gateway on loopback, a Temporal dev server and a worker with the real activities. The worker
runs in the test's event loop, so each command runs in a thread (`_cli`) while the loop keeps working.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType
from tests.utils.cli import cli_env, run_cli
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.promotion_factories import Entry, active_memories, make_large_task, make_task
from tests.utils.promotion_gateway import wait_promotion_state
from tests.utils.tenancy import task_key_of

ENTRIES = [
    Entry("decision", "db.driver: psycopg 3 with the async API", {"key": "db.driver"}),
    Entry("fact", "The CI runners have two CPU cores and 7 GB of memory."),
    Entry("result", "Switched the import to psycopg; all tests pass."),
]


@pytest.fixture(scope="module")
def gateway(promo_gateway: str) -> str:
    """This module's gateway is the one wired to the Temporal dev server."""
    return promo_gateway


@pytest.fixture
async def team(engine: AsyncEngine, gateway: str, worker: None) -> dict[str, Any]:
    org, project = new_tenant()
    actors = {
        actor.value: await make_actor(engine, actor, org, project)
        for actor in (ActorType.ORCHESTRATOR, ActorType.AGENT, ActorType.HUMAN)
    }
    task = await make_task(engine, org, project, ENTRIES, description="pick the async db driver")
    return {**actors, "task_id": task.task_id, "gateway": gateway}


async def _cli(team: dict[str, Any], actor: str, *args: str) -> subprocess.CompletedProcess[str]:
    key: Actor = team[actor]
    env = cli_env(LOREGATE_URL=team["gateway"], LOREGATE_API_KEY=key.key, COLUMNS="200")
    return await asyncio.to_thread(run_cli, *args, env=env)


async def _wait(team: dict[str, Any], state: str) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=team["gateway"], timeout=30) as http:
        return await wait_promotion_state(http, team["human"].headers, team["task_id"], state)


async def test_promote_verify_and_approve_publish_into_project(
    team: dict[str, Any], engine: AsyncEngine
) -> None:
    task_id = team["task_id"]
    started = await _cli(team, "orchestrator", "promote", task_id, "--scope", "project")
    assert started.returncode == 0, started.stderr
    assert f"promote-{task_key_of(task_id)}" in started.stdout and "started" in started.stdout
    verified = await _cli(team, "orchestrator", "verify", task_id, "--source", "tests_passed")
    assert verified.returncode == 0, verified.stderr
    await _wait(team, "awaiting_approval")

    shown = await _cli(team, "human", "promotion", task_id)
    assert shown.returncode == 0, shown.stderr
    assert "awaiting_approval" in shown.stdout and "tests_passed" in shown.stdout
    assert "db.driver" in shown.stdout  # the plan table
    approved = await _cli(team, "human", "approve", task_id, "--note", "looks right")
    assert approved.returncode == 0, approved.stderr
    assert f"approved by {team['human'].principal.id}" in approved.stdout

    done = await _wait(team, "published")
    assert done["decided_by"] == team["human"].principal.id
    published = await active_memories(engine, task_id=task_id)
    assert published and all(m.scope_key.startswith("project:") for m in published)


async def test_promotions_pending_lists_the_waiting_task(team: dict[str, Any]) -> None:
    task_id = team["task_id"]
    started = await _cli(
        team, "orchestrator", "promote", task_id, "--scope", "project", "--verified", "pr_merged"
    )
    assert started.returncode == 0, started.stderr
    await _wait(team, "awaiting_approval")
    listed: list[str] = []
    for _ in range(50):  # Temporal's visibility is eventually consistent
        result = await _cli(team, "human", "promotions", "--pending", "--json")
        assert result.returncode == 0, result.stderr
        listed = [p["task_id"] for p in json.loads(result.stdout)["promotions"]]
        if listed:
            break
        await asyncio.sleep(0.2)
    assert listed == [task_id]
    table = await _cli(team, "human", "promotions", "--pending")
    assert task_id in table.stdout and "awaiting_approval" in table.stdout
    rejected = await _cli(team, "human", "reject", task_id, "--note", "not yet")
    assert rejected.returncode == 0 and "rejected by" in rejected.stdout


async def test_approve_by_agent_fails_in_one_line_and_publishes_nothing(
    team: dict[str, Any], engine: AsyncEngine
) -> None:
    task_id = team["task_id"]
    await _cli(team, "orchestrator", "promote", task_id, "--scope", "project", "--verified", "tests_passed")
    await _wait(team, "awaiting_approval")
    refused = await _cli(team, "agent", "approve", task_id)
    assert refused.returncode == 1
    assert "forbidden" in refused.stderr and "Traceback" not in refused.stderr
    assert await active_memories(engine, task_id=task_id) == []


async def test_promote_failed_evidence_publishes_only_the_episode(
    team: dict[str, Any], engine: AsyncEngine
) -> None:
    task_id = team["task_id"]
    started = await _cli(
        team, "orchestrator", "promote", task_id, "--scope", "project", "--failed", "tests_passed"
    )
    assert started.returncode == 0, started.stderr
    done = await _wait(team, "unverified")
    assert done["verification"] == {
        "source": "tests_passed",
        "success": False,
        "given_by": team["orchestrator"].principal.id,
    }
    assert [m.memory_type for m in await active_memories(engine, task_id=task_id)] == ["episode"]


def test_promote_with_both_evidence_flags_is_refused() -> None:
    result = run_cli(
        "promote",
        "t-any",
        "--scope",
        "task",
        "--verified",
        "tests_passed",
        "--failed",
        "tests_passed",
        env=cli_env(LOREGATE_URL="http://127.0.0.1:9"),
    )
    assert result.returncode == 1 and "not both" in result.stderr


async def test_promotion_shows_the_first_page_and_all_pages_through_a_big_plan(
    team: dict[str, Any], engine: AsyncEngine
) -> None:
    human: Actor = team["human"]
    facts = [Entry("fact", f"Fact number {i:03d}: shard {i} lives in zone {i % 7}.") for i in range(120)]
    task = await make_large_task(engine, human.principal.org, human.principal.project or "", facts)
    team = {**team, "task_id": task.task_id}
    started = await _cli(
        team, "orchestrator", "promote", task.task_id, "--scope", "project", "--verified", "tests_passed"
    )
    assert started.returncode == 0, started.stderr
    await _wait(team, "awaiting_approval")

    first = await _cli(team, "human", "promotion", task.task_id)
    assert first.returncode == 0, first.stderr
    assert "showing 100 of 121 plan entries" in first.stdout and "--all" in first.stdout
    assert "Fact number 099" in first.stdout and "Fact number 100" not in first.stdout

    everything = await _cli(team, "human", "promotion", task.task_id, "--all")
    assert everything.returncode == 0, everything.stderr
    assert "Fact number 119" in everything.stdout and "Episode" in everything.stdout
    assert "showing" not in everything.stdout
    as_json = await _cli(team, "human", "promotion", task.task_id, "--all", "--json")
    plan = json.loads(as_json.stdout)["plan"]
    assert [entry["index"] for entry in plan] == list(range(121))
    rejected = await _cli(team, "human", "reject", task.task_id, "--note", "too much")
    assert rejected.returncode == 0, rejected.stderr


async def test_approve_several_tasks_decides_each_and_reports_each_refusal(
    team: dict[str, Any], engine: AsyncEngine
) -> None:
    org, project = team["human"].principal.org, str(team["human"].principal.project)
    second = await make_task(engine, org, project, ENTRIES, description="a second task")
    for task_id in (team["task_id"], second.task_id):
        await _cli(
            team, "orchestrator", "promote", task_id, "--scope", "project", "--verified", "tests_passed"
        )
    await _wait(team, "awaiting_approval")
    async with httpx.AsyncClient(base_url=team["gateway"], timeout=30) as http:
        await wait_promotion_state(http, team["human"].headers, second.task_id, "awaiting_approval")

    # what a reviewer selects from: the pending task ids, one a line (Temporal's visibility lags a little)
    pending: set[str] = set()
    for _ in range(50):
        listed = await _cli(team, "human", "promotions", "--pending", "--ids")
        assert listed.returncode == 0, listed.stderr
        pending = set(listed.stdout.split())
        if len(pending) == 2:
            break
        await asyncio.sleep(0.2)
    assert pending == {team["task_id"], second.task_id}

    # an agent's batch: every item refused on its own, nothing decided, exit code 1
    refused = await _cli(team, "agent", "approve", team["task_id"], second.task_id)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "0 decided, 2 refused" in refused.stdout and refused.stdout.count("forbidden") == 2
    assert "0 of 2 approved as" in refused.stdout and "\napproved as" not in refused.stdout

    approved = await _cli(
        team, "human", "approve", team["task_id"], "no-such-task", second.task_id, "--note", "both fine"
    )
    assert approved.returncode == 1, approved.stderr  # one item was refused
    assert "2 decided, 1 refused" in approved.stdout and "not_found" in approved.stdout
    assert "2 of 3 approved as" in approved.stdout
    assert "1 of 3 refused" in approved.stderr
    for task_id in (team["task_id"], second.task_id):
        async with httpx.AsyncClient(base_url=team["gateway"], timeout=30) as http:
            done = await wait_promotion_state(http, team["human"].headers, task_id, "published")
        assert done["decided_by"] == team["human"].principal.id

    again = await _cli(team, "human", "reject", team["task_id"], second.task_id, "--json")
    assert again.returncode == 1
    answer = json.loads(again.stdout)
    assert [(i["id"], i["error"]) for i in answer["items"]] == [
        (team["task_id"], "conflict"),
        (second.task_id, "conflict"),
    ]


async def test_promote_again_lists_and_shows_every_promotion_then_close(team: dict[str, Any]) -> None:
    # a task staged through the API (sequence numbers from 1, as every append hands them out)
    orchestrator = team["orchestrator"].principal
    async with httpx.AsyncClient(base_url=team["gateway"], timeout=30) as http:
        opened = await http.post(
            "/v1/tasks",
            headers=team["orchestrator"].headers,
            json={
                "org": orchestrator.org,
                "project": orchestrator.project,
                "worktree": "main",
                "description": "d",
            },
        )
        task_id = opened.json()["task_id"]
        staged = await http.post(
            f"/v1/tasks/{task_id}/entries",
            headers=team["agent"].headers,
            json={"entries": [{"kind": "fact", "content": ENTRIES[1].content}]},
        )
        assert staged.status_code == 201, staged.text
    team = {**team, "task_id": task_id}
    first = await _cli(
        team, "orchestrator", "promote", task_id, "--scope", "task", "--verified", "tests_passed"
    )
    assert first.returncode == 0 and "promotion 1" in first.stdout, first.stderr
    await _wait(team, "published")
    nothing_new = await _cli(
        team, "orchestrator", "promote", task_id, "--scope", "task", "--verified", "tests_passed"
    )
    assert nothing_new.returncode == 1 and "no entry was appended after its snapshot" in nothing_new.stderr
    async with httpx.AsyncClient(base_url=team["gateway"], timeout=30) as http:
        appended = await http.post(
            f"/v1/tasks/{task_id}/entries",
            headers=team["agent"].headers,
            json={"entries": [{"kind": "fact", "content": "The staging cluster runs Postgres 16."}]},
        )
    assert appended.status_code == 201 and appended.json()["promotion"] == 2, appended.text
    second = await _cli(
        team, "orchestrator", "promote", task_id, "--scope", "task", "--verified", "tests_passed"
    )
    assert second.returncode == 0, second.stderr
    assert "promotion 2" in second.stdout and f"promote-{task_key_of(task_id)}-2" in second.stdout
    await _wait(team, "published")

    listed = await _cli(team, "human", "promotions", "--task", task_id)
    assert listed.returncode == 0, listed.stderr
    assert f"promote-{task_key_of(task_id)}-2" in listed.stdout and listed.stdout.count("published") == 2
    assert "belong to promotion 3" in listed.stdout
    older = await _cli(team, "human", "promotion", task_id, "--number", "1", "--json")
    assert older.returncode == 0 and json.loads(older.stdout)["number"] == 1, older.stderr
    refused = await _cli(team, "agent", "close", task_id)
    assert refused.returncode == 1 and "forbidden" in refused.stderr
    closed = await _cli(team, "orchestrator", "close", task_id)
    assert closed.returncode == 0 and "is closed (closed)" in closed.stdout, closed.stderr
    after = await _cli(
        team, "orchestrator", "promote", task_id, "--scope", "task", "--verified", "tests_passed"
    )
    assert after.returncode == 1 and "was closed" in after.stderr


async def test_promote_again_while_it_runs_does_not_ask_for_evidence_already_given(
    team: dict[str, Any],
) -> None:
    task_id = team["task_id"]
    started = await _cli(
        team, "orchestrator", "promote", task_id, "--scope", "project", "--verified", "tests_passed"
    )
    assert started.returncode == 0, started.stderr
    await _wait(team, "awaiting_approval")
    again = await _cli(team, "orchestrator", "promote", task_id, "--scope", "project")
    assert again.returncode == 0, again.stderr
    assert "already running" in again.stdout and "waits for evidence" not in again.stdout
    assert f"loregate promotion {task_id}" in again.stdout
