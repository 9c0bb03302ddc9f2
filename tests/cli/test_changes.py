"""`loregate changes list|show|approve|reject` as a person runs them.

Against a real gateway on loopback, a Temporal dev server and a worker with the real activities; an
orchestrator's supersede of a project fact waits as a change request until a human approves it here.
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
from tests.utils.lifecycle_factories import Place, insert_memory


@pytest.fixture(scope="module")
def gateway(promo_gateway: str) -> str:
    """This module's gateway is the one wired to the Temporal dev server."""
    return promo_gateway


@pytest.fixture
async def proposal(engine: AsyncEngine, gateway: str, worker: None) -> dict[str, Any]:
    """A project fact, an orchestrator's change request on it, and the human who may approve it."""
    org, project = new_tenant()
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    human = await make_actor(engine, ActorType.HUMAN, org, project)
    async with engine.begin() as conn:
        memory_id = await insert_memory(
            conn,
            Place(org, project, "main", f"task-{project}"),
            memory_type="fact",
            content="queue: RabbitMQ",
        )
    async with httpx.AsyncClient(base_url=gateway, timeout=30) as http:
        proposed = await http.post(
            f"/v1/memories/{memory_id}/supersede",
            headers=orchestrator.headers,
            json={"content": "queue: Redis streams", "reason": "fewer moving parts"},
        )
    assert proposed.status_code == 202, proposed.text
    return {"gateway": gateway, "human": human, "memory_id": memory_id, "request": proposed.json()}


async def _cli(proposal: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    human: Actor = proposal["human"]
    env = cli_env(LOREGATE_URL=proposal["gateway"], LOREGATE_API_KEY=human.key, COLUMNS="200")
    return await asyncio.to_thread(run_cli, *args, env=env)


async def test_changes_list_show_and_approve_apply_the_change(proposal: dict[str, Any]) -> None:
    request_id = proposal["request"]["id"]
    listed = await _cli(proposal, "changes", "list", "--state", "awaiting_approval", "--json")
    assert listed.returncode == 0, listed.stderr
    assert request_id in {r["id"] for r in json.loads(listed.stdout)["change_requests"]}
    shown = await _cli(proposal, "changes", "show", request_id)
    assert shown.returncode == 0, shown.stderr
    assert "queue: RabbitMQ" in shown.stdout and "queue: Redis streams" in shown.stdout

    approved = await _cli(proposal, "changes", "approve", request_id, "--note", "agreed", "--json")
    assert approved.returncode == 0, approved.stderr
    assert json.loads(approved.stdout)["state"] == "applied"
    after = await _cli(proposal, "changes", "show", request_id, "--json")
    assert json.loads(after.stdout)["old"]["active"] is False


async def test_changes_reject_leaves_the_memory(proposal: dict[str, Any]) -> None:
    rejected = await _cli(proposal, "changes", "reject", proposal["request"]["id"], "--note", "no")
    assert rejected.returncode == 0, rejected.stderr
    assert "rejected" in rejected.stdout
    again = await _cli(proposal, "changes", "approve", proposal["request"]["id"])
    assert again.returncode != 0 and "not awaiting approval" in (again.stderr + again.stdout)


async def test_changes_approve_several_applies_each_and_reports_the_unknown(
    proposal: dict[str, Any], engine: AsyncEngine
) -> None:
    human: Actor = proposal["human"]
    org, project = human.principal.org, str(human.principal.project)
    async with engine.begin() as conn:
        other = await insert_memory(
            conn,
            Place(org, project, "main", f"task-{project}"),
            memory_type="fact",
            content="cache: memcached",
        )
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    async with httpx.AsyncClient(base_url=proposal["gateway"], timeout=30) as http:
        retired = await http.post(
            f"/v1/memories/{other}/retire", headers=orchestrator.headers, json={"reason": "gone"}
        )
    assert retired.status_code == 202, retired.text
    first, second = proposal["request"]["id"], retired.json()["id"]
    unknown = "00000000-0000-4000-8000-000000000000"
    listed = await _cli(proposal, "changes", "list", "--state", "awaiting_approval", "--ids")
    assert listed.returncode == 0 and set(listed.stdout.split()) == {first, second}

    result = await _cli(proposal, "changes", "approve", first, unknown, second, "--note", "agreed", "--json")
    assert result.returncode == 1, result.stderr  # the unknown one was refused
    answer = json.loads(result.stdout)
    assert [(i["id"], i["accepted"], i["state"], i["error"]) for i in answer["items"]] == [
        (first, True, "applied", None),
        (unknown, False, None, "not_found"),
        (second, True, "applied", None),
    ]
    table = await _cli(proposal, "changes", "reject", first, second)
    assert table.returncode == 1 and "0 decided, 2 refused" in table.stdout
