"""Idempotency keys of the lifecycle operations are bound to their request, over real HTTP.

The same key replays the first answer only for the same principal, operation, memory and body; with another
memory or another body it is a 409, and the other memory is left as it was (before, a key used on memory A
answered a request on memory B with A's result and left B unchanged).
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.lifecycle_factories import Place, insert_memory

# operation → (body, another body, expected status)
OPERATIONS: dict[str, tuple[dict[str, Any], dict[str, Any], int]] = {
    "validate": ({"source": "tests_passed"}, {"source": "pr_merged"}, 200),
    "feedback": ({"helpful": True}, {"helpful": False}, 200),
    "supersede": (
        {"content": "The queue is Redis streams.", "reason": "moved off RabbitMQ"},
        {"content": "The queue is Kafka.", "reason": "moved off RabbitMQ"},
        201,
    ),
    "retire": ({"reason": "obsolete"}, {"reason": "wrong from the start"}, 200),
}


@pytest.fixture
async def human_and_place(engine: AsyncEngine) -> tuple[Actor, Place]:
    org, project = new_tenant()
    place = Place(org=org, project=project, worktree="main", task_id=f"task-{project}")
    return await make_actor(engine, ActorType.HUMAN, org, project), place


async def _memory(engine: AsyncEngine, place: Place) -> str:
    async with engine.begin() as conn:
        return await insert_memory(conn, place, memory_type="fact")


async def _state(client: httpx.AsyncClient, actor: Actor, memory_id: str) -> dict[str, Any]:
    """What a lifecycle operation could have changed: confidence, usefulness, whether it is active."""
    shown = await client.get(f"/v1/memories/{memory_id}", headers=actor.headers)
    assert shown.status_code == 200, shown.text
    memory = shown.json()["memory"]
    return {k: memory[k] for k in ("confidence", "usefulness", "deprecated_at", "validation_count")}


@pytest.mark.parametrize("operation", list(OPERATIONS))
async def test_key_reused_on_another_memory_or_body_conflicts_and_same_request_replays(
    gateway_url: str, engine: AsyncEngine, human_and_place: tuple[Actor, Place], operation: str
) -> None:
    human, place = human_and_place
    other = await make_actor(engine, ActorType.HUMAN, place.org, place.project)
    body, other_body, status = OPERATIONS[operation]
    first_memory, second_memory = await _memory(engine, place), await _memory(engine, place)
    key = {"idempotency_key": f"k-{uuid.uuid4().hex}"}
    async with httpx.AsyncClient(base_url=gateway_url, timeout=30, headers=human.headers) as client:
        first = await client.post(f"/v1/memories/{first_memory}/{operation}", json={**body, **key})
        assert first.status_code == status, first.text
        after_first = await _state(client, human, first_memory)
        untouched = await _state(client, human, second_memory)

        elsewhere = await client.post(f"/v1/memories/{second_memory}/{operation}", json={**body, **key})
        changed_body = await client.post(
            f"/v1/memories/{first_memory}/{operation}", json={**other_body, **key}
        )
        replay = await client.post(f"/v1/memories/{first_memory}/{operation}", json={**body, **key})

        assert elsewhere.status_code == 409, elsewhere.text
        assert elsewhere.json()["error"] == "conflict"
        assert "idempotency key was already used for another request" in elsewhere.json()["detail"]
        assert await _state(client, human, second_memory) == untouched
        assert changed_body.status_code == 409, changed_body.text
        assert replay.status_code == status, replay.text
        assert replay.json() == first.json()
        assert await _state(client, human, first_memory) == after_first

        # keys are per principal: another principal's request with the same key is a request of its own
        theirs = await client.post(
            f"/v1/memories/{second_memory}/{operation}", json={**body, **key}, headers=other.headers
        )
        assert theirs.status_code == status, theirs.text
        assert await _state(client, human, second_memory) != untouched


@pytest.mark.parametrize("operation", list(OPERATIONS))
async def test_idempotency_key_header_replays_like_the_body_field(
    gateway_url: str, engine: AsyncEngine, human_and_place: tuple[Actor, Place], operation: str
) -> None:
    human, place = human_and_place
    body, _, status = OPERATIONS[operation]
    memory = await _memory(engine, place)
    key = f"k-{uuid.uuid4().hex}"
    async with httpx.AsyncClient(base_url=gateway_url, timeout=30, headers=human.headers) as client:
        url = f"/v1/memories/{memory}/{operation}"
        first = await client.post(url, json=body, headers={"Idempotency-Key": key})
        assert first.status_code == status, first.text
        after_first = await _state(client, human, memory)
        # the body's field and the header are one key: either way the request replays, writing nothing
        by_body = await client.post(url, json={**body, "idempotency_key": key})
        by_header = await client.post(url, json=body, headers={"Idempotency-Key": key})
        assert by_body.json() == first.json() and by_header.json() == first.json()
        assert await _state(client, human, memory) == after_first

        both = await client.post(
            url, json={**body, "idempotency_key": "from-body"}, headers={"Idempotency-Key": key}
        )
        assert both.status_code == 422 and both.json()["error"] == "invalid_input", both.text
        assert key in both.json()["detail"] and "from-body" in both.json()["detail"]
        assert await _state(client, human, memory) == after_first

        twice = await client.post(
            url, json=body, headers=[("Idempotency-Key", key), ("Idempotency-Key", f"{key}-other")]
        )
        assert twice.status_code == 422 and "given 2 times" in twice.json()["detail"], twice.text
        assert await _state(client, human, memory) == after_first
