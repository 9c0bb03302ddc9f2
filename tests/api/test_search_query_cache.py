"""Over real HTTP: a repeated search or context query is not embedded again (counted at the endpoint)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import numpy as np
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.config import Settings
from governance.scopes import ActorType
from tests.utils.factories import make_actor, new_tenant
from tests.utils.fake_openai import FakeOpenAI
from tests.utils.gateway import running_gateway
from tests.utils.memory_factories import add_memory, new_task


def _vector(text: str) -> list[float]:
    rng = np.random.default_rng(sum(text.encode()) + len(text))
    return [float(x) for x in rng.normal(size=384)]


@pytest.fixture(scope="module")
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(embed=lambda texts: [_vector(t) for t in texts]) as fake:
        yield fake


@pytest.fixture(scope="module")
def cached_gateway(settings: Settings, fake_openai: FakeOpenAI) -> Iterator[str]:
    update = {
        "embedder": "openai",
        "embedding_base_url": fake_openai.base_url,
        "query_embedding_cache_size": 8,
    }
    with running_gateway(settings.model_copy(update=update)) as url:
        yield url


async def test_repeated_search_query_is_embedded_once(
    cached_gateway: str, fake_openai: FakeOpenAI, engine: AsyncEngine
) -> None:
    org, project = new_tenant()
    async with engine.begin() as conn:
        task = await new_task(conn, org=org, project=project)
        await add_memory(
            conn,
            task,
            title="Webhook retries",
            content="The Stripe webhook handler acks first and processes in a queue",
            embedding=np.asarray(_vector("webhook"), dtype=np.float32) / np.linalg.norm(_vector("webhook")),
        )
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    query = f"stripe webhook handler {task.task_id}"  # unique to this test
    body = {"query": query, "task_id": task.task_id}

    async with httpx.AsyncClient(base_url=cached_gateway, timeout=30, headers=agent.headers) as client:
        answers = [await client.post("/v1/search", json=body) for _ in range(3)]
        context = await client.post("/v1/context", json=body)

    assert [a.status_code for a in answers] == [200, 200, 200] and context.status_code == 200
    cited = [[hit["citation"] for hit in a.json()["results"]] for a in answers]
    assert cited[0] and cited[0] == cited[2]
    embedded = [t for r in fake_openai.embedding_requests() for t in r["input"]]
    assert embedded.count(query) == 1
