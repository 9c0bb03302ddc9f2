"""`loregate erase` (and its old name `forget`) as a person runs it, against a real gateway on loopback:
dry run, erasure, refusal."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType, Scope
from tests.utils.cli import cli_env, run_cli
from tests.utils.factories import make_actor, new_tenant
from tests.utils.memory_factories import add_memory, new_task


@pytest.fixture
async def world(engine: AsyncEngine, gateway: str) -> dict[str, Any]:
    """Two project memories, one naming a customer; a human's and an agent's CLI environment."""
    org, project = new_tenant()
    human = await make_actor(engine, ActorType.HUMAN, org, project)
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    customer = f"customer-{uuid.uuid4().hex[:8]}"
    async with engine.begin() as conn:
        task = await new_task(conn, org=org, project=project)
        named = await add_memory(
            conn,
            task,
            title="Escalation",
            content=f"{customer} escalates to the CTO",
            embedding=None,
            scope=Scope.PROJECT,
        )
        other = await add_memory(
            conn, task, title="Driver", content="db.driver: asyncpg", embedding=None, scope=Scope.PROJECT
        )
    return {
        "env": cli_env(LOREGATE_URL=gateway, LOREGATE_API_KEY=human.key),
        "agent_env": cli_env(LOREGATE_URL=gateway, LOREGATE_API_KEY=agent.key),
        "org": org,
        "project": project,
        "customer": customer,
        "named": named["citation"],
        "other": other["citation"],
    }


def test_erase_memory_dry_run_then_erase(world: dict[str, Any]) -> None:
    dry = run_cli("erase", "memory", world["other"], "--dry-run", env=world["env"])
    assert dry.returncode == 0, dry.stderr
    assert f"mem:{world['other']}" in dry.stdout and "nothing was erased" in dry.stdout
    done = run_cli("erase", "memory", f"mem:{world['other']}", "--json", env=world["env"])
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["counts"]["memories"] == 1
    gone = run_cli("erase", "memory", world["other"], env=world["env"])
    assert gone.returncode == 1 and "does not exist" in gone.stderr


def test_erase_subject_erases_what_names_it(world: dict[str, Any]) -> None:
    args = ("erase", "subject", world["customer"], "--org", world["org"], "--project", world["project"])
    done = run_cli(*args, "--json", env=world["env"])
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert [m["citation"] for m in answer["memories"]] == [world["named"]]
    assert world["customer"] not in json.dumps(answer["counts"])
    receipts = run_cli("events", "--type", "ERASED", "--json", env=world["env"])
    assert world["customer"] not in receipts.stdout and str(answer["receipt_event_id"]) in receipts.stdout


def test_forget_is_refused_to_agents(world: dict[str, Any]) -> None:
    refused = run_cli("forget", "memory", world["named"], env=world["agent_env"])
    assert refused.returncode == 1 and "erase" in refused.stderr


def test_forget_is_the_old_name_of_erase(world: dict[str, Any]) -> None:
    """`forget` still erases (an alias for those who type it), and the help offers `erase` only."""
    dry = run_cli("forget", "memory", world["other"], "--dry-run", "--json", env=world["env"])
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout) == json.loads(
        run_cli("erase", "memory", world["other"], "--dry-run", "--json", env=world["env"]).stdout
    )
    assert json.loads(dry.stdout)["dry_run"] is True
    shown = run_cli("--help", env=world["env"]).stdout
    assert "erase" in shown and "forget" not in shown
