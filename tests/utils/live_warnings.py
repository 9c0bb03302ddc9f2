"""The setup of the live-warning tests (tests/api/test_live_warnings*.py): a project of two agents and an
outsider project, the errors and fix they stage, a task where the first agent got past the error, and a
reader who may write the project's tasks but not read their staging."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.identity import tenant_domain
from governance.scopes import ActorType
from governance.storage.identity import grant_role, notify_policy_change
from tests.utils.factories import Actor, make_actor, new_tenant

__all__ = [
    "ERROR_A",
    "ERROR_B",
    "FIX",
    "APPROACH",
    "client",
    "project",
    "open_task",
    "append",
    "fixed_elsewhere",
    "fixed_and_failed",
    "blind_reader",
    "until_denied",
]

ERROR_A = (
    'Traceback (most recent call last):\n  File "/srv/app/db.py", line 12, in <module>\n'
    "ModuleNotFoundError: No module named 'psycopg2'"
)
ERROR_B = (
    'Traceback (most recent call last):\n  File "/home/b/app/models.py", line 40, in <module>\n'
    '    import psycopg2\nModuleNotFoundError: No module named "psycopg2"'
)
FIX = "Switched the driver to psycopg 3: pip install 'psycopg[binary]' and use postgresql+psycopg:// URLs"
APPROACH = "Increase the database connection pool size to 50"


@pytest.fixture
async def client(gateway_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=gateway_url, timeout=60) as c:
        yield c


@pytest.fixture
async def project(engine: AsyncEngine) -> dict[str, Actor]:
    """An orchestrator and two agents of one project, and an agent of another project of the same org."""
    org, name = new_tenant()
    return {
        "orchestrator": await make_actor(engine, ActorType.ORCHESTRATOR, org, name),
        "first": await make_actor(engine, ActorType.AGENT, org, name),
        "second": await make_actor(engine, ActorType.AGENT, org, name),
        "elsewhere_orchestrator": await make_actor(engine, ActorType.ORCHESTRATOR, org, f"{name}-other"),
        "elsewhere": await make_actor(engine, ActorType.AGENT, org, f"{name}-other"),
    }


async def open_task(client: httpx.AsyncClient, orchestrator: Actor, worktree: str = "main") -> str:
    p = orchestrator.principal
    r = await client.post(
        "/v1/tasks",
        headers=orchestrator.headers,
        json={"org": p.org, "project": p.project, "worktree": worktree, "description": "fix the db layer"},
    )
    assert r.status_code == 201, r.text
    return str(r.json()["task_id"])


async def append(client: httpx.AsyncClient, agent: Actor, task_id: str, *entries: dict[str, object]) -> dict:
    r = await client.post(
        f"/v1/tasks/{task_id}/entries", headers=agent.headers, json={"entries": list(entries)}
    )
    assert r.status_code == 201, r.text
    answer: dict = r.json()
    return answer


async def fixed_elsewhere(client: httpx.AsyncClient, project: dict[str, Actor], fix: str = FIX) -> str:
    """A task of the project where the first agent staged ERROR_A, then `fix`."""
    first = await open_task(client, project["orchestrator"])
    await append(
        client,
        project["first"],
        first,
        {"kind": "error", "content": ERROR_A},
        {"kind": "result", "content": fix},
    )
    return first


async def fixed_and_failed(client: httpx.AsyncClient, project: dict[str, Actor]) -> str:
    """A task of the project where the first agent got past ERROR_A and saw APPROACH fail."""
    first = await fixed_elsewhere(client, project)
    r = await client.post(
        f"/v1/tasks/{first}/approaches",
        headers=project["first"].headers,
        json={"approach": APPROACH, "outcome": "failed", "reason": "still times out"},
    )
    assert r.status_code == 201, r.text
    return first


async def blind_reader(engine: AsyncEngine, client: httpx.AsyncClient, project: dict[str, Actor]) -> Actor:
    """An agent of the project who may write its tasks but not read any task's staging (a deny row of a
    role only it holds; the enforcer decides)."""
    agent = project["first"].principal
    admin = await make_actor(engine, ActorType.HUMAN, agent.org, None, is_admin=True)
    blind = await make_actor(engine, ActorType.AGENT, agent.org, agent.project)
    role = f"blind-{uuid.uuid4().hex[:8]}"
    r = await client.post(
        "/v1/admin/policy",
        headers=admin.headers,
        json={"role": role, "scope": "task", "action": "read", "effect": "deny"},
    )
    assert r.status_code == 201, r.text
    async with engine.begin() as conn:
        await grant_role(conn, blind.principal.id, role, tenant_domain(agent.org, agent.project))
        await notify_policy_change(conn)
    return blind


async def until_denied(client: httpx.AsyncClient, reader: Actor, task_id: str) -> None:
    """Wait until the gateway's enforcer has the deny row: `reader` no longer reads the task's staging."""
    start = time.monotonic()
    while time.monotonic() - start < 10:
        if (await client.get(f"/v1/tasks/{task_id}/entries", headers=reader.headers)).status_code == 404:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("the deny row never reached the gateway")
