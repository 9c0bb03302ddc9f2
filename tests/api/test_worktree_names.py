"""A worktree's name meets rules as org and project names do: a 422 naming `worktree`, no task opened.

`" "`, `"\\u202e"` (a name that prints reversed), `"main*"` (a policy's wildcard) and `"x\\x00"` (refused only
by the database) opened tasks. A branch's `/` stays allowed (`feature/login`).
"""

from __future__ import annotations

import uuid

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType
from tests.utils.factories import make_actor, new_tenant


@pytest.mark.parametrize("worktree", [" ", " main", "\u202e", "main\u202egnp", "main*", "*", "x\x00", "a\nb"])
async def test_a_bad_worktree_name_is_refused_naming_it(
    gateway_url: str, engine: AsyncEngine, worktree: str
) -> None:
    org, project = new_tenant()
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    task_id = f"wt-{uuid.uuid4().hex[:10]}"
    body = {"org": org, "project": project, "worktree": worktree, "description": "d", "task_id": task_id}
    async with httpx.AsyncClient(base_url=gateway_url, headers=orchestrator.headers, timeout=30) as http:
        opened = await http.post("/v1/tasks", json=body)
        shown = await http.get(f"/v1/tasks/{task_id}")
    assert opened.status_code == 422, opened.text
    assert opened.json()["detail"].startswith("worktree:"), opened.text
    assert shown.status_code == 404, shown.text


@pytest.mark.parametrize("worktree", ["main", "feature/login", "release-1.2", "작업"])
async def test_branch_names_stay_allowed(gateway_url: str, engine: AsyncEngine, worktree: str) -> None:
    org, project = new_tenant()
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    body = {"org": org, "project": project, "worktree": worktree, "description": "d"}
    async with httpx.AsyncClient(base_url=gateway_url, headers=orchestrator.headers, timeout=30) as http:
        opened = await http.post("/v1/tasks", json=body)
    assert opened.status_code == 201 and opened.json()["worktree"] == worktree, opened.text
