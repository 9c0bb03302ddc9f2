"""`loregate history PATH` and `loregate working-memory TASK` as a person runs them, on a real gateway."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType, Scope
from tests.utils.cli import cli_env, run_cli
from tests.utils.factories import make_actor, new_tenant
from tests.utils.memory_factories import add_entries, add_memory, new_task


@pytest.fixture(scope="module")
async def world(engine: AsyncEngine, gateway: str) -> dict[str, Any]:
    org, project = new_tenant()
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    async with engine.begin() as conn:
        task = await new_task(conn, org=org, project=project)
        await add_entries(conn, task, ["KeyError: 'user' raised at src/auth/session.py:88"], kind="error")
        memory = await add_memory(
            conn,
            task,
            title="Session lookup failed",
            scope=Scope.PROJECT,
            embedding=None,
            memory_type="episode",
            content="Looked the user up before the session was loaded; the tests failed.",
            success=False,
        )
        reader = await new_task(conn, org=org, project=project)
    env = cli_env(LOREGATE_URL=gateway, LOREGATE_API_KEY=agent.key, COLUMNS="200")
    return {"env": env, "task_id": reader.task_id, "earlier": task.task_id, "citation": memory["citation"]}


def test_history_prints_what_happened_around_a_file(world: dict[str, Any]) -> None:
    result = run_cli("history", "src/auth/session.py", "--task", world["task_id"], env=world["env"])
    assert result.returncode == 0, result.stderr
    assert f"mem:{world['citation']}" in result.stdout and "failed" in result.stdout
    raw = run_cli("history", "auth/session.py", "--task", world["task_id"], "--json", env=world["env"])
    assert [i["citation"] for i in json.loads(raw.stdout)["items"]] == [world["citation"]]
    quiet = run_cli("history", "src/other.py", "--task", world["task_id"], env=world["env"])
    assert quiet.returncode == 0 and "nothing recorded around src/other.py" in quiet.stdout


def test_working_memory_sets_a_hypothesis_tracks_a_file_and_reads_it_back(world: dict[str, Any]) -> None:
    task = world["earlier"]
    result = run_cli(
        "working-memory",
        task,
        "--hypothesis",
        "the session loads after the user lookup",
        "--confidence",
        "0.95",
        "--file",
        "src/auth/session.py",
        env=world["env"],
    )
    assert result.returncode == 0, result.stderr
    assert "hypothesis 0.95: the session loads after the user lookup → decision #" in result.stdout
    shown = run_cli("working-memory", task, "--json", env=world["env"])
    memory = json.loads(shown.stdout)
    assert memory["statistics"]["by_kind"] == {"decision": 1, "error": 1}
    assert [f["value"] for f in memory["files"]] == ["src/auth/session.py"]
    assert memory["files"][0]["tracked"] and memory["files"][0]["error_touches"] == 1
    refused = run_cli("working-memory", task, "--confidence", "2", env=world["env"])
    assert refused.returncode != 0


def test_stats_prints_the_project_in_numbers(world: dict[str, Any]) -> None:
    result = run_cli("stats", "--task", world["task_id"], "--json", env=world["env"])
    assert result.returncode == 0, result.stderr
    stats = json.loads(result.stdout)
    assert stats["episodes"] == 1 and stats["success_rate"] == 0.0
    assert stats["hotspots"][0]["path"] == "src/auth/session.py" and stats["hotspots"][0]["failed_tasks"] == 1
    shown = run_cli("stats", "--task", world["task_id"], env=world["env"])
    assert "success rate 0%" in shown.stdout and "src/auth/session.py" in shown.stdout
