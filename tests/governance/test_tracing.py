"""Traces through the gate: one promotion is one trace, from the HTTP request to the SQL of its activities.

Real servers throughout (a uvicorn gateway, a Temporal dev server, a worker with the real activities,
Postgres, and the gRPC gateway); the spans go to an in-memory exporter installed as the process's provider.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.adapters import tracing
from governance.config import Settings
from governance.scopes import ActorType
from tests.utils.factories import make_actor, new_tenant
from tests.utils.gateway import running_gateway
from tests.utils.grpc_gateway import bearer, grpc_gateway, pb2
from tests.utils.promotion_factories import Entry, make_task
from tests.utils.promotion_gateway import running_worker, temporal_settings, wait_promotion_state

ENTRIES = [
    {
        "kind": "decision",
        "content": "cache.backend: redis with a 5 minute TTL",
        "payload": {"key": "cache.backend"},
    },
    {
        "kind": "result",
        "content": "Switched the cache to redis; all tests pass.",
        "payload": {"repeatable": True},
    },
]


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    """Every span of what is instrumented while the test runs, kept in memory."""
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    tracing.use_tracer_provider(provider)
    try:
        yield spans
    finally:
        tracing.use_tracer_provider(None)
        provider.shutdown()


def test_tracing_is_off_unless_otel_variables_ask_for_it() -> None:
    assert not tracing.tracing_requested({})
    assert not tracing.tracing_requested({"OTEL_SERVICE_NAME": "loregate"})
    assert not tracing.tracing_requested({"OTEL_TRACES_EXPORTER": "none"})
    assert tracing.tracing_requested({"OTEL_TRACES_EXPORTER": "console"})
    assert tracing.tracing_requested({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert tracing.tracing_requested(
        {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}
    )
    disabled = {"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}
    assert not tracing.tracing_requested(disabled)


def _descends_from(span: ReadableSpan, ancestor: ReadableSpan, by_id: dict[int, ReadableSpan]) -> bool:
    current: ReadableSpan | None = span
    while current is not None and current.parent is not None:
        if current.parent.span_id == ancestor.context.span_id:
            return True
        current = by_id.get(current.parent.span_id)
    return False


async def test_one_promotion_is_one_trace_from_request_to_sql(
    exporter: InMemorySpanExporter, settings: Settings, local_env: Any, engine: AsyncEngine
) -> None:
    promo_settings = temporal_settings(settings, local_env.client)
    org, project = new_tenant()
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    with running_gateway(promo_settings) as url:
        async with (
            running_worker(local_env.client, promo_settings),
            httpx.AsyncClient(base_url=url, timeout=90) as http,
        ):
            headers = orchestrator.headers
            body = {"org": org, "project": project, "worktree": "main", "description": "pick a cache"}
            task_id = (await http.post("/v1/tasks", headers=headers, json=body)).json()["task_id"]
            appended = await http.post(
                f"/v1/tasks/{task_id}/entries", headers=headers, json={"entries": ENTRIES}
            )
            assert appended.status_code == 201, appended.text
            start = {"target_scope": "task", "verification": {"source": "tests_passed", "success": True}}
            started = await http.post(f"/v1/tasks/{task_id}/promotion", headers=headers, json=start)
            assert started.status_code == 202, started.text
            await wait_promotion_state(http, headers, task_id, "published")

    spans = list(exporter.get_finished_spans())
    by_id = {s.context.span_id: s for s in spans}
    (request,) = [
        s for s in spans if s.name == "POST /v1/tasks/{task_id}/promotion" and s.kind.name == "SERVER"
    ]
    trace = [s for s in spans if s.context.trace_id == request.context.trace_id]
    names = {s.name for s in trace}
    assert {"StartWorkflow:PromotionWorkflow", "RunWorkflow:PromotionWorkflow"} <= names, sorted(names)
    activities = {n.removeprefix("RunActivity:") for n in names if n.startswith("RunActivity:")}
    assert {"cognify", "plan", "publish"} <= activities, sorted(names)
    # the database calls of the request and of each activity are in the trace, below the span that made them
    sql = [s for s in trace if (s.attributes or {}).get("db.system") == "postgresql"]
    assert any(_descends_from(s, request, by_id) for s in sql)
    for name in ("RunActivity:cognify", "RunActivity:plan", "RunActivity:publish"):
        (activity,) = [s for s in trace if s.name == name]
        assert any(_descends_from(s, activity, by_id) for s in sql), f"no SQL under {name}"
    # every span of the trace hangs from the request: nothing was started afresh on the way
    assert all(s is request or _descends_from(s, request, by_id) for s in trace)


async def test_a_grpc_call_starts_the_trace_of_its_promotion(
    exporter: InMemorySpanExporter, settings: Settings, local_env: Any, engine: AsyncEngine
) -> None:
    promo_settings = temporal_settings(settings, local_env.client)
    org, project = new_tenant()
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    task = await make_task(
        engine, org, project, [Entry(e["kind"], e["content"], e.get("payload")) for e in ENTRIES]
    )
    start = {"target_scope": "task", "verification": {"source": "tests_passed", "success": True}}
    async with running_worker(local_env.client, promo_settings), grpc_gateway(promo_settings) as stub:
        request = pb2.TaskJsonRequest(task_id=task.task_id, json=json.dumps(start))
        await stub.StartPromotion(request, metadata=bearer(orchestrator.key))
        deadline = asyncio.get_running_loop().time() + 90
        while not any(s.name == "RunActivity:publish" for s in exporter.get_finished_spans()):
            assert asyncio.get_running_loop().time() < deadline, "the promotion never published"
            await asyncio.sleep(0.2)

    spans = list(exporter.get_finished_spans())
    (call,) = [s for s in spans if s.name == "/loregate.v1.Loregate/StartPromotion"]
    in_trace = {s.name for s in spans if s.context.trace_id == call.context.trace_id}
    assert {
        "StartWorkflow:PromotionWorkflow",
        "RunWorkflow:PromotionWorkflow",
        "RunActivity:publish",
    } <= in_trace
