"""`loregate patterns match` and `loregate rules observe|candidates` as a person runs them, over HTTP.

A published bug pattern with fix statistics and a code rule sit in a project; the commands read them back
through the gateway, refuse what the API refuses, and exit non-zero with one line when they do.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.bug_signature import error_signature
from governance.scopes import ActorType, Scope
from governance.storage.bug_patterns import record_occurrence
from tests.utils.cli import cli_env, run_cli
from tests.utils.factories import make_actor, new_tenant
from tests.utils.memory_factories import add_memory, new_task

ERROR = "KeyError: 'user_42' in /srv/app/handlers/login.py line 88"
SAME_ERROR_OTHER_WORDS = (
    "Traceback (most recent call last):\nKeyError: 'user_977' in /home/ci/app/auth.py line 3"
)


@pytest.fixture(scope="module")
async def world(engine: AsyncEngine, gateway: str) -> dict[str, Any]:
    """A bug pattern fixed twice by one solution and once not by another; a weak code rule."""
    org, project = new_tenant()
    human = await make_actor(engine, ActorType.HUMAN, org, project)
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    org_human = await make_actor(engine, ActorType.HUMAN, org, None)
    signature = error_signature(ERROR)
    async with engine.begin() as conn:
        task = await new_task(conn, org=org, project=project)
        bug = await add_memory(
            conn,
            task,
            title="KeyError on login for unknown users",
            content="Symptom: KeyError on login. Resolved by: look the user up with .get()",
            embedding=None,
            memory_type="bug_pattern",
            scope=Scope.PROJECT,
            canonical_key=signature.key,
        )
        scope_key = f"project:{org}/{project}"
        for solution, ok in (("look the user up with .get()", True), ("restart the worker", False)):
            await record_occurrence(
                conn,
                memory_id=bug["id"],
                scope_key=scope_key,
                signature=signature,
                solution=solution,
                succeeded=ok,
            )
        await record_occurrence(
            conn,
            memory_id=bug["id"],
            scope_key=scope_key,
            signature=signature,
            solution="look the user up with .get()",
            succeeded=True,
        )
        rule = await add_memory(
            conn,
            task,
            title="Never log tokens",
            content="Rule: never log access tokens",
            embedding=None,
            memory_type="code_rule",
            scope=Scope.PROJECT,
            confidence=0.32,
        )
    return {
        "human": cli_env(LOREGATE_URL=gateway, LOREGATE_API_KEY=human.key),
        "agent": cli_env(LOREGATE_URL=gateway, LOREGATE_API_KEY=agent.key),
        "orchestrator": cli_env(LOREGATE_URL=gateway, LOREGATE_API_KEY=orchestrator.key),
        "org_human": cli_env(LOREGATE_URL=gateway, LOREGATE_API_KEY=org_human.key),
        "task": task.task_id,
        "bug": bug["citation"],
        "rule": rule["citation"],
    }


def test_patterns_match_finds_the_pattern_with_its_best_fix_first(world: dict[str, Any]) -> None:
    done = run_cli("patterns", "match", SAME_ERROR_OTHER_WORDS, "--task", world["task"], env=world["agent"])
    assert done.returncode == 0, done.stderr
    assert f"mem:{world['bug']}" in done.stdout and "KeyError" in done.stdout
    # no human approved a promotion reporting these fixes, and the pattern's text names none: unreviewed
    assert done.stdout.count("(unreviewed)") == 2, done.stdout
    answer = run_cli(
        "patterns", "match", "-", "--task", world["task"], "--json", env=world["agent"], input=ERROR
    )
    assert answer.returncode == 0, answer.stderr
    [pattern] = json.loads(answer.stdout)["patterns"]
    assert pattern["citation"] == world["bug"] and pattern["same_signature"] is True
    best, worst = pattern["solutions"]
    assert best["solution"] == "look the user up with .get()" and best["success_rate"] == 1.0
    assert worst["success_rate"] == 0.0
    assert best["standing"] == worst["standing"] == "unreviewed"


def test_patterns_match_refuses_empty_errors_and_unknown_tasks(world: dict[str, Any]) -> None:
    empty = run_cli("patterns", "match", "-", "--task", world["task"], env=world["agent"], input="  \n")
    assert empty.returncode == 1 and "empty" in empty.stderr
    unknown = run_cli("patterns", "match", ERROR, "--task", "t-nope", env=world["agent"])
    assert unknown.returncode == 1 and "not_found" in unknown.stderr


def test_rules_observe_moves_confidence_and_candidates_list_the_weak(world: dict[str, Any]) -> None:
    listed = run_cli("rules", "candidates", env=world["human"])
    assert listed.returncode == 0, listed.stderr
    assert f"mem:{world['rule']}" not in listed.stdout  # 0.32: not yet below 0.3
    observed = run_cli("rules", "observe", world["rule"], "violated", "--json", env=world["orchestrator"])
    assert observed.returncode == 0, observed.stderr
    body = json.loads(observed.stdout)
    assert body["confidence_before"] == pytest.approx(0.32) and body["confidence"] == pytest.approx(0.256)
    assert body["retirement_candidate"] is True
    listed = run_cli("rules", "candidates", "--json", env=world["human"])
    assert world["rule"] in [r["citation"] for r in json.loads(listed.stdout)["rules"]]


def test_rules_observe_refuses_what_the_api_refuses(world: dict[str, Any]) -> None:
    for who, outcome in (("agent", "followed_passed"), ("orchestrator", "rejected_by_human")):
        refused = run_cli("rules", "observe", world["rule"], outcome, env=world[who])
        assert refused.returncode == 1 and "forbidden" in refused.stderr, (who, refused.stderr)
    bad = run_cli("rules", "observe", world["rule"], "maybe", env=world["human"])
    assert bad.returncode == 2 and "maybe" in bad.stderr


def test_reflections_list_and_start_refusals(world: dict[str, Any]) -> None:
    listed = run_cli("reflections", "list", env=world["human"])
    assert listed.returncode == 0, listed.stderr
    assert "no reflection yet" in listed.stdout
    refused = run_cli("reflections", "start", env=world["agent"])
    assert refused.returncode == 1 and "forbidden" in refused.stderr, refused.stderr
    other = run_cli("reflections", "list", "--org", "another-org", "--project", "p", env=world["human"])
    assert other.returncode == 1 and "not_found" in other.stderr, other.stderr


def test_reflections_with_an_org_wide_key_must_name_the_project(world: dict[str, Any]) -> None:
    unnamed = run_cli("reflections", "list", env=world["org_human"])
    assert (
        unnamed.returncode == 1 and "invalid_input" in unnamed.stderr and "name the project" in unnamed.stderr
    )
