"""Who may write what: the scope rules (policy/) and tenant isolation, through HTTP and the real Authorizer.

Every HTTP refusal of a caller who may read the task is a 403 `forbidden` whose detail names the principal,
the action and the tenant; a caller who may not even read it gets the 404 an unknown task gets. Either way
the database is left as it was.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType, Scope
from policy.enforcer import Authorizer, make_authorizer
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.staging import assert_refused, count_entries, count_tasks, open_task_http


@pytest.fixture(scope="module")
def authorizer(database_url: str) -> Iterator[Authorizer]:
    auth = make_authorizer(database_url)
    yield auth
    auth.close()


@pytest.fixture
async def client(gateway_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=gateway_url, timeout=30) as c:
        yield c


ENTRY = {"entries": [{"kind": "decision", "content": "use the write-ahead log"}]}


# ---- scopes through the Authorizer ----------------------------------------------------------------------


@pytest.mark.parametrize("scope", [Scope.PROJECT, Scope.ORG])
async def test_agent_cannot_write_project_or_org_scope(
    engine: AsyncEngine, authorizer: Authorizer, scope: Scope
) -> None:
    org, project = new_tenant()
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    assert authorizer.allowed(agent.principal, org=org, project=project, scope=Scope.TASK, action="write")
    assert not authorizer.allowed(agent.principal, org=org, project=project, scope=scope, action="write")


@pytest.mark.parametrize("scope", [Scope.PROJECT, Scope.ORG])
async def test_human_can_write_project_and_org_scope(
    engine: AsyncEngine, authorizer: Authorizer, scope: Scope
) -> None:
    org, project = new_tenant()
    human = await make_actor(engine, ActorType.HUMAN, org, project)
    assert authorizer.allowed(human.principal, org=org, project=project, scope=scope, action="write")
    assert not authorizer.allowed(human.principal, org=org, project="elsewhere", scope=scope, action="write")


async def test_authorizer_sees_a_principal_created_a_moment_ago(
    engine: AsyncEngine, authorizer: Authorizer
) -> None:
    """Many principals created in a burst are each allowed at once, before their NOTIFY arrives."""
    org, project = new_tenant()
    agents = [await make_actor(engine, ActorType.AGENT, org, project) for _ in range(8)]
    for agent in agents:
        assert authorizer.allowed(agent.principal, org=org, project=project, scope=Scope.TASK, action="write")


# ---- the same rules over HTTP -----------------------------------------------------------------------------


async def test_agent_cannot_open_a_task(engine: AsyncEngine, client: httpx.AsyncClient) -> None:
    org, project = new_tenant()
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    r = await client.post(
        "/v1/tasks",
        headers=agent.headers,
        json={"org": org, "project": project, "worktree": "main", "description": "mine"},
    )
    assert_refused(
        r,
        403,
        "forbidden",
        rf"agent '.+' \({agent.principal.id}\) may not open at task scope "
        rf"in {org}/{project}",
    )
    assert await count_tasks(engine, org) == 0


async def test_orchestrator_cannot_open_a_task_in_another_project(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    org, project = new_tenant()
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    r = await client.post(
        "/v1/tasks",
        headers=orchestrator.headers,
        json={"org": org, "project": "other", "worktree": "main", "description": "not mine"},
    )
    assert_refused(r, 403, "forbidden", f"may not open at task scope in {org}/other")
    assert await count_tasks(engine, org) == 0


async def _task_of_other_tenant(engine: AsyncEngine, client: httpx.AsyncClient) -> tuple[str, Actor]:
    org, project = new_tenant()
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    task_id = await open_task_http(client, orchestrator, org, project)
    owner = await make_actor(engine, ActorType.AGENT, org, project)
    r = await client.post(f"/v1/tasks/{task_id}/entries", headers=owner.headers, json=ENTRY)
    assert r.status_code == 201, r.text
    return task_id, owner


@pytest.mark.parametrize("same_org", [True, False], ids=["other-project", "other-org"])
async def test_agent_cannot_write_another_projects_task(
    engine: AsyncEngine, client: httpx.AsyncClient, same_org: bool
) -> None:
    task_id, owner = await _task_of_other_tenant(engine, client)
    org, project = (owner.principal.org, "intruders") if same_org else new_tenant()
    intruder = await make_actor(engine, ActorType.AGENT, org, project)
    r = await client.post(f"/v1/tasks/{task_id}/entries", headers=intruder.headers, json=ENTRY)
    # not a 403 naming the task's tenant: for the intruder the task does not exist
    assert_refused(r, 404, "not_found", f"task '{task_id}' does not exist")
    assert await count_entries(engine, task_id) == 1


async def test_agent_cannot_read_another_projects_task(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    task_id, owner = await _task_of_other_tenant(engine, client)
    intruder = await make_actor(engine, ActorType.AGENT, owner.principal.org, "intruders")
    r = await client.get(f"/v1/tasks/{task_id}/entries", headers=intruder.headers)
    assert_refused(r, 404, "not_found", f"task '{task_id}' does not exist")
    r = await client.get(f"/v1/tasks/{task_id}", headers=intruder.headers)
    assert_refused(r, 404, "not_found", f"task '{task_id}' does not exist")


async def test_human_cannot_write_staging(engine: AsyncEngine, client: httpx.AsyncClient) -> None:
    """Task-scope writes are for agents and orchestrators: a human of the same project is refused."""
    task_id, owner = await _task_of_other_tenant(engine, client)
    human = await make_actor(engine, ActorType.HUMAN, owner.principal.org, owner.principal.project)
    r = await client.post(f"/v1/tasks/{task_id}/entries", headers=human.headers, json=ENTRY)
    assert_refused(r, 403, "forbidden", rf"human '.+' \({human.principal.id}\) may not write at task scope")
    assert await count_entries(engine, task_id) == 1
    # but it may read the log
    assert (await client.get(f"/v1/tasks/{task_id}/entries", headers=human.headers)).status_code == 200


async def test_orchestrator_of_the_project_can_write_staging(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    task_id, owner = await _task_of_other_tenant(engine, client)
    orchestrator = await make_actor(
        engine, ActorType.ORCHESTRATOR, owner.principal.org, owner.principal.project
    )
    r = await client.post(f"/v1/tasks/{task_id}/entries", headers=orchestrator.headers, json=ENTRY)
    assert r.status_code == 201, r.text
    assert await count_entries(engine, task_id) == 2
