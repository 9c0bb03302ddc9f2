"""Policy changed at run time applies in every gateway process without restart, and only admins may change it.

The change is made through one gateway (the in-process one) and observed through a second gateway that is a
separate OS process: it can only learn of the change through Postgres LISTEN/NOTIFY.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType
from tests.utils.factories import make_actor, new_tenant
from tests.utils.gateway import gateway_process
from tests.utils.staging import assert_refused, count_entries, open_task_http

DENY_AGENT_WRITES = {"role": "agent", "scope": "task", "action": "write", "effect": "deny"}
PROPAGATION_SECONDS = 5.0


@pytest.fixture(scope="module")
def second_gateway(database_url: str) -> Iterator[str]:
    with gateway_process(database_url) as url:
        yield url


@pytest.fixture
async def client(gateway_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=gateway_url, timeout=30) as c:
        yield c


async def _policy_rows(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        return int((await conn.execute(select(func.count()).select_from(text("casbin_rule")))).scalar_one())


async def _poll_status(
    client: httpx.AsyncClient, request: dict[str, object], want: int
) -> tuple[httpx.Response, float]:
    """Repeat a request until it answers `want` (or the propagation budget runs out): the answer, the wait."""
    start = time.monotonic()
    while True:
        r = await client.request(**request)  # type: ignore[arg-type]
        if r.status_code == want or time.monotonic() - start > PROPAGATION_SECONDS:
            return r, time.monotonic() - start
        await asyncio.sleep(0.1)


async def test_policy_change_applies_in_second_gateway_process(
    engine: AsyncEngine, client: httpx.AsyncClient, second_gateway: str
) -> None:
    org, project = new_tenant()
    admin = await make_actor(engine, ActorType.HUMAN, org, None, is_admin=True)
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    task_id = await open_task_http(client, orchestrator, org, project)
    async with httpx.AsyncClient(base_url=second_gateway, timeout=30) as second:

        def append(content: str) -> dict[str, object]:
            return {
                "method": "POST",
                "url": f"/v1/tasks/{task_id}/entries",
                "headers": agent.headers,
                "json": {"entries": [{"kind": "log", "content": content}]},
            }

        r, _ = await _poll_status(second, append("allowed before"), 201)
        assert r.status_code == 201, r.text
        r = await client.post("/v1/admin/policy", headers=admin.headers, json=DENY_AGENT_WRITES)
        assert r.status_code == 201, r.text
        try:
            # until the second process reloads, the polls may still be allowed; afterwards nothing is written
            r, waited = await _poll_status(second, append("denied"), 403)
            assert_refused(r, 403, "forbidden", "may not write at task scope")
            assert waited < PROPAGATION_SECONDS
            before = await count_entries(engine, task_id)
            r = await second.request(**append("still denied"))  # type: ignore[arg-type]
            assert_refused(r, 403, "forbidden", "may not write at task scope")
            assert await count_entries(engine, task_id) == before
        finally:
            r = await client.post("/v1/admin/policy/delete", headers=admin.headers, json=DENY_AGENT_WRITES)
            assert r.status_code == 200, r.text
        r, _ = await _poll_status(second, append("allowed again"), 201)
        assert r.status_code == 201, r.text
        # the in-process gateway has reloaded too before other tests run
        r, _ = await _poll_status(client, append("allowed here too"), 201)
        assert r.status_code == 201, r.text


async def test_admin_lists_the_default_policy(engine: AsyncEngine, client: httpx.AsyncClient) -> None:
    org, _ = new_tenant()
    admin = await make_actor(engine, ActorType.HUMAN, org, None, is_admin=True)
    r = await client.get("/v1/admin/policy", headers=admin.headers)
    assert r.status_code == 200, r.text
    assert {"role": "agent", "scope": "task", "action": "write", "effect": "allow"} in r.json()["rules"]


async def test_removing_a_missing_rule_is_404(engine: AsyncEngine, client: httpx.AsyncClient) -> None:
    org, _ = new_tenant()
    admin = await make_actor(engine, ActorType.HUMAN, org, None, is_admin=True)
    before = await _policy_rows(engine)
    r = await client.post(
        "/v1/admin/policy/delete",
        headers=admin.headers,
        json={"role": "nobody", "scope": "org", "action": "write", "effect": "allow"},
    )
    assert_refused(r, 404, "not_found", "no such rule")
    assert await _policy_rows(engine) == before


@pytest.mark.parametrize("action", ["aprove", "Write", "delete", "read "])
async def test_adding_a_rule_for_an_unknown_action_is_422_and_adds_nothing(
    engine: AsyncEngine, client: httpx.AsyncClient, action: str
) -> None:
    """A typo'd action would be a row that matches nothing: a deny that denies nothing."""
    org, _ = new_tenant()
    admin = await make_actor(engine, ActorType.HUMAN, org, None, is_admin=True)
    before = await _policy_rows(engine)
    r = await client.post(
        "/v1/admin/policy",
        headers=admin.headers,
        json={"role": "agent", "scope": "task", "action": action, "effect": "deny"},
    )
    assert_refused(
        r, 422, "invalid_input", rf"unknown action '{action}': a policy row's action is one of 'read'"
    )
    assert await _policy_rows(engine) == before


@pytest.mark.parametrize(
    "actor", [ActorType.AGENT, ActorType.ORCHESTRATOR, ActorType.HUMAN, ActorType.SYSTEM]
)
async def test_non_admin_keys_cannot_touch_policy(
    engine: AsyncEngine, client: httpx.AsyncClient, actor: ActorType
) -> None:
    org, project = new_tenant()
    caller = await make_actor(engine, actor, org, project)
    before = await _policy_rows(engine)
    for method, path, body in [
        ("GET", "/v1/admin/policy", None),
        ("POST", "/v1/admin/policy", DENY_AGENT_WRITES),
        (
            "POST",
            "/v1/admin/policy/delete",
            {"role": "agent", "scope": "task", "action": "write", "effect": "allow"},
        ),
    ]:
        r = await client.request(method, path, headers=caller.headers, json=body)
        assert_refused(
            r, 403, "forbidden", rf"{actor} '.+' \({caller.principal.id}\) may not admin at policy scope"
        )
    assert await _policy_rows(engine) == before
