"""Circular-fix detection over real HTTP: a failed approach, repeated or reworded, is refused."""

from __future__ import annotations

import uuid

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType
from tests.utils.factories import Actor, make_actor, new_tenant


@pytest.fixture
async def agent_and_task(engine: AsyncEngine) -> tuple[Actor, str]:
    org, project = new_tenant()
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    task_id = f"t-{uuid.uuid4().hex[:12]}"
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO tasks (id, org, project, worktree, description, created_by) "
                "VALUES (:t, :o, :p, 'main', 'fix checkout', 'test')"
            ),
            {"t": task_id, "o": org, "p": project},
        )
    return agent, task_id


async def test_failed_approach_refused_reworded_too_different_passes(
    gateway_url: str, agent_and_task: tuple[Actor, str]
) -> None:
    agent, task_id = agent_and_task
    async with httpx.AsyncClient(base_url=gateway_url, headers=agent.headers, timeout=30) as client:
        r = await client.post(
            f"/v1/tasks/{task_id}/approaches",
            json={
                "approach": "Increase the database connection pool size to 50",
                "outcome": "failed",
                "reason": "still times out",
            },
        )
        assert r.status_code == 201 and r.json()["failures"] == 1
        same = (
            await client.post(
                f"/v1/tasks/{task_id}/approaches/check",
                json={"approach": "increase the database connection pool size to 50"},
            )
        ).json()
        reworded = (
            await client.post(
                f"/v1/tasks/{task_id}/approaches/check",
                json={"approach": "Raise the db connection pool to 50"},
            )
        ).json()
        other = (
            await client.post(
                f"/v1/tasks/{task_id}/approaches/check",
                json={"approach": "Add a retry with exponential backoff around the HTTP call"},
            )
        ).json()
    assert same["valid"] is False and same["history"][0]["failure_reasons"] == ["still times out"]
    assert same["suggestion"]
    assert reworded["valid"] is False
    assert other["valid"] is True and other["stuck"] is False


async def test_approach_on_unknown_task_is_404(gateway_url: str, agent_and_task: tuple[Actor, str]) -> None:
    agent, _ = agent_and_task
    async with httpx.AsyncClient(base_url=gateway_url, headers=agent.headers) as client:
        r = await client.post("/v1/tasks/no-such-task/approaches/check", json={"approach": "x"})
    assert r.status_code == 404


async def test_approach_idempotency_key_with_another_body_conflicts(
    gateway_url: str, agent_and_task: tuple[Actor, str]
) -> None:
    """The key is bound to the request: another approach under it was a 500 (the first's row looked up
    under the second's fingerprint), another outcome was taken silently for the first's replay."""
    agent, task_id = agent_and_task
    first = {
        "approach": "Pin urllib3 below 2",
        "outcome": "failed",
        "reason": "breaks boto",
        "idempotency_key": "k1",
    }
    path = f"/v1/tasks/{task_id}/approaches"
    async with httpx.AsyncClient(base_url=gateway_url, headers=agent.headers, timeout=30) as client:
        recorded = await client.post(path, json=first)
        replay = await client.post(path, json=first)
        other_approach = await client.post(path, json={**first, "approach": "Vendor urllib3"})
        other_outcome = await client.post(path, json={**first, "outcome": "succeeded", "reason": None})
        check = await client.post(f"{path}/check", json={"approach": "Vendor urllib3"})
    assert recorded.status_code == 201 and replay.status_code == 201, replay.text
    assert replay.json() == recorded.json() and recorded.json()["failures"] == 1
    for answer in (other_approach, other_outcome):
        assert answer.status_code == 409, answer.text
        assert answer.json() == {
            "error": "conflict",
            "detail": "this idempotency key was already used for another request (another memory, "
            "operation or body); a new request needs a new key",
        }
    # nothing of the refused requests was counted
    assert check.json()["valid"] is True, check.text
    assert [(h["approach"], h["attempts"], h["failures"]) for h in check.json()["history"]] == [
        ("Pin urllib3 below 2", 1, 1)
    ]


async def test_subtask_and_checked_proposal_are_redacted_in_the_trail(
    gateway_url: str, engine: AsyncEngine, agent_and_task: tuple[Actor, str]
) -> None:
    """An approach's subtask reached the APPROACH event verbatim, and a checked proposal reached the
    APPROACH_REFUSED event verbatim: every reader of the tenant's trail read the token in it."""
    agent, task_id = agent_and_task
    token = "ghp_Zq8vR3nT1kPx7LmW2sYb9HcJ4dFg6QeUaV0o"
    subtask = f"deploy with {token}"
    async with httpx.AsyncClient(base_url=gateway_url, headers=agent.headers, timeout=30) as client:
        recorded = await client.post(
            f"/v1/tasks/{task_id}/approaches",
            json={"approach": "pin the runner image", "outcome": "failed", "reason": "r", "subtask": subtask},
        )
        checked = await client.post(
            f"/v1/tasks/{task_id}/approaches/check",
            json={"approach": f"pin the runner image, token {token}", "subtask": subtask},
        )
    assert recorded.status_code == 201, recorded.text
    assert checked.status_code == 200 and checked.json()["valid"] is False, checked.text
    assert token not in recorded.text + checked.text
    async with engine.connect() as conn:
        rows = (
            await conn.execute(
                text("SELECT event_type, payload::text FROM memory_events WHERE task_id = :t"), {"t": task_id}
            )
        ).all()
        stored = (
            await conn.execute(
                text(
                    "SELECT subtask FROM approaches WHERE task_id = :t "
                    "UNION ALL SELECT subtask FROM subtasks WHERE task_id = :t"
                ),
                {"t": task_id},
            )
        ).all()
    assert {row[0] for row in rows} >= {"APPROACH", "APPROACH_REFUSED"}, rows
    assert all(token not in row[1] for row in rows), rows
    assert stored and all(token not in row[0] and "[REDACTED]" in row[0] for row in stored), stored
