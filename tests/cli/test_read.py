"""`loregate search`, `show` and `context` as a person runs them, against a real gateway on loopback."""

from __future__ import annotations

import json
import socket
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
        sources = await add_entries(conn, task, ["psycopg2 wheels broke the alpine image build"])
        memory = await add_memory(
            conn,
            task,
            title="Database driver",
            scope=Scope.PROJECT,
            embedding=None,
            content="The API uses psycopg 3 (binary wheels); psycopg2 is not allowed",
            source_entry_ids=sources,
        )
    env = cli_env(LOREGATE_URL=gateway, LOREGATE_API_KEY=agent.key)
    return {"env": env, "task_id": task.task_id, "citation": memory["citation"]}


def test_search_prints_ranked_table_with_citations(world: dict[str, Any]) -> None:
    result = run_cli(
        "search",
        "which psycopg driver does the API use",
        "--task",
        world["task_id"],
        env={**world["env"], "COLUMNS": "200"},
    )
    assert result.returncode == 0, result.stderr
    assert f"mem:{world['citation']}" in result.stdout and "Database driver" in result.stdout


def test_search_json_is_the_gateway_answer(world: dict[str, Any]) -> None:
    result = run_cli(
        "search", "psycopg driver", "--task", world["task_id"], "--k", "3", "--json", env=world["env"]
    )
    assert result.returncode == 0, result.stderr
    assert [r["citation"] for r in json.loads(result.stdout)["results"]] == [world["citation"]]


def test_show_prints_memory_and_provenance(world: dict[str, Any]) -> None:
    result = run_cli("show", f"mem:{world['citation']}", env={**world["env"], "COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    assert "psycopg2 is not allowed" in result.stdout
    assert "psycopg2 wheels broke the alpine image build" in result.stdout


def test_context_raw_prints_the_cited_block(world: dict[str, Any]) -> None:
    result = run_cli("context", "--task", world["task_id"], "--raw", "database driver", env=world["env"])
    assert result.returncode == 0, result.stderr
    assert "[MEMORY CONTEXT]" in result.stdout and f"[mem:{world['citation']}]" in result.stdout


def test_read_refusal_is_one_line_and_exit_1(world: dict[str, Any]) -> None:
    result = run_cli("search", "anything", "--task", "no-such-task", env=world["env"])
    assert result.returncode == 1
    assert "not_found" in result.stderr and "Traceback" not in result.stderr


def test_read_without_api_key_says_which_variable_to_set(world: dict[str, Any]) -> None:
    env = {k: v for k, v in world["env"].items() if k != "LOREGATE_API_KEY"}
    result = run_cli("show", world["citation"], env=env)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "unauthenticated" in result.stderr and "set LOREGATE_API_KEY or pass --api-key" in result.stderr


def test_read_without_url_names_the_default_and_the_variable(world: dict[str, Any]) -> None:
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", 8080)) == 0:
            pytest.skip(
                "something (a `loregate up` on its default port, say) listens on 127.0.0.1:8080, so the "
                "CLI's default URL reaches it and the message for an unreachable default cannot be shown"
            )
    env = {k: v for k, v in world["env"].items() if k != "LOREGATE_URL"}
    result = run_cli("show", world["citation"], env=env)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "unavailable: cannot reach the gateway at http://127.0.0.1:8080" in result.stderr
    assert "set LOREGATE_URL or pass --url" in result.stderr


async def test_show_prints_control_characters_visibly_never_raw(engine: AsyncEngine, gateway: str) -> None:
    """An agent's text reached the terminal as sent: `ESC[8m` hid what followed from the person reading it,
    `ESC]52;c;...` wrote their clipboard, and an 8-bit CSI (U+009B) or a bidi override did the same
    unseen. Each is shown as a visible stand-in; the text around it is unchanged."""
    org, project = new_tenant()
    human = await make_actor(engine, ActorType.HUMAN, org, project)
    async with engine.begin() as conn:
        task = await new_task(conn, org=org, project=project)
        memory = await add_memory(
            conn,
            task,
            title="Deploy \x1b]52;c;cm0gLXJmIH4=\x07notes",
            scope=Scope.PROJECT,
            embedding=None,
            content="Rename the flag.\x1b[8m Also drop the audit table.\x1b[0m \x9b8m \u202etxt.exe",
        )
    env = cli_env(LOREGATE_URL=gateway, LOREGATE_API_KEY=human.key, COLUMNS="200")
    result = run_cli("show", f"mem:{memory['citation']}", env=env)
    assert result.returncode == 0, result.stderr
    for raw in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert raw not in result.stdout, raw
    assert "Rename the flag.␛[8m Also drop the audit table.␛[0m <U+009B>8m <U+202E>txt.exe" in result.stdout
    assert "Deploy ␛]52;c;cm0gLXJmIH4=" in result.stdout


async def test_show_json_escapes_control_characters_and_keeps_the_text(
    engine: AsyncEngine, gateway: str
) -> None:
    """`--json` writes them as JSON escapes: nothing raw reaches the terminal, the data reads back as sent."""
    org, project = new_tenant()
    human = await make_actor(engine, ActorType.HUMAN, org, project)
    content = "Rename the flag.\x1b[8m hidden\x1b[0m \x9b8m \u202etxt.exe"
    async with engine.begin() as conn:
        task = await new_task(conn, org=org, project=project)
        memory = await add_memory(
            conn, task, title="Flags", scope=Scope.PROJECT, embedding=None, content=content
        )
    env = cli_env(LOREGATE_URL=gateway, LOREGATE_API_KEY=human.key)
    result = run_cli("show", f"mem:{memory['citation']}", "--json", env=env)
    assert result.returncode == 0, result.stderr
    assert not any(raw in result.stdout for raw in ("\x1b", "\x9b", "\u202e")), result.stdout
    assert json.loads(result.stdout)["memory"]["content"] == content


@pytest.mark.parametrize("command", [("show", "CITATION"), ("export", "project:o/p", "-o", "-")])
def test_a_malformed_key_is_refused_in_one_line_that_never_shows_it(
    world: dict[str, Any], command: tuple[str, ...]
) -> None:
    key = world["env"]["LOREGATE_API_KEY"]
    env = {**world["env"], "LOREGATE_API_KEY": key[:12] + "\nX-Evil: 1 " + key[12:]}
    args = [world["citation"] if part == "CITATION" else part for part in command]
    result = run_cli(*args, env=env)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "unauthenticated: malformed API key" in result.stderr
    assert key[12:] not in result.stderr + result.stdout and "X-Evil" not in result.stderr
