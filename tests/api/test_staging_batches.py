"""Batches through the append path: stored as the route stores them, all or nothing, gapless under load.

The append path decodes a body with msgspec and works out a batch's hashes, sizes and rows in one pass
(api/schemas/staging_json.py, governance/staging.validate_batch). What a client and the audit log see must
not differ from the route's way (pydantic's `EntriesIn`, then the same use case): the same rows to the
byte, the same refusals, nothing of a refused batch stored, and parallel batch writers through two gateway
processes get every sequence number once.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType, EntryKind
from governance.staging import EntryDraft, canonical_payload, request_hash
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.gateway import gateway_process
from tests.utils.staging import assert_refused, count_entries, open_task_http
from tests.utils.tenancy import task_key_of

# what a batch may hold that is easy to get wrong: escapes, control characters, non-ASCII text and keys,
# payloads of every JSON type, keys out of order, big integers, floats that print in exponent form
TRICKY: list[dict[str, Any]] = [
    {"kind": "log", "content": "plain"},
    {"kind": "tool_output", "content": 'q " b \\ n\n t\t \x01 \x7f', "payload": {"b": 1, "a": [1.5, None]}},
    {"kind": "decision", "content": "한국어 Ümlaut \u2028 🙂", "payload": {"키": "값", "n": -0.0}},
    {"kind": "error", "content": "", "payload": "a bare string", "idempotency_key": "키-1"},
    {"kind": "fact", "content": "x", "payload": [1, {"z": True, "y": False}], "idempotency_key": "k-2"},
    {"kind": "thought", "content": "numbers", "payload": {"big": 2**80, "f": 1e300, "g": 1e-7}},
    {"kind": "insight", "content": "nested", "payload": {"a": {"b": {"c": [[], {}, ""]}}}},
]


@pytest.fixture
async def client(gateway_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=gateway_url, timeout=60) as c:
        yield c


@pytest.fixture(scope="module")
def second_gateway(database_url: str) -> Iterator[str]:
    with gateway_process(database_url) as url:
        yield url


async def _world(engine: AsyncEngine, client: httpx.AsyncClient, tasks: int = 1) -> tuple[Actor, list[str]]:
    """An agent and `tasks` open tasks of one tenant."""
    org, project = new_tenant()
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    return agent, [await open_task_http(client, orchestrator, org, project) for _ in range(tasks)]


async def _stored_as(engine: AsyncEngine, task_id: str) -> list[tuple[Any, ...]]:
    """The task's rows as stored, without the writer (each task here has its own)."""
    return [row[:6] for row in await _rows(engine, task_id)]


async def _rows(engine: AsyncEngine, task_id: str) -> list[tuple[Any, ...]]:
    async with engine.connect() as conn:
        result = await conn.execute(
            text(
                "SELECT seq, kind, content, payload::text, idempotency_key, request_hash, actor_id "
                "FROM staging_entries WHERE task_id = :task ORDER BY seq"
            ),
            {"task": task_key_of(task_id)},
        )
        return [tuple(r) for r in result]


async def test_batch_through_the_append_path_stores_the_routes_rows_byte_for_byte(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    agent, (fast, route) = await _world(engine, client, tasks=2)
    other = await make_actor(engine, ActorType.AGENT, agent.principal.org, agent.principal.project)
    body = json.dumps({"entries": TRICKY}, ensure_ascii=False).encode()
    answer = await client.post(
        f"/v1/tasks/{fast}/entries",
        headers={**agent.headers, "Content-Type": "application/json"},
        content=body,
    )
    assert answer.status_code == 201, answer.text
    # a byte-order mark: msgspec and pydantic refuse it, the route's `json.loads` takes it
    answer = await client.post(
        f"/v1/tasks/{route}/entries",
        headers={**other.headers, "Content-Type": "application/json"},
        content=b"\xef\xbb\xbf" + body,
    )
    assert answer.status_code == 201, answer.text
    stored = await _stored_as(engine, fast)
    assert stored == await _stored_as(engine, route)
    # and what the entry-by-entry rules make of each entry: the canonical payload and the retry hash
    for row, entry in zip(stored, TRICKY, strict=True):
        draft = EntryDraft(EntryKind(entry["kind"]), entry["content"], entry.get("payload"))
        assert row[1:6] == (
            entry["kind"],
            entry["content"],
            canonical_payload(entry.get("payload")),
            entry.get("idempotency_key"),
            request_hash(draft),
        )


@pytest.mark.parametrize(
    ("bad", "status", "error", "detail"),
    [
        ({"kind": "log", "content": "nul \x00 here"}, 422, "invalid_input", r"entries\[57\] contains a NUL"),
        ({"kind": "log", "content": "x" * 70_000}, 413, "payload_too_large", r"entries\[57\] is 70000 bytes"),
        (
            {"kind": "log", "content": "x", "payload": {"decay_policy": "never"}},
            422,
            "invalid_input",
            r"entries\[57\]\.payload\.decay_policy",
        ),
        ({"kind": "no-such-kind", "content": "x"}, 422, "validation_error", "kind"),
        ({"kind": "log", "content": "x", "actor": "someone else"}, 422, "validation_error", "actor"),
        ({"kind": "log", "content": "x", "idempotency_key": ""}, 422, "validation_error", "idempotency_key"),
    ],
    ids=["nul", "too-big", "bad-decay-policy", "unknown-kind", "extra-field", "empty-key"],
)
async def test_batch_with_one_bad_entry_writes_nothing(
    engine: AsyncEngine, client: httpx.AsyncClient, bad: dict[str, Any], status: int, error: str, detail: str
) -> None:
    agent, (task_id,) = await _world(engine, client)
    entries = [{"kind": "log", "content": f"good {i}"} for i in range(100)]
    entries[57] = bad
    answer = await client.post(
        f"/v1/tasks/{task_id}/entries", headers=agent.headers, json={"entries": entries}
    )
    assert_refused(answer, status, error, detail)
    assert await count_entries(engine, task_id) == 0
    # and the task's counter moved for nothing: the next batch starts at 1
    answer = await client.post(
        f"/v1/tasks/{task_id}/entries", headers=agent.headers, json={"entries": entries[:3]}
    )
    assert [e["seq"] for e in answer.json()["entries"]] == [1, 2, 3]


async def test_parallel_batch_writers_through_two_gateways_get_gapless_sequences(
    engine: AsyncEngine, gateway_url: str, second_gateway: str
) -> None:
    writers, batches, size = 8, 6, 100
    org, project = new_tenant()
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    agents = [await make_actor(engine, ActorType.AGENT, org, project) for _ in range(writers)]
    async with httpx.AsyncClient(base_url=gateway_url) as c:
        task_id = await open_task_http(c, orchestrator, org, project)
    acked: list[tuple[int, int, str]] = []

    async def writer(index: int, agent: Actor) -> None:
        url = gateway_url if index % 2 == 0 else second_gateway
        async with httpx.AsyncClient(base_url=url, headers=agent.headers, timeout=120) as c:
            for b in range(batches):
                contents = [f"writer {index} batch {b} entry {i}" for i in range(size)]
                # keyed, so a batch answered 503 (the database busy past its bound: "retry later with your
                # idempotency keys") is sent again as the gateway asks, and never stored twice
                body = {
                    "entries": [
                        {
                            "kind": "tool_output",
                            "content": t,
                            "payload": {"i": i},
                            "idempotency_key": f"w{index}-b{b}-e{i}",
                        }
                        for i, t in enumerate(contents)
                    ]
                }
                answer = await c.post(f"/v1/tasks/{task_id}/entries", json=body)
                for _ in range(5):
                    if answer.status_code != 503:
                        break
                    await asyncio.sleep(0.5)
                    answer = await c.post(f"/v1/tasks/{task_id}/entries", json=body)
                assert answer.status_code == 201, answer.text
                seqs = [e["seq"] for e in answer.json()["entries"]]
                assert seqs == list(range(seqs[0], seqs[0] + size))  # one batch, one run of numbers
                acked.extend(
                    (e["id"], e["seq"], t) for e, t in zip(answer.json()["entries"], contents, strict=True)
                )

    await asyncio.wait_for(asyncio.gather(*(writer(i, a) for i, a in enumerate(agents))), timeout=240)
    total = writers * batches * size
    stored = [(r[0], r[2]) for r in await _rows(engine, task_id)]
    assert [seq for seq, _ in stored] == list(range(1, total + 1))
    assert sorted((seq, content) for _, seq, content in acked) == stored
