"""`embedder="openai"`: plan and publish embed through an OpenAI-compatible `/v1/embeddings` endpoint.

The endpoint is a real HTTP server on loopback answering deterministic vectors, reached through the real
`openai` client the worker builds from settings. What it returns is what lands in `memories.embedding`;
vectors of the wrong dimension stop the promotion with an error that says so, and write no rows.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client

from tests.utils.factories import new_tenant
from tests.utils.fake_openai import FakeOpenAI
from tests.utils.promotion_factories import Entry, StagedTask, active_memories, events_of, make_task
from workflows.promotion import PromotionWorkflow
from workflows.promotion_contract import (
    PromotionInput,
    PromotionResult,
    PromotionState,
    PromotionStatus,
    Verification,
    workflow_id_for,
)

DIM = 384  # the schema's dimension (migrations/versions/0001_initial_schema.py)
MODEL = "fake-embed-3"
ENTRIES = [
    Entry("fact", "deploy.target: the blue cluster in eu-west", {"key": "deploy.target"}),
    Entry("result", "Deployed to the blue cluster."),
]


def bag_of_words(text: str, dim: int = DIM) -> list[float]:
    """A deterministic, unnormalised vector: word counts hashed into `dim` buckets."""
    vector = [0.0] * dim
    for word in re.findall(r"\w+", text.lower()):
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % dim] += 1.0
    return vector


def _unit(vector: list[float]) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32)
    return v / np.linalg.norm(v)


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def _embedder_settings(fake: FakeOpenAI) -> dict[str, Any]:
    return {
        "embedder": "openai",
        "embedding_base_url": fake.base_url,
        "embedding_model": MODEL,
        "embedding_dim": DIM,
    }


async def _promote(
    client: Client, make_worker: Any, task_queue: str, task: StagedTask, **settings: Any
) -> tuple[PromotionResult, PromotionStatus]:
    async with make_worker(client, task_queue, **settings):
        handle = await client.start_workflow(
            PromotionWorkflow.run,
            PromotionInput(
                task.task_id,
                "task",
                verification=Verification("tests_passed", True),
                requested_by=task.requested_by,
            ),
            id=workflow_id_for(task.task_id),
            task_queue=task_queue,
        )
        result: PromotionResult = await handle.result()
        status: PromotionStatus = await handle.query(PromotionWorkflow.state)
    return result, status


async def test_promotion_openai_embedder_stores_endpoint_vectors(
    ts_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str, fake_openai: FakeOpenAI
) -> None:
    fake_openai.embed = lambda texts: [bag_of_words(t) for t in texts]
    org, project = new_tenant()
    task = await make_task(engine, org, project, ENTRIES, description="deploy to the blue cluster")

    result, _ = await _promote(
        ts_env.client, make_worker, task_queue, task, **_embedder_settings(fake_openai)
    )

    assert result.state == PromotionState.PUBLISHED
    active = await active_memories(engine, task_id=task.task_id)
    assert {m.memory_type for m in active} == {"fact", "episode"}
    requests = fake_openai.embedding_requests()
    assert requests and all(r["model"] == MODEL for r in requests)
    sent = [text for r in requests for text in r["input"]]
    for memory in active:
        assert memory.content in sent
        # the endpoint's vector, normalised: plan embedded through it, publish stored what plan computed
        np.testing.assert_allclose(
            np.asarray(memory.embedding), _unit(bag_of_words(memory.content)), atol=1e-6
        )


async def test_promotion_openai_embedder_wrong_dimension_fails_clearly_without_rows(
    ts_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str, fake_openai: FakeOpenAI
) -> None:
    fake_openai.embed = lambda texts: [bag_of_words(t, dim=16) for t in texts]
    org, project = new_tenant()
    task = await make_task(engine, org, project, ENTRIES, description="deploy to the blue cluster")

    result, status = await _promote(
        ts_env.client, make_worker, task_queue, task, **_embedder_settings(fake_openai)
    )

    assert result.state == PromotionState.FAILED and status.state == PromotionState.FAILED
    assert "16-d" in str(status.error) and f"{DIM}-d" in str(status.error)
    assert await active_memories(engine, task_id=task.task_id) == []
    assert await events_of(engine, task.task_id) == []
    # a misconfiguration is not retried for minutes: one attempt tells the operator what is wrong
    assert len(fake_openai.embedding_requests()) == 1
