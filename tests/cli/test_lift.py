"""`loregate lift` as a person runs it, and `loregate changes show|approve` on the lift it proposes.

Against a real gateway on loopback, a Temporal dev server and a worker with the real activities: an
orchestrator's lift of a worktree fact into project scope waits as a change request, which a human shows
(titles, from → to) and approves here; a human's own lift into org scope is applied at once.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType, Scope
from tests.utils.cli import cli_env, run_cli
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.lifecycle_factories import Place, insert_memory


@pytest.fixture(scope="module")
def gateway(promo_gateway: str) -> str:
    """This module's gateway is the one wired to the Temporal dev server."""
    return promo_gateway


@pytest.fixture
async def world(engine: AsyncEngine, gateway: str, worker: None) -> dict[str, Any]:
    """A worktree fact, the orchestrator who may lift it and the human who may approve."""
    org, project = new_tenant()
    place = Place(org, project, "main", f"task-{project}")
    async with engine.begin() as conn:
        memory_id = await insert_memory(
            conn,
            place,
            memory_type="fact",
            content="queue: RabbitMQ with quorum queues",
            scope=Scope.WORKTREE.value,
            scope_key=place.key(Scope.WORKTREE),
        )
    return {
        "gateway": gateway,
        "place": place,
        "memory_id": memory_id,
        "orchestrator": await make_actor(engine, ActorType.ORCHESTRATOR, org, project),
        "human": await make_actor(engine, ActorType.HUMAN, org, project),
    }


async def _cli(world: dict[str, Any], actor: Actor, *args: str) -> subprocess.CompletedProcess[str]:
    env = cli_env(LOREGATE_URL=world["gateway"], LOREGATE_API_KEY=actor.key, COLUMNS="200")
    return await asyncio.to_thread(run_cli, *args, env=env)


async def test_lift_by_orchestrator_waits_and_a_human_approves_it_from_the_cli(world: dict[str, Any]) -> None:
    orchestrator, human, place = world["orchestrator"], world["human"], world["place"]
    lifted = await _cli(world, orchestrator, "lift", world["memory_id"], "--to", "project", "-r", "team-wide")
    assert lifted.returncode == 0, lifted.stderr
    assert "awaits approval" in lifted.stdout and place.key(Scope.PROJECT) in lifted.stdout
    answer = json.loads(
        (await _cli(world, human, "changes", "list", "--state", "awaiting_approval", "--json")).stdout
    )
    (request,) = [r for r in answer["change_requests"] if r["operation"] == "lift"]
    shown = await _cli(world, human, "changes", "show", request["id"])
    assert shown.returncode == 0, shown.stderr
    assert "queue: RabbitMQ" in shown.stdout and place.key(Scope.PROJECT) in shown.stdout
    approved = await _cli(world, human, "changes", "approve", request["id"], "--json")
    assert approved.returncode == 0, approved.stderr
    assert json.loads(approved.stdout)["state"] == "applied"
    after = json.loads((await _cli(world, human, "changes", "show", request["id"], "--json")).stdout)
    assert [i["outcome"] for i in after["items"]] == ["lifted"]


async def test_lift_by_human_applies_at_once_and_a_narrower_target_fails(world: dict[str, Any]) -> None:
    human = world["human"]
    lifted = await _cli(world, human, "lift", world["memory_id"], "--to", "org", "--reason", "org-wide")
    assert lifted.returncode == 0, lifted.stderr
    assert "lifted to" in lifted.stdout and "lifted" in lifted.stdout
    again = await _cli(world, human, "lift", world["memory_id"], "--to", "org", "--reason", "org-wide")
    assert again.returncode == 1 and "no longer active" in (again.stderr + again.stdout)
    bad = await _cli(world, human, "lift", world["memory_id"], "--to", "galaxy", "--reason", "x")
    assert bad.returncode != 0
