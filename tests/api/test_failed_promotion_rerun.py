"""A promotion that failed for good runs again under its own number; what it shows of the failure is one line.

The workflow records `failed` and completes, so Temporal's "only a failed run may reuse the id" refused the
next start: a task whose plan failed once (an embedding endpoint misconfigured, a value the database could
not load) could never be promoted, whatever was fixed or appended. And an `expires_at` in the year 10000
in UTC was accepted at append, then failed every plan of its task.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from temporalio.client import Client

from governance.config import Settings
from tests.utils.factories import Actor
from tests.utils.fake_openai import FakeOpenAI
from tests.utils.gateway import running_gateway
from tests.utils.promotion_gateway import (
    open_task,
    running_worker,
    stage,
    start_promotion,
    temporal_settings,
    wait_promotion_state,
)
from tests.workflows.test_promotion_openai_embedder import DIM, bag_of_words

MODEL = "fake-embed-rerun"


@pytest.fixture(scope="module")
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture(scope="module")
def rerun_settings(settings: Settings, temporal: Client, fake_openai: FakeOpenAI) -> Settings:
    return temporal_settings(
        settings,
        temporal,
        embedder="openai",
        embedding_base_url=fake_openai.base_url,
        embedding_model=MODEL,
        embedding_dim=DIM,
    )


@pytest.fixture(scope="module")
async def rerun_http(rerun_settings: Settings, temporal: Client) -> AsyncIterator[httpx.AsyncClient]:
    with running_gateway(rerun_settings) as url:
        async with running_worker(temporal, rerun_settings):
            async with httpx.AsyncClient(base_url=url, timeout=90) as client:
                yield client


async def test_a_failed_promotion_runs_again_under_its_number(
    rerun_http: httpx.AsyncClient, team: dict[str, Actor], fake_openai: FakeOpenAI
) -> None:
    http, orchestrator = rerun_http, team["orchestrator"]
    task_id = await open_task(http, orchestrator, "deploy to the blue cluster")
    await stage(
        http, team["agent"], task_id, [{"kind": "fact", "content": "deploy.target: the blue cluster"}]
    )
    fake_openai.embed = lambda texts: [bag_of_words(t, dim=16) for t in texts]
    await start_promotion(http, orchestrator, task_id, "task")
    failed = await wait_promotion_state(http, orchestrator.headers, task_id, "failed")
    assert failed["number"] == 1 and "\n" not in failed["error"] and "16-d" in failed["error"], failed

    fake_openai.embed = lambda texts: [bag_of_words(t) for t in texts]
    again = await http.post(
        f"/v1/tasks/{task_id}/promotion",
        headers=orchestrator.headers,
        json={"target_scope": "task", "verification": {"source": "tests_passed", "success": True}},
    )
    assert again.status_code == 202, again.text
    assert again.json()["number"] == 1 and again.json()["created"] is True, again.text
    published = await wait_promotion_state(http, orchestrator.headers, task_id, "published")
    assert published["number"] == 1, published


async def test_an_expiry_after_the_year_9998_is_refused_at_append(
    rerun_http: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    http = rerun_http
    task_id = await open_task(http, team["orchestrator"], "cache ttl")
    entry: dict[str, Any] = {
        "kind": "fact",
        "content": "cache.ttl: frozen",
        "payload": {"expires_at": "9999-12-31T23:59:59-12:00"},
    }
    refused = await http.post(
        f"/v1/tasks/{task_id}/entries", headers=team["agent"].headers, json={"entries": [entry]}
    )
    assert refused.status_code == 422, refused.text
    assert "entries[0].payload.expires_at" in refused.json()["detail"], refused.text
    listed = await http.get(f"/v1/tasks/{task_id}/entries", headers=team["agent"].headers)
    assert listed.status_code == 200 and listed.json()["entries"] == [], listed.text
