"""`loregate code-rules from-patch FILE` and `loregate correct TASK TEXT` as a person runs them, over HTTP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType
from tests.utils.cli import cli_env, run_cli
from tests.utils.factories import make_actor, new_tenant
from tests.utils.memory_factories import new_task

DIFF = """\
--- a/app/store.py
+++ b/app/store.py
@@ -1,2 +1,4 @@
 def save(record):
+    if record is None:
+        raise ValueError("no record to save")
     db.insert(record)
"""


@pytest.fixture(scope="module")
async def world(engine: AsyncEngine, gateway: str) -> dict[str, Any]:
    org, project = new_tenant()
    human = await make_actor(engine, ActorType.HUMAN, org, project)
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    async with engine.begin() as conn:
        task = await new_task(conn, org=org, project=project)
    return {
        "human": cli_env(LOREGATE_URL=gateway, LOREGATE_API_KEY=human.key),
        "agent": cli_env(LOREGATE_URL=gateway, LOREGATE_API_KEY=agent.key),
        "orchestrator": cli_env(LOREGATE_URL=gateway, LOREGATE_API_KEY=orchestrator.key),
        "task": task.task_id,
    }


def test_code_rules_from_patch_file_stages_proposals(world: dict[str, Any], tmp_path: Path) -> None:
    patch = tmp_path / "guard.diff"
    patch.write_text(DIFF)
    done = run_cli("code-rules", "from-patch", str(patch), "--task", world["task"], env=world["agent"])
    assert done.returncode == 0, done.stderr
    assert "guard-clause" in done.stdout and "error-handling" in done.stdout and world["task"] in done.stdout
    opened = run_cli(
        "code-rules",
        "from-patch",
        "-",
        "--message",
        "validate before saving",
        "--json",
        env=world["orchestrator"],
        input=DIFF,
    )
    assert opened.returncode == 0, opened.stderr
    answer = json.loads(opened.stdout)
    assert answer["opened"] is True and answer["task_id"].startswith("patch-")
    assert {p["category"] for p in answer["proposals"]} >= {"guard-clause", "error-handling", "null-check"}
    assert all(p["kind"] == "rule" for p in answer["proposals"])


def test_code_rules_from_patch_refusals_exit_non_zero(world: dict[str, Any], tmp_path: Path) -> None:
    prose = tmp_path / "notes.txt"
    prose.write_text("this is not a diff\n")
    refused = run_cli("code-rules", "from-patch", str(prose), "--task", world["task"], env=world["agent"])
    assert refused.returncode == 1 and "not a unified diff" in refused.stderr, refused.stderr
    missing = run_cli("code-rules", "from-patch", str(tmp_path / "nope.diff"), env=world["agent"])
    assert missing.returncode == 1 and "no such file" in missing.stderr
    no_open = run_cli("code-rules", "from-patch", "-", env=world["agent"], input=DIFF)
    assert no_open.returncode == 1 and no_open.stderr.strip(), no_open.stderr


def test_correct_counts_towards_a_preference(world: dict[str, Any]) -> None:
    done = run_cli("correct", world["task"], "Name test files after the module they test", env=world["human"])
    assert done.returncode == 0, done.stderr
    assert "seen in 1 task(s)" in done.stdout and "2 more task(s)" in done.stdout
    agent = run_cli("correct", world["task"], "Name test files after the module", env=world["agent"])
    assert agent.returncode == 1 and "humans" in agent.stderr, agent.stderr
