"""Parallel writers into one task: every acknowledged entry stored exactly once, sequence numbers 1..N.

16 agents (each its own principal and HTTP connection) write 200 entries each into the same task through
two gateways — the in-process one and a separate OS process — mixing single entries and small batches.
Some requests are sent again after their answer (a client retry), and some are sent twice at the same time
(a response lost in flight, retried before the first attempt finished). Every retry must return the first
answer and write nothing.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType
from governance.storage.tables import staging_entries
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.gateway import gateway_process
from tests.utils.staging import open_task_http
from tests.utils.tenancy import task_key_of

CLIENTS = 16
ENTRIES_PER_CLIENT = 200
BATCH_SIZES = (1, 1, 1, 2, 3, 5)
RESEND_RATE = 0.10  # sent again after the answer came back
LOST_RESPONSE_RATE = 0.05  # sent twice concurrently
UNKEYED_EVERY = 9  # every ninth entry carries no idempotency key (and is never retried)


@dataclass
class Ack:
    """What the gateway acknowledged for one entry the test meant to write."""

    content: str
    id: int
    seq: int


@dataclass
class Load:
    """The outcome of the parallel run."""

    task_id: str
    reader: Actor
    acks: list[Ack] = field(default_factory=list)
    resends: int = 0
    concurrent_duplicates: int = 0
    replay_mismatches: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def second_gateway(database_url: str) -> Iterator[str]:
    with gateway_process(database_url) as url:
        yield url


def _pairs(r: httpx.Response) -> list[tuple[int, int]]:
    return [(e["id"], e["seq"]) for e in r.json()["entries"]]


async def _writer(index: int, agent: Actor, base_url: str, load: Load) -> None:
    """One agent: 200 entries in requests of 1-5, with retries decided by a seeded generator."""
    rng = random.Random(index)
    entries = [
        {
            "kind": "log",
            "content": f"client {index} entry {i}",
            **({} if i % UNKEYED_EVERY == 0 else {"idempotency_key": f"c{index}-e{i}"}),
        }
        for i in range(ENTRIES_PER_CLIENT)
    ]
    position = 0
    async with httpx.AsyncClient(base_url=base_url, headers=agent.headers, timeout=60) as client:
        url = f"/v1/tasks/{load.task_id}/entries"
        while position < len(entries):
            batch = entries[position : position + rng.choice(BATCH_SIZES)]
            position += len(batch)
            body = {"entries": batch}
            retryable = all("idempotency_key" in e for e in batch)
            roll = rng.random()
            if retryable and roll < LOST_RESPONSE_RATE:
                first, second = await asyncio.gather(client.post(url, json=body), client.post(url, json=body))
                load.concurrent_duplicates += 1
                if first.status_code != 201 or second.status_code != 201:
                    load.failures.append(
                        f"duplicate pair: {first.status_code} {first.text} / {second.status_code}"
                    )
                    continue
                if _pairs(first) != _pairs(second):
                    load.replay_mismatches.append(
                        f"concurrent duplicates differ: {_pairs(first)} {_pairs(second)}"
                    )
                answer = first
            else:
                answer = await client.post(url, json=body)
                if answer.status_code != 201:
                    load.failures.append(f"{answer.status_code} {answer.text}")
                    continue
                if retryable and roll < LOST_RESPONSE_RATE + RESEND_RATE:
                    again = await client.post(url, json=body)
                    load.resends += 1
                    replayed = again.status_code == 201 and all(
                        e["replayed"] for e in again.json()["entries"]
                    )
                    if not replayed or _pairs(again) != _pairs(answer):
                        load.replay_mismatches.append(
                            f"resend: {answer.text} then {again.status_code} {again.text}"
                        )
            for entry, (entry_id, seq) in zip(batch, _pairs(answer), strict=True):
                load.acks.append(Ack(str(entry["content"]), entry_id, seq))


@pytest.fixture(scope="module")
async def load(engine: AsyncEngine, gateway_url: str, second_gateway: str) -> Load:
    org, project = new_tenant()
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    agents = [await make_actor(engine, ActorType.AGENT, org, project) for _ in range(CLIENTS)]
    async with httpx.AsyncClient(base_url=gateway_url) as client:
        task_id = await open_task_http(client, orchestrator, org, project)
    result = Load(task_id=task_id, reader=orchestrator)
    await asyncio.wait_for(
        asyncio.gather(
            *(
                _writer(i, agent, gateway_url if i % 2 == 0 else second_gateway, result)
                for i, agent in enumerate(agents)
            )
        ),
        timeout=240,
    )
    return result


async def _stored(engine: AsyncEngine, task_id: str) -> list[tuple[int, int, str]]:
    async with engine.connect() as conn:
        rows = await conn.execute(
            select(staging_entries.c.id, staging_entries.c.seq, staging_entries.c.content)
            .where(staging_entries.c.task_id == task_key_of(task_id))
            .order_by(staging_entries.c.seq)
        )
        return [(r.id, r.seq, r.content) for r in rows]


async def test_parallel_writers_get_every_request_acknowledged(load: Load) -> None:
    assert load.failures == []
    assert len(load.acks) == CLIENTS * ENTRIES_PER_CLIENT
    assert load.resends > 50 and load.concurrent_duplicates > 20  # the retry paths were really exercised


async def test_parallel_writers_store_each_acknowledged_entry_exactly_once(
    engine: AsyncEngine, load: Load
) -> None:
    stored = await _stored(engine, load.task_id)
    assert len(stored) == CLIENTS * ENTRIES_PER_CLIENT
    by_id = {entry_id: (seq, content) for entry_id, seq, content in stored}
    assert len(by_id) == len(stored)
    assert sorted(a.id for a in load.acks) == sorted(by_id)
    for ack in load.acks:
        assert by_id[ack.id] == (ack.seq, ack.content)


async def test_parallel_writers_get_gapless_sequence_numbers(engine: AsyncEngine, load: Load) -> None:
    stored = await _stored(engine, load.task_id)
    assert [seq for _, seq, _ in stored] == list(range(1, CLIENTS * ENTRIES_PER_CLIENT + 1))
    assert sorted(a.seq for a in load.acks) == list(range(1, CLIENTS * ENTRIES_PER_CLIENT + 1))


async def test_retries_return_the_original_id_and_seq(load: Load) -> None:
    assert load.replay_mismatches == []


async def test_read_back_paging_returns_everything_once_in_order(
    engine: AsyncEngine, gateway_url: str, load: Load
) -> None:
    pages: list[list[dict[str, object]]] = []
    after = 0
    async with httpx.AsyncClient(base_url=gateway_url, headers=load.reader.headers, timeout=30) as client:
        while True:
            r = await client.get(
                f"/v1/tasks/{load.task_id}/entries", params={"after_seq": after, "limit": 173}
            )
            assert r.status_code == 200, r.text
            page = r.json()
            pages.append(page["entries"])
            if page["next_after_seq"] is None:
                break
            after = page["next_after_seq"]
    read = [entry for page in pages for entry in page]
    assert all(len(page) == 173 for page in pages[:-1]) and len(pages[-1]) <= 173
    assert [(e["id"], e["seq"], e["content"]) for e in read] == await _stored(engine, load.task_id)
