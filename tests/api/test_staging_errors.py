"""Every refusal of the staging write path over real HTTP: status, JSON error body, and nothing written.

The gateway here runs with small limits (a 16 KiB request, 1 KiB entries, batches of 10) so the 413 cases
are exact and cheap; 403 cases live in test_staging_authz.py, 503 in test_staging_unavailable.py.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.config import Settings
from governance.identity import key_id_of
from governance.scopes import ActorType
from governance.storage.identity import revoke_key
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.gateway import running_gateway
from tests.utils.staging import assert_refused, count_all_entries, count_entries, count_tasks, open_task_http

MAX_REQUEST = 16 * 1024
MAX_ENTRY = 1024
MAX_BATCH = 10


@pytest.fixture(scope="module")
def limited_url(settings: Settings) -> Iterator[str]:
    """A gateway of its own with small, exact limits."""
    limited = settings.model_copy(
        update={
            "max_request_bytes": MAX_REQUEST,
            "max_entry_bytes": MAX_ENTRY,
            "max_batch_entries": MAX_BATCH,
        }
    )
    with running_gateway(limited) as url:
        yield url


@dataclass(frozen=True)
class World:
    """One tenant with an orchestrator, an agent and an open task."""

    org: str
    project: str
    orchestrator: Actor
    agent: Actor
    task_id: str


@pytest.fixture(scope="module")
async def world(engine: AsyncEngine, limited_url: str) -> World:
    org, project = new_tenant()
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    async with httpx.AsyncClient(base_url=limited_url) as client:
        task_id = await open_task_http(client, orchestrator, org, project)
    return World(org, project, orchestrator, agent, task_id)


@pytest.fixture
async def client(limited_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=limited_url, timeout=30) as c:
        yield c


def _entry(content: str = "ran the tests", **extra: object) -> dict[str, object]:
    return {"kind": "log", "content": content, **extra}


async def _refused_append(
    engine: AsyncEngine,
    client: httpx.AsyncClient,
    task_id: str,
    *,
    status: int,
    error: str,
    detail: str,
    headers: dict[str, str] | None = None,
    **request: object,
) -> httpx.Response:
    """POST to the task's entries and check the refusal and that the task's log did not change."""
    before = await count_entries(engine, task_id)
    r = await client.post(f"/v1/tasks/{task_id}/entries", headers=headers, **request)  # type: ignore[arg-type]
    assert_refused(r, status, error, detail)
    assert await count_entries(engine, task_id) == before
    return r


# ---- 401 ----------------------------------------------------------------------------------------------


async def test_append_without_authorization_is_401(
    engine: AsyncEngine, client: httpx.AsyncClient, world: World
) -> None:
    r = await _refused_append(
        engine,
        client,
        world.task_id,
        status=401,
        error="unauthenticated",
        detail="missing Authorization header",
        json={"entries": [_entry()]},
    )
    assert r.headers["www-authenticate"] == "Bearer"


async def test_append_with_wrong_scheme_is_401(
    engine: AsyncEngine, client: httpx.AsyncClient, world: World
) -> None:
    await _refused_append(
        engine,
        client,
        world.task_id,
        status=401,
        error="unauthenticated",
        detail="must be `Bearer <api key>`",
        headers={"Authorization": f"Basic {world.agent.key}"},
        json={"entries": [_entry()]},
    )


async def test_append_with_malformed_key_is_401(
    engine: AsyncEngine, client: httpx.AsyncClient, world: World
) -> None:
    await _refused_append(
        engine,
        client,
        world.task_id,
        status=401,
        error="unauthenticated",
        detail="malformed API key",
        headers={"Authorization": "Bearer not-a-loregate-key"},
        json={"entries": [_entry()]},
    )


async def test_append_with_unknown_key_is_401(
    engine: AsyncEngine, client: httpx.AsyncClient, world: World
) -> None:
    forged = f"lg_{uuid.uuid4().hex[:12]}_{uuid.uuid4().hex}"
    await _refused_append(
        engine,
        client,
        world.task_id,
        status=401,
        error="unauthenticated",
        detail="unknown or revoked API key",
        headers={"Authorization": f"Bearer {forged}"},
        json={"entries": [_entry()]},
    )


async def test_append_with_revoked_key_is_401_within_seconds(
    engine: AsyncEngine, client: httpx.AsyncClient, world: World
) -> None:
    """The gateway caches keys for 30 s, but a revocation's NOTIFY clears the cache at once."""
    agent = await make_actor(engine, ActorType.AGENT, world.org, world.project)
    r = await client.post(
        f"/v1/tasks/{world.task_id}/entries",
        headers=agent.headers,
        json={"entries": [_entry("before revocation")]},
    )
    assert r.status_code == 201, r.text  # the key is now in the gateway's cache
    key_id = key_id_of(agent.key)
    assert key_id is not None
    async with engine.begin() as conn:
        assert await revoke_key(conn, key_id)
    revoked_at = time.monotonic()
    before = await count_entries(engine, world.task_id)
    while True:
        r = await client.get(f"/v1/tasks/{world.task_id}/entries", headers=agent.headers)
        if r.status_code == 401:
            break
        assert r.status_code == 200, r.text
        assert time.monotonic() - revoked_at < 3.0, "revoked key still accepted after 3 s"
        await asyncio.sleep(0.05)
    await _refused_append(
        engine,
        client,
        world.task_id,
        status=401,
        error="unauthenticated",
        detail="unknown or revoked API key",
        headers=agent.headers,
        json={"entries": [_entry("after revocation")]},
    )
    assert await count_entries(engine, world.task_id) == before


# ---- 404 ----------------------------------------------------------------------------------------------


async def test_append_to_unknown_task_is_404(
    engine: AsyncEngine, client: httpx.AsyncClient, world: World
) -> None:
    before = await count_all_entries(engine)
    r = await client.post(
        "/v1/tasks/no-such-task-xyz/entries", headers=world.agent.headers, json={"entries": [_entry()]}
    )
    assert_refused(r, 404, "not_found", "task 'no-such-task-xyz' does not exist")
    assert await count_all_entries(engine) == before


async def test_read_of_unknown_task_is_404(client: httpx.AsyncClient, world: World) -> None:
    r = await client.get("/v1/tasks/no-such-task-xyz/entries", headers=world.agent.headers)
    assert_refused(r, 404, "not_found", "task 'no-such-task-xyz' does not exist")


# ---- 409 ----------------------------------------------------------------------------------------------


async def test_idempotency_key_reused_with_other_body_is_409(
    engine: AsyncEngine, client: httpx.AsyncClient, world: World
) -> None:
    key = f"k-{uuid.uuid4().hex}"
    r = await client.post(
        f"/v1/tasks/{world.task_id}/entries",
        headers=world.agent.headers,
        json={"entries": [_entry("first", idempotency_key=key)]},
    )
    assert r.status_code == 201, r.text
    await _refused_append(
        engine,
        client,
        world.task_id,
        status=409,
        error="conflict",
        detail=f"idempotency key '{key}' was already used with a different entry",
        headers=world.agent.headers,
        json={"entries": [_entry("second", idempotency_key=key)]},
    )


async def test_idempotency_key_conflict_refuses_whole_batch(
    engine: AsyncEngine, client: httpx.AsyncClient, world: World
) -> None:
    """A batch whose last entry clashes writes none of its fresh entries either."""
    key = f"k-{uuid.uuid4().hex}"
    r = await client.post(
        f"/v1/tasks/{world.task_id}/entries",
        headers=world.agent.headers,
        json={"entries": [_entry("first", idempotency_key=key)]},
    )
    assert r.status_code == 201, r.text
    batch = [
        _entry("fresh one"),
        _entry("fresh two", idempotency_key=f"k-{uuid.uuid4().hex}"),
        _entry("changed", idempotency_key=key),
    ]
    await _refused_append(
        engine,
        client,
        world.task_id,
        status=409,
        error="conflict",
        detail="already used with a different entry",
        headers=world.agent.headers,
        json={"entries": batch},
    )


async def test_idempotency_key_reused_on_other_task_is_409(
    engine: AsyncEngine, client: httpx.AsyncClient, world: World
) -> None:
    other_task = await open_task_http(client, world.orchestrator, world.org, world.project)
    key = f"k-{uuid.uuid4().hex}"
    r = await client.post(
        f"/v1/tasks/{world.task_id}/entries",
        headers=world.agent.headers,
        json={"entries": [_entry("same", idempotency_key=key)]},
    )
    assert r.status_code == 201, r.text
    await _refused_append(
        engine,
        client,
        other_task,
        status=409,
        error="conflict",
        detail=f"idempotency key '{key}' was already used for task '{world.task_id}'",
        headers=world.agent.headers,
        json={"entries": [_entry("same", idempotency_key=key)]},
    )


# ---- 413 ----------------------------------------------------------------------------------------------


async def test_entry_over_max_entry_bytes_is_413(
    engine: AsyncEngine, client: httpx.AsyncClient, world: World
) -> None:
    await _refused_append(
        engine,
        client,
        world.task_id,
        status=413,
        error="payload_too_large",
        detail=rf"entries\[1\] is {MAX_ENTRY + 1} bytes .* over the limit of {MAX_ENTRY}",
        headers=world.agent.headers,
        json={"entries": [_entry("fits"), _entry("x" * (MAX_ENTRY + 1))]},
    )


async def test_entry_size_counts_utf8_bytes_and_payload(
    engine: AsyncEngine, client: httpx.AsyncClient, world: World
) -> None:
    """400 Korean characters are 1,200 bytes: over a 1 KiB limit although only 400 characters long."""
    await _refused_append(
        engine,
        client,
        world.task_id,
        status=413,
        error="payload_too_large",
        detail=f"over the limit of {MAX_ENTRY}",
        headers=world.agent.headers,
        json={"entries": [_entry("가" * 400)]},
    )
    await _refused_append(
        engine,
        client,
        world.task_id,
        status=413,
        error="payload_too_large",
        detail=f"over the limit of {MAX_ENTRY}",
        headers=world.agent.headers,
        json={"entries": [_entry("small", payload={"blob": "y" * MAX_ENTRY})]},
    )


async def test_batch_over_max_batch_entries_is_413(
    engine: AsyncEngine, client: httpx.AsyncClient, world: World
) -> None:
    await _refused_append(
        engine,
        client,
        world.task_id,
        status=413,
        error="payload_too_large",
        detail=f"batch of {MAX_BATCH + 1} entries exceeds the limit of {MAX_BATCH}",
        headers=world.agent.headers,
        json={"entries": [_entry()] * (MAX_BATCH + 1)},
    )


async def test_request_over_max_request_bytes_with_content_length_is_413(
    engine: AsyncEngine, client: httpx.AsyncClient, world: World
) -> None:
    body = b'{"entries": [{"kind": "log", "content": "' + b"z" * MAX_REQUEST + b'"}]}'
    r = await _refused_append(
        engine,
        client,
        world.task_id,
        status=413,
        error="payload_too_large",
        detail=f"request body of {len(body)} bytes exceeds the limit of {MAX_REQUEST}",
        headers={**world.agent.headers, "content-type": "application/json"},
        content=body,
    )
    assert "transfer-encoding" not in r.request.headers and r.request.headers["content-length"] == str(
        len(body)
    )


async def test_request_over_max_request_bytes_chunked_is_413(
    engine: AsyncEngine, client: httpx.AsyncClient, world: World
) -> None:
    """Without Content-Length the gateway counts the chunks as they arrive."""

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"entries": [{"kind": "log", "content": "'
        for _ in range(5):
            yield b"z" * 4096
        yield b'"}]}'

    r = await _refused_append(
        engine,
        client,
        world.task_id,
        status=413,
        error="payload_too_large",
        detail=f"exceeds the limit of {MAX_REQUEST} bytes",
        headers={**world.agent.headers, "content-type": "application/json"},
        content=chunks(),
    )
    assert r.request.headers["transfer-encoding"] == "chunked"


async def test_chunked_request_under_the_limit_is_accepted(
    engine: AsyncEngine, client: httpx.AsyncClient, world: World
) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"entries": [{"kind": "log", '
        yield b'"content": "sent in chunks"}]}'

    before = await count_entries(engine, world.task_id)
    r = await client.post(
        f"/v1/tasks/{world.task_id}/entries",
        content=chunks(),
        headers={**world.agent.headers, "content-type": "application/json"},
    )
    assert r.status_code == 201, r.text
    assert await count_entries(engine, world.task_id) == before + 1


# ---- 422 ----------------------------------------------------------------------------------------------


async def test_malformed_json_is_422(engine: AsyncEngine, client: httpx.AsyncClient, world: World) -> None:
    await _refused_append(
        engine,
        client,
        world.task_id,
        status=422,
        error="validation_error",
        detail="JSON decode error",
        content=b'{"entries": [{"kind": "log", ',
        headers={**world.agent.headers, "content-type": "application/json"},
    )


async def test_unknown_kind_is_422(engine: AsyncEngine, client: httpx.AsyncClient, world: World) -> None:
    r = await _refused_append(
        engine,
        client,
        world.task_id,
        status=422,
        error="validation_error",
        detail="entries.0.kind: Input should be 'log'",
        headers=world.agent.headers,
        json={"entries": [{"kind": "rumour", "content": "x"}]},
    )
    assert r.json()["errors"][0]["loc"] == ["body", "entries", 0, "kind"]


async def test_missing_fields_are_422(engine: AsyncEngine, client: httpx.AsyncClient, world: World) -> None:
    await _refused_append(
        engine,
        client,
        world.task_id,
        status=422,
        error="validation_error",
        detail="entries.0.content: Field required",
        headers=world.agent.headers,
        json={"entries": [{"kind": "log"}]},
    )
    await _refused_append(
        engine,
        client,
        world.task_id,
        status=422,
        error="validation_error",
        detail="entries: Field required",
        headers=world.agent.headers,
        json={},
    )


@pytest.mark.parametrize("field", ["actor", "actor_id", "actor_type", "principal", "seq", "created_at"])
async def test_forged_entry_fields_are_422(
    engine: AsyncEngine, client: httpx.AsyncClient, world: World, field: str
) -> None:
    """The actor is the authenticated principal: an entry naming one (or its seq) is refused outright."""
    await _refused_append(
        engine,
        client,
        world.task_id,
        status=422,
        error="validation_error",
        detail=f"entries.0.{field}: Extra inputs are not permitted",
        headers=world.agent.headers,
        json={"entries": [_entry(**{field: world.orchestrator.principal.id})]},
    )


async def test_forged_actor_beside_the_batch_is_422(
    engine: AsyncEngine, client: httpx.AsyncClient, world: World
) -> None:
    await _refused_append(
        engine,
        client,
        world.task_id,
        status=422,
        error="validation_error",
        detail="actor: Extra inputs are not permitted",
        headers=world.agent.headers,
        json={"entries": [_entry()], "actor": world.orchestrator.principal.id},
    )


async def test_actor_in_payload_does_not_set_the_actor(client: httpx.AsyncClient, world: World) -> None:
    """A payload may mention anyone; the stored actor is still the key's principal."""
    forged = {"actor": world.orchestrator.principal.id, "actor_type": "human"}
    r = await client.post(
        f"/v1/tasks/{world.task_id}/entries",
        headers=world.agent.headers,
        json={"entries": [_entry("claims to be someone else", payload=forged)]},
    )
    assert r.status_code == 201, r.text
    seq = r.json()["entries"][0]["seq"]
    page = await client.get(
        f"/v1/tasks/{world.task_id}/entries",
        headers=world.agent.headers,
        params={"after_seq": seq - 1, "limit": 1},
    )
    stored = page.json()["entries"][0]
    assert (stored["actor"], stored["actor_type"], stored["payload"]) == (
        world.agent.principal.id,
        "agent",
        forged,
    )


async def test_empty_batch_is_422(engine: AsyncEngine, client: httpx.AsyncClient, world: World) -> None:
    await _refused_append(
        engine,
        client,
        world.task_id,
        status=422,
        error="validation_error",
        detail="entries: List should have at least 1 item",
        headers=world.agent.headers,
        json={"entries": []},
    )


@pytest.mark.parametrize(
    "entry",
    [
        {"kind": "log", "content": "before\x00after"},
        {"kind": "log", "content": "ok", "payload": {"note": "nul\x00inside"}},
        {"kind": "log", "content": "ok", "payload": {"key\x00": 1}},
        {"kind": "log", "content": "ok", "idempotency_key": "key\x00"},
    ],
    ids=["content", "payload-value", "payload-key", "idempotency-key"],
)
async def test_nul_character_is_422(
    engine: AsyncEngine, client: httpx.AsyncClient, world: World, entry: dict[str, object]
) -> None:
    """Postgres cannot store U+0000: the batch is refused, never half-written and never a 500."""
    await _refused_append(
        engine,
        client,
        world.task_id,
        status=422,
        error="invalid_input",
        detail=r"entries\[1\] contains a NUL character",
        headers=world.agent.headers,
        json={"entries": [_entry("fine"), entry]},
    )


async def test_batch_repeating_an_idempotency_key_is_422(
    engine: AsyncEngine, client: httpx.AsyncClient, world: World
) -> None:
    await _refused_append(
        engine,
        client,
        world.task_id,
        status=422,
        error="invalid_input",
        detail=r"entries\[1\] repeats idempotency key 'dup'",
        headers=world.agent.headers,
        json={"entries": [_entry("a", idempotency_key="dup"), _entry("b", idempotency_key="dup")]},
    )


@pytest.mark.parametrize("bad_id", ["has space", "-leading-dash", "a" * 129, "semi;colon", "nul%00byte"])
async def test_bad_task_id_in_path_is_422(
    engine: AsyncEngine, client: httpx.AsyncClient, world: World, bad_id: str
) -> None:
    before = await count_all_entries(engine)
    r = await client.post(
        f"/v1/tasks/{bad_id}/entries", headers=world.agent.headers, json={"entries": [_entry()]}
    )
    assert_refused(r, 422, "validation_error", "task_id: (String should|should be 1 to 128)")
    r = await client.get(f"/v1/tasks/{bad_id}/entries", headers=world.agent.headers)
    assert_refused(r, 422, "validation_error", "task_id: (String should|should be 1 to 128)")
    assert await count_all_entries(engine) == before


@pytest.mark.parametrize("bad_id", ["has space", "-leading-dash", "a" * 129, "nul\x00byte"])
async def test_bad_task_id_on_open_is_422(
    engine: AsyncEngine, client: httpx.AsyncClient, world: World, bad_id: str
) -> None:
    before = await count_tasks(engine, world.org)
    r = await client.post(
        "/v1/tasks",
        headers=world.orchestrator.headers,
        json={
            "org": world.org,
            "project": world.project,
            "worktree": "main",
            "description": "d",
            "task_id": bad_id,
        },
    )
    assert_refused(r, 422, "validation_error", "task_id: (String should|should be 1 to 128)")
    assert await count_tasks(engine, world.org) == before


@pytest.mark.parametrize(
    ("params", "detail"),
    [
        ({"limit": "0"}, "limit: Input should be greater than or equal to 1"),
        ({"limit": "many"}, "limit: Input should be a valid integer"),
        ({"limit": "10001"}, "limit: Input should be less than or equal to 10000"),
        ({"after_seq": "-1"}, "after_seq: Input should be greater than or equal to 0"),
        ({"after_seq": "1.5"}, "after_seq: Input should be a valid integer"),
    ],
)
async def test_bad_paging_params_are_422(
    client: httpx.AsyncClient, world: World, params: dict[str, str], detail: str
) -> None:
    r = await client.get(f"/v1/tasks/{world.task_id}/entries", headers=world.agent.headers, params=params)
    assert_refused(r, 422, "validation_error", detail)


async def test_unknown_policy_scope_is_422(
    engine: AsyncEngine, client: httpx.AsyncClient, world: World
) -> None:
    """A rule for a scope that does not exist would silently match nothing: refuse it."""
    org, project = new_tenant()
    admin = await make_actor(engine, ActorType.HUMAN, org, project, is_admin=True)
    before = (await client.get("/v1/admin/policy", headers=admin.headers)).json()["rules"]
    r = await client.post(
        "/v1/admin/policy",
        headers=admin.headers,
        json={"role": "agent", "scope": "galaxy", "action": "write", "effect": "deny"},
    )
    assert_refused(r, 422, "validation_error", "scope: ")
    assert (await client.get("/v1/admin/policy", headers=admin.headers)).json()["rules"] == before


async def test_unknown_task_fields_on_open_are_422(
    engine: AsyncEngine, client: httpx.AsyncClient, world: World
) -> None:
    before = await count_tasks(engine, world.org)
    r = await client.post(
        "/v1/tasks",
        headers=world.orchestrator.headers,
        json={
            "org": world.org,
            "project": world.project,
            "worktree": "main",
            "description": "d",
            "created_by": world.agent.principal.id,
        },
    )
    assert_refused(r, 422, "validation_error", "created_by: Extra inputs are not permitted")
    assert await count_tasks(engine, world.org) == before


# ---- 415 ----------------------------------------------------------------------------------------------


async def test_gzip_encoded_body_is_415_naming_the_header(
    engine: AsyncEngine, client: httpx.AsyncClient, world: World
) -> None:
    import gzip
    import json

    body = gzip.compress(json.dumps({"entries": [_entry("zipped")]}).encode())
    await _refused_append(
        engine,
        client,
        world.task_id,
        status=415,
        error="unsupported_media_type",
        detail="Content-Encoding 'gzip' is not supported",
        headers={**world.agent.headers, "Content-Type": "application/json", "Content-Encoding": "gzip"},
        content=body,
    )


async def test_identity_encoded_body_is_read(client: httpx.AsyncClient, world: World) -> None:
    r = await client.post(
        f"/v1/tasks/{world.task_id}/entries",
        headers={**world.agent.headers, "Content-Encoding": "identity"},
        json={"entries": [_entry("plain")]},
    )
    assert r.status_code == 201, r.text


# ---- Idempotency-Key header ---------------------------------------------------------------------------


async def test_idempotency_key_header_replay_returns_first_answer_and_writes_nothing(
    engine: AsyncEngine, client: httpx.AsyncClient, world: World
) -> None:
    headers = {**world.agent.headers, "Idempotency-Key": f"h-{uuid.uuid4().hex}"}
    url = f"/v1/tasks/{world.task_id}/entries"
    first = await client.post(url, headers=headers, json={"entries": [_entry("once")]})
    assert first.status_code == 201, first.text
    before = await count_entries(engine, world.task_id)
    again = await client.post(url, headers=headers, json={"entries": [_entry("once")]})
    assert again.status_code == 201, again.text
    assert [e["id"] for e in again.json()["entries"]] == [e["id"] for e in first.json()["entries"]]
    assert again.json()["entries"][0]["replayed"] is True
    assert await count_entries(engine, world.task_id) == before


async def test_idempotency_key_header_keys_each_entry_of_a_batch(
    engine: AsyncEngine, client: httpx.AsyncClient, world: World
) -> None:
    key = f"h-{uuid.uuid4().hex}"
    headers = {**world.agent.headers, "Idempotency-Key": key}
    url = f"/v1/tasks/{world.task_id}/entries"
    body = {"entries": [_entry("a"), _entry("b", idempotency_key=f"{key}:1")]}
    first = await client.post(url, headers=headers, json=body)
    assert first.status_code == 201, first.text
    before = await count_entries(engine, world.task_id)
    again = await client.post(url, headers=headers, json=body)
    assert [e["replayed"] for e in again.json()["entries"]] == [True, True]
    assert await count_entries(engine, world.task_id) == before


async def test_idempotency_key_header_and_body_differing_is_422_naming_both(
    engine: AsyncEngine, client: httpx.AsyncClient, world: World
) -> None:
    await _refused_append(
        engine,
        client,
        world.task_id,
        status=422,
        error="invalid_input",
        detail="Idempotency-Key header gives 'from-header' but the body's idempotency_key is 'from-body'",
        headers={**world.agent.headers, "Idempotency-Key": "from-header"},
        json={"entries": [_entry("x", idempotency_key="from-body")]},
    )


async def test_idempotency_key_header_given_twice_with_different_values_is_422_and_writes_nothing(
    engine: AsyncEngine, client: httpx.AsyncClient, world: World
) -> None:
    url = f"/v1/tasks/{world.task_id}/entries"
    before = await count_entries(engine, world.task_id)
    headers = [*world.agent.headers.items(), ("Idempotency-Key", "first"), ("Idempotency-Key", "second")]
    r = await client.post(url, headers=headers, json={"entries": [_entry("twice")]})
    assert r.status_code == 422, r.text
    assert r.json()["error"] == "invalid_input"
    assert "Idempotency-Key header given 2 times with different values" in r.json()["detail"]
    assert await count_entries(engine, world.task_id) == before
    # the same value twice is one key
    key = f"h-{uuid.uuid4().hex}"
    same = [*world.agent.headers.items(), ("Idempotency-Key", key), ("Idempotency-Key", key)]
    r = await client.post(url, headers=same, json={"entries": [_entry("same twice")]})
    assert r.status_code == 201, r.text
    again = await client.post(
        url, headers={**world.agent.headers, "Idempotency-Key": key}, json={"entries": [_entry("same twice")]}
    )
    assert again.json()["entries"][0]["replayed"] is True
