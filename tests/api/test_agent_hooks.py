"""A coding agent's session through `loregate hook`, against the real gateway, Temporal and a worker.

`tests/data/agent_hooks/session.jsonl` is a session written in the documented hook-input shape of coding-agent
CLIs (session start, a prompt, a failing test run, a read, an edit, a passing run, stop, session end).
`recorded_session.jsonl` was recorded from a real session by `tests/data/agent_hooks/record.py`, which ran
each tool as it went (a real pytest failure with its traceback, the read, the edit, the passing run, the
`git diff`) and wrote the events a coding-agent CLI sends. Each line goes through the real `loregate`
command, as the agent's CLI would run it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType
from tests.utils.cli import cli_env, run_cli
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.memory_factories import add_memory, new_task

HOOKS = Path(__file__).resolve().parents[1] / "data" / "agent_hooks"


def _events(name: str = "session.jsonl") -> list[dict[str, Any]]:
    return [json.loads(line) for line in (HOOKS / name).read_text().splitlines() if line.strip()]


def _run(events: list[dict[str, Any]], env: dict[str, str]) -> list[str]:
    """Run `loregate hook` for each event; every run exits 0; their stdouts."""
    outputs = []
    for event in events:
        done = run_cli("hook", env=env, input=json.dumps(event))
        assert done.returncode == 0, (event["hook_event_name"], done.stderr)
        assert "loregate hook:" not in done.stderr or event["hook_event_name"] == "SessionEnd", done.stderr
        outputs.append(done.stdout)
    return outputs


async def _entries(http: httpx.AsyncClient, actor: Actor, task_id: str) -> list[dict[str, Any]]:
    page = await http.get(f"/v1/tasks/{task_id}/entries", headers=actor.headers, params={"limit": 100})
    assert page.status_code == 200, page.text
    entries: list[dict[str, Any]] = page.json()["entries"]
    return entries


async def test_agent_session_through_hooks_stages_its_work_gets_context_and_requests_promotion(
    http: httpx.AsyncClient, gateway: str, engine: AsyncEngine
) -> None:
    org, project = new_tenant()
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    async with engine.begin() as conn:  # what the project already knows
        earlier = await new_task(conn, org=org, project=project)
        known = await add_memory(
            conn,
            earlier,
            title="psycopg 3 replaced psycopg2",
            content="The login service imports psycopg (version 3); psycopg2 is gone since the upgrade.",
            embedding=None,
        )
    env = cli_env(
        LOREGATE_URL=gateway,
        LOREGATE_API_KEY=orchestrator.key,
        LOREGATE_ORG=org,
        LOREGATE_PROJECT=project,
        LOREGATE_HOOK_PROMOTE="task",
    )
    events = _events()
    outputs = _run(events, env)

    prompt = json.loads(outputs[1])["hookSpecificOutput"]
    assert prompt["hookEventName"] == "UserPromptSubmit" and "[MEMORY CONTEXT]" in prompt["additionalContext"]
    assert f"[mem:{known['citation']}]" in prompt["additionalContext"]
    # at the start, the block for the session's directory (or nothing, when nothing published matches it)
    assert outputs[0] == "" or json.loads(outputs[0])["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert [o for o in outputs[2:] if o.strip()] == []  # tools, stop and end print nothing for the model

    task_id = f"session-{events[0]['session_id']}"
    entries = await _entries(http, orchestrator, task_id)
    assert [e["kind"] for e in entries] == [
        "log",
        "error",
        "tool_output",
        "tool_output",
        "tool_output",
        "result",
    ]
    assert entries[0]["content"].startswith("The login endpoint returns 500")
    assert "ImportError: no module named psycopg2" in entries[1]["content"]
    assert entries[1]["payload"]["command"] == "pytest tests/test_login.py -q"
    assert entries[3]["payload"]["files"] == ["/home/dev/shop/app/db.py"]
    assert entries[5]["content"] == "session ended (prompt_input_exit)"
    promotion = await http.get(f"/v1/promotions/{task_id}", headers=orchestrator.headers)
    assert promotion.status_code == 200, promotion.text

    # the agent's CLI may run a hook twice: nothing is written twice
    _run(events[1:8], env)
    assert len(await _entries(http, orchestrator, task_id)) == len(entries)


async def test_a_recorded_real_session_stages_its_failure_fix_and_files_and_gets_context(
    http: httpx.AsyncClient, gateway: str, engine: AsyncEngine
) -> None:
    """The recorded session: a Decimal the json module cannot encode, found by a failing run and fixed."""
    org, project = new_tenant()
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    async with engine.begin() as conn:
        earlier = await new_task(conn, org=org, project=project)
        known = await add_memory(
            conn,
            earlier,
            title="Money in the billing export is a string",
            content="Prices are Decimal since the switch; the billing export writes amounts as strings.",
            embedding=None,
        )
    env = cli_env(
        LOREGATE_URL=gateway,
        LOREGATE_API_KEY=orchestrator.key,
        LOREGATE_ORG=org,
        LOREGATE_PROJECT=project,
        LOREGATE_HOOK_PROMOTE="task",
    )
    events = _events("recorded_session.jsonl")
    outputs = _run(events, env)
    prompt = json.loads(outputs[1])["hookSpecificOutput"]
    assert f"[mem:{known['citation']}]" in prompt["additionalContext"]

    entries = await _entries(http, orchestrator, f"session-{events[0]['session_id']}")
    kinds = [e["kind"] for e in entries]
    assert kinds[0] == "log" and kinds[1] == "error" and kinds[-1] == "result", kinds
    assert "TypeError: Object of type Decimal is not JSON serializable" in entries[1]["content"]
    assert entries[1]["payload"]["command"] == "python -m pytest -q tests/test_invoices.py"
    edited = [e for e in entries if e["payload"] and e["payload"].get("tool") == "Edit"]
    assert len(edited) == 1 and edited[0]["payload"]["files"][0].endswith("/invoices.py")
    assert any("2 passed" in e["content"] for e in entries if e["kind"] == "tool_output")
    promotion = await http.get(
        f"/v1/promotions/session-{events[0]['session_id']}", headers=orchestrator.headers
    )
    assert promotion.status_code == 200, promotion.text


async def test_agent_hooks_write_into_the_task_an_orchestrator_opened(
    http: httpx.AsyncClient, gateway: str, engine: AsyncEngine
) -> None:
    """An agent's key may not open tasks: the orchestrator opens one and gives its id (LOREGATE_TASK_ID)."""
    org, project = new_tenant()
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    opened = await http.post(
        "/v1/tasks",
        headers=orchestrator.headers,
        json={"org": org, "project": project, "worktree": "main", "description": "fix the login endpoint"},
    )
    task_id = opened.json()["task_id"]
    env = cli_env(LOREGATE_URL=gateway, LOREGATE_API_KEY=agent.key, LOREGATE_TASK_ID=task_id)
    _run(_events()[:4], env)
    assert [e["kind"] for e in await _entries(http, agent, task_id)] == ["log", "error"]


async def test_agent_hook_never_breaks_the_session(gateway: str, engine: AsyncEngine) -> None:
    """Bad input, a refusal, an unknown task or an unreachable gateway: one line on stderr, exit 0."""
    org, project = new_tenant()
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    prompt = _events()[1]
    cases = [
        ("not json", {"LOREGATE_URL": gateway, "LOREGATE_API_KEY": agent.key}, "not a hook's JSON"),
        (
            "[" * 100_000 + "]" * 100_000,
            {"LOREGATE_URL": gateway, "LOREGATE_API_KEY": agent.key},
            "nested too deeply to parse",
        ),
        (json.dumps(prompt), {"LOREGATE_URL": gateway, "LOREGATE_API_KEY": agent.key}, "not_found"),
        (json.dumps(prompt), {"LOREGATE_URL": gateway, "LOREGATE_API_KEY": "lg_bad"}, "unauthenticated"),
        (
            json.dumps(prompt),
            {"LOREGATE_URL": "http://127.0.0.1:9", "LOREGATE_API_KEY": agent.key},
            "unavailable",
        ),
    ]
    for stdin, overrides, said in cases:
        done = run_cli("hook", env=cli_env(**overrides), input=stdin)
        assert done.returncode == 0 and said in done.stderr and done.stdout == "", (said, done)
