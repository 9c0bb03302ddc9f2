"""A project's knowledge, computed by the scheduled workflow, read through the API, the CLI and the console.

Episodes are inserted at project scope as the gate leaves them (the memory row and its structured fields,
tests/utils/memory_factories.py and storage/episodes.py); `ProjectKnowledgeWorkflow` runs on the real
Temporal dev server and worker; readers of the project get the latest snapshot, others a precise 4xx.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client

from governance.config import Settings
from governance.scopes import ActorType, Scope
from governance.storage.episodes import record_episode
from tests.api.test_console import sign_in
from tests.utils.cli import cli_env, run_cli
from tests.utils.factories import Actor, make_actor
from tests.utils.memory_factories import TaskRef, add_memory
from workflows.knowledge import ProjectKnowledgeInput, ProjectKnowledgeWorkflow


def _structure(
    success: bool, files: list[tuple[str, int]], errors: list[str], task_type: str
) -> dict[str, Any]:
    return {
        "task_type": task_type,
        "task_type_source": "payload",
        "outcome": "success" if success else "failure",
        "files": [
            {"path": p, "touches": 1, "lines_added": n, "lines_removed": 0, "tracked": False}
            for p, n in files
        ],
        "symbols": [],
        "tools": [{"tool": "Edit", "calls": 1}],
        "error_types": [{"error_type": e, "count": 1} for e in errors],
        "tests": None,
        "test_runs": 0,
        "pivots": [],
        "lines_added": sum(n for _, n in files),
        "lines_removed": 0,
        "tokens": None,
        "duration_ms": None,
        "decided_hypotheses": [],
    }


async def _episodes(engine: AsyncEngine, org: str, project: str) -> None:
    """Three episodes at project scope: two failed on `auth.py`, one succeeded on `db.py`; and one of task
    scope (not counted: only what every reader of the project may search is)."""
    plans = [
        (False, [("src/auth.py", 10)], ["KeyError"], "bugfix", Scope.PROJECT),
        (
            False,
            [("src/auth.py", 3), ("src/db.py", 1)],
            ["KeyError", "TimeoutError"],
            "bugfix",
            Scope.PROJECT,
        ),
        (True, [("src/db.py", 40)], [], "feature", Scope.PROJECT),
        (False, [("src/secret_task_only.py", 5)], ["OSError"], "bugfix", Scope.TASK),
    ]
    async with engine.begin() as conn:
        for n, (success, files, errors, task_type, scope) in enumerate(plans):
            ref = TaskRef(
                task_id=f"{org}/k-{n}-{uuid.uuid4().hex[:6]}", org=org, project=project, worktree="main"
            )
            added = await add_memory(
                conn,
                ref,
                title=f"Episode {n}",
                content=f"Task {n}: work on {files[0][0]}",
                embedding=None,
                memory_type="episode",
                scope=scope,
                success=success,
            )
            await record_episode(
                conn,
                memory_id=added["id"],
                org=org,
                project=project,
                task_id=ref.task_id,
                structure=_structure(success, files, errors, task_type),
            )


async def _compute(temporal: Client, settings: Settings, org: str) -> int:
    result = await temporal.execute_workflow(
        ProjectKnowledgeWorkflow.run,
        ProjectKnowledgeInput(orgs=[org]),
        id=f"knowledge-test-{uuid.uuid4().hex[:8]}",
        task_queue=settings.task_queue,
    )
    return result.projects


async def test_project_knowledge_is_computed_by_the_workflow_and_read_by_project_readers(
    http: httpx.AsyncClient,
    team: dict[str, Actor],
    engine: AsyncEngine,
    temporal: Client,
    promo_settings: Settings,
) -> None:
    agent = team["agent"]
    org, project = agent.principal.org, agent.principal.project
    assert project is not None
    await _episodes(engine, org, project)
    before = await http.get(f"/v1/projects/{project}/knowledge", headers=agent.headers)
    assert before.status_code == 404 and "no computed knowledge yet" in before.json()["detail"]

    assert await _compute(temporal, promo_settings, org) == 1
    answer = await http.get(f"/v1/projects/{project}/knowledge", headers=agent.headers)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["computed_at"] and (body["org"], body["project"]) == (org, project)
    assert (body["episodes"], body["succeeded"], body["success_rate"]) == (3, 1, 0.3333)
    assert body["hotspots"][0] == {
        "path": "src/auth.py",
        "failed_episodes": 2,
        "episodes": 2,
        "errors": 3,
        "lines_changed": 13,
    }
    assert body["churn"][0] == {"path": "src/db.py", "episodes": 2, "lines_changed": 41}
    assert body["common_errors"][0] == {"error_type": "KeyError", "count": 2}
    assert {t["task_type"]: (t["episodes"], t["succeeded"]) for t in body["task_types"]} == {
        "bugfix": (2, 0),
        "feature": (1, 1),
    }
    assert "src/secret_task_only.py" not in answer.text  # task scope: not every project reader's

    # the CLI reads the same snapshot
    env = cli_env(LOREGATE_URL=str(http.base_url), LOREGATE_API_KEY=agent.key, COLUMNS="200")
    shown = run_cli("knowledge", project, env=env)
    assert shown.returncode == 0, shown.stderr
    assert "src/auth.py" in shown.stdout and "success rate 33%" in shown.stdout and "KeyError" in shown.stdout

    # the console's page, server-rendered
    await sign_in(http, team["human"])
    page = await http.get("/console/knowledge", params={"project": project})
    assert page.status_code == 200, page.text
    assert "Hotspots" in page.text and "src/auth.py" in page.text and "KeyError" in page.text


async def test_project_knowledge_refuses_outsiders_and_unknown_projects(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    agent = team["agent"]
    project = agent.principal.project
    outsider = await http.get(f"/v1/projects/{project}/knowledge", headers=team["outsider"].headers)
    assert outsider.status_code == 403  # judged in its own org, where it may not read that project
    other_project = await http.get("/v1/projects/elsewhere/knowledge", headers=agent.headers)
    assert other_project.status_code == 403  # a project the agent may not read
    org_wide = await make_actor(engine, ActorType.HUMAN, agent.principal.org, None)
    unknown = await http.get("/v1/projects/no-such-project/knowledge", headers=org_wide.headers)
    assert unknown.status_code == 404 and "no tasks or memories" in unknown.json()["detail"]
    blank = await http.get("/v1/projects/%20/knowledge", headers=agent.headers)
    assert blank.status_code == 422
    anonymous = await http.get(f"/v1/projects/{project}/knowledge")
    assert anonymous.status_code == 401
