"""Recall by code location through the episodes' link tables, over the real gateway.

An episode published with structured files (`episode_files`) and symbols (`episode_symbols`) whose task left
no staging behind (an import, an archived task) and whose prose names neither: the file's history, the
`files` / `symbols` filters of search find it through the links, and only for paths that match.
"""

from __future__ import annotations

import uuid

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.episodes import EntryView, episode_structure
from governance.scopes import ActorType, Scope
from governance.storage.episodes import record_episode
from tests.utils.cli import cli_env, run_cli
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.memory_factories import TaskRef, add_memory


async def _linked_episode(engine: AsyncEngine, org: str, project: str) -> dict[str, str]:
    structure = episode_structure(
        "Fix the redirect loop",
        [
            EntryView(
                1,
                "tool_output",
                "edited",
                {"tool": "Edit", "files": ["httpx/_redirects.py"], "symbols": ["Client.follow"]},
            )
        ],
        success=False,
    ).to_json()
    ref = TaskRef(task_id=f"{org}/gone-{uuid.uuid4().hex[:8]}", org=org, project=project, worktree="main")
    async with engine.begin() as conn:
        made = await add_memory(
            conn,
            ref,
            title="Episode: stop the redirect loop",
            content="Task: stop the redirect loop. Outcome: failure. Critique: the loop came back.",
            embedding=None,
            memory_type="episode",
            scope=Scope.PROJECT,
            success=False,
        )
        await record_episode(
            conn, memory_id=made["id"], org=org, project=project, task_id=ref.task_id, structure=structure
        )
    return made


async def _reader(http: httpx.AsyncClient, orchestrator: Actor) -> str:
    opened = await http.post(
        "/v1/tasks",
        headers=orchestrator.headers,
        json={
            "org": orchestrator.principal.org,
            "project": orchestrator.principal.project,
            "worktree": "main",
            "description": "look at redirects",
        },
    )
    assert opened.status_code == 201, opened.text
    return str(opened.json()["task_id"])


async def test_file_history_and_filters_find_episodes_through_their_links(
    gateway_url: str, engine: AsyncEngine
) -> None:
    org, project = new_tenant()
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    made = await _linked_episode(engine, org, project)
    async with httpx.AsyncClient(base_url=gateway_url, timeout=60) as http:
        reader = await _reader(http, orchestrator)

        async def history(path: str) -> list[dict[str, object]]:
            answer = await http.get(
                "/v1/files/history", headers=agent.headers, params={"path": path, "task_id": reader}
            )
            assert answer.status_code == 200, answer.text
            return list(answer.json()["items"])

        async def search(**focus: object) -> list[str]:
            answer = await http.post(
                "/v1/search",
                headers=agent.headers,
                json={"query": "what went wrong", "task_id": reader, "code_filter": True, **focus},
            )
            assert answer.status_code == 200, answer.text
            return [r["citation"] for r in answer.json()["results"]]

        exact = await history("httpx/_redirects.py")
        absolute = await history("/home/dev/httpx/httpx/_redirects.py")  # longer than the stored path
        shorter = await history("_redirects.py")  # the stored path ends with it
        other = await history("httpx/_client.py")
        by_file = await search(files=["httpx/_redirects.py"])
        by_method = await search(symbols=["follow"])  # `follow` meets `Client.follow`
        by_other = await search(files=["httpx/_models.py"])
    assert [(i["citation"], i["via"], i["success"], i["task_type"]) for i in exact] == [
        (made["citation"], "episode", False, "bugfix")
    ]
    assert [i["citation"] for i in absolute] == [made["citation"]]
    assert [i["citation"] for i in shorter] == [made["citation"]]
    assert other == []
    assert by_file == [made["citation"]] and by_method == [made["citation"]] and by_other == []

    # the CLI's history shows the same, with the episode's task type
    env = cli_env(LOREGATE_URL=gateway_url, LOREGATE_API_KEY=agent.key, COLUMNS="200")
    shown = run_cli("history", "httpx/_redirects.py", "--task", reader, env=env)
    assert shown.returncode == 0, shown.stderr
    assert (
        f"mem:{made['citation']}" in shown.stdout and "bugfix" in shown.stdout and "episode" in shown.stdout
    )
