"""`loregate review`, `confirm` and `events` as a person runs them, against a real gateway on loopback."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.operations.changes import retire_memory
from governance.scopes import ActorType, Scope
from governance.storage.derivations import record_derivations
from tests.utils.cli import cli_env, run_cli
from tests.utils.factories import make_actor, new_tenant
from tests.utils.memory_factories import add_memory, new_task


@pytest.fixture(scope="module")
async def world(engine: AsyncEngine, gateway: str) -> dict[str, Any]:
    """A skill built on a fact, the fact retired: the skill is stale."""
    org, project = new_tenant()
    human = await make_actor(engine, ActorType.HUMAN, org, project)
    async with engine.begin() as conn:
        task = await new_task(conn, org=org, project=project)
        fact = await add_memory(
            conn, task, title="Driver", content="db.driver: psycopg 3", embedding=None, scope=Scope.PROJECT
        )
        skill = await add_memory(
            conn,
            task,
            title="How to connect",
            content="How to: connect with psycopg 3",
            embedding=None,
            memory_type="skill",
            scope=Scope.PROJECT,
        )
        await record_derivations(conn, [(skill["id"], fact["id"])], task_id=task.task_id)
        await retire_memory(
            conn, fact["id"], reason="we moved to asyncpg", actor_id=human.principal.id, actor_type="human"
        )
    admin = await make_actor(engine, ActorType.HUMAN, *new_tenant(), is_admin=True)
    env = cli_env(LOREGATE_URL=gateway, LOREGATE_API_KEY=human.key)
    admin_env = cli_env(LOREGATE_URL=gateway, LOREGATE_API_KEY=admin.key)
    return {
        "env": env,
        "admin_env": admin_env,
        "org": org,
        "fact": fact["citation"],
        "skill": skill["citation"],
    }


def test_review_lists_the_stale_skill_and_why(world: dict[str, Any]) -> None:
    done = run_cli("review", "--json", env=world["env"])
    assert done.returncode == 0, done.stderr
    stale = {m["citation"]: m for m in json.loads(done.stdout)["memories"]}
    assert stale[world["skill"]]["derived_from"] == [world["fact"]]
    assert "asyncpg" in stale[world["skill"]]["stale_reason"]
    table = run_cli("review", env=world["env"])
    assert f"mem:{world['skill']}" in table.stdout


def test_confirm_then_events_show_the_trail(world: dict[str, Any]) -> None:
    done = run_cli("confirm", world["skill"], "--note", "still right", env=world["env"])
    assert done.returncode == 0, done.stderr
    assert f"confirmed mem:{world['skill']}" in done.stdout
    trail = run_cli("events", "--memory", world["skill"], "--json", env=world["env"])
    assert [e["type"] for e in json.loads(trail.stdout)["events"]] == ["STALE", "CONFIRMED"]
    tenant = run_cli("events", "--type", "RETIRED", "--json", env=world["env"])
    assert [e["citation"] for e in json.loads(tenant.stdout)["events"]] == [world["fact"]]
    again = run_cli("confirm", world["skill"], env=world["env"])
    assert again.returncode == 1 and "not stale" in again.stderr


def test_events_of_another_org_for_an_admin_only(world: dict[str, Any]) -> None:
    theirs = run_cli("events", "--org", world["org"], "--type", "RETIRED", "--json", env=world["admin_env"])
    assert theirs.returncode == 0, theirs.stderr
    assert [e["citation"] for e in json.loads(theirs.stdout)["events"]] == [world["fact"]]
    own = run_cli("events", "--type", "RETIRED", "--json", env=world["admin_env"])
    assert json.loads(own.stdout)["events"] == []
    refused = run_cli("events", "--org", "someone-else", env=world["env"])
    assert refused.returncode == 1 and "may not read the events of someone-else" in refused.stderr
    assert "Traceback" not in refused.stderr
