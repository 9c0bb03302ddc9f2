"""`loregate approve T --reject-item N:REASON --edit-item N=TEXT|@FILE` as a person runs it.

Against a real gateway on loopback, a Temporal dev server and a worker with the real activities; the
numbers are those `loregate promotion` shows (from 1).
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType
from tests.utils.cli import cli_env, run_cli
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.promotion_factories import Entry, active_memories, make_task
from tests.utils.promotion_gateway import wait_promotion_state

KEEP = "db.driver: psycopg 3 with the async API"
WRONG = "The CI runners have two CPU cores and 7 GB of memory."
TYPO = "Release tags are pushd by the CI job named publish."
ENTRIES = [
    Entry("decision", KEEP, {"key": "db.driver"}),
    Entry("fact", WRONG),
    Entry("fact", TYPO),
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
        for actor in (ActorType.ORCHESTRATOR, ActorType.HUMAN)
    }
    task = await make_task(engine, org, project, ENTRIES, description="pick the async db driver")
    return {**actors, "task_id": task.task_id, "gateway": gateway}


async def _cli(team: dict[str, Any], actor: str, *args: str) -> subprocess.CompletedProcess[str]:
    key: Actor = team[actor]
    env = cli_env(LOREGATE_URL=team["gateway"], LOREGATE_API_KEY=key.key, COLUMNS="200")
    return await asyncio.to_thread(run_cli, *args, env=env)


async def _awaiting(team: dict[str, Any]) -> dict[str, int]:
    """The promotion awaiting approval; each staged text's number as `loregate promotion` shows it."""
    task_id = team["task_id"]
    started = await _cli(
        team, "orchestrator", "promote", task_id, "--scope", "project", "--verified", "tests_passed"
    )
    assert started.returncode == 0, started.stderr
    async with httpx.AsyncClient(base_url=team["gateway"], timeout=30) as http:
        await wait_promotion_state(http, team["human"].headers, task_id, "awaiting_approval")
    shown = await _cli(team, "human", "promotion", task_id, "--json")
    plan = json.loads(shown.stdout)["plan"]
    return {text: next(p["index"] + 1 for p in plan if text in p["content"]) for text in (KEEP, WRONG, TYPO)}


async def test_approve_with_a_rejected_and_an_edited_item_publishes_the_rest(
    team: dict[str, Any], engine: AsyncEngine, tmp_path: Path
) -> None:
    number = await _awaiting(team)
    fixed = tmp_path / "fixed.md"
    fixed.write_text("Release tags are pushed by the CI job named publish.", encoding="utf-8")
    approved = await _cli(
        team,
        "human",
        "approve",
        team["task_id"],
        "--reject-item",
        f"{number[WRONG]}:the runners have four cores",
        "--edit-item",
        f"{number[TYPO]}=@{fixed}",
    )
    assert approved.returncode == 0, approved.stderr
    assert f"rejected items: #{number[WRONG]}" in approved.stdout
    assert f"edited items: #{number[TYPO]}" in approved.stdout
    async with httpx.AsyncClient(base_url=team["gateway"], timeout=30) as http:
        await wait_promotion_state(http, team["human"].headers, team["task_id"], "published")
    contents = [m.content for m in await active_memories(engine, task_id=team["task_id"])]
    assert any(KEEP in c for c in contents)
    assert "Release tags are pushed by the CI job named publish." in contents
    assert not any(WRONG in c or TYPO in c for c in contents)
    shown = await _cli(team, "human", "promotion", team["task_id"])
    assert "rejected by approver: the runners have four cores" in shown.stdout


async def test_approve_with_an_unknown_item_fails_in_one_line_and_changes_nothing(
    team: dict[str, Any], engine: AsyncEngine
) -> None:
    await _awaiting(team)
    refused = await _cli(team, "human", "approve", team["task_id"], "--reject-item", "99:no such item")
    assert refused.returncode == 1
    # numbered as the user typed it and as `loregate promotion` shows the plan: from 1
    assert "plan item 99 does not exist" in refused.stderr and "Traceback" not in refused.stderr
    assert re.search(r"\(numbered 1 to \d+\)", refused.stderr) and "indexes 0" not in refused.stderr
    emptied = await _cli(team, "human", "approve", team["task_id"], "--edit-item", "1=")
    assert emptied.returncode == 1 and "plan item 1: the edited content is empty" in emptied.stderr
    malformed = await _cli(team, "human", "approve", team["task_id"], "--reject-item", "two")
    assert malformed.returncode != 0 and "N:REASON" in malformed.stderr
    async with httpx.AsyncClient(base_url=team["gateway"], timeout=30) as http:
        status = (await http.get(f"/v1/promotions/{team['task_id']}", headers=team["human"].headers)).json()
    assert status["state"] == "awaiting_approval"
    assert await active_memories(engine, task_id=team["task_id"]) == []
