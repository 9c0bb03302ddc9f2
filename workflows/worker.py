"""The one worker entry point: which workflows and activities loregate runs, on `settings.task_queue`.

A new workflow registers by adding one line to `workflow_classes()` and its activities to
`activity_functions()`. The worker connects through workflows/client.py, as the gateways and the CLI do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client
from temporalio.worker import Worker

from activities.approaches import ApproachActivities
from activities.change_requests import ChangeRequestActivities
from activities.gate_checks import GateCheckActivities
from activities.knowledge import KnowledgeActivities
from activities.notifications import NotificationActivities
from activities.promotion import PromotionActivities
from activities.reflection import ReflectionActivities
from activities.retention import RetentionActivities
from governance.adapters.embedders import make_embedder
from governance.adapters.llm_cognifier import make_llm
from governance.adapters.llm_reflector import make_reflector
from governance.adapters.tracing import instrument_engine
from governance.config import Settings
from governance.storage.engine import make_engine
from policy.enforcer import Authorizer, make_authorizer
from workflows.change_requests import ChangeRequestWorkflow
from workflows.client import connect_temporal, tracing_interceptors
from workflows.input_decoding import StartArgumentsInterceptor, data_converter_for
from workflows.knowledge import ProjectKnowledgeWorkflow
from workflows.notifications import NotificationWorkflow
from workflows.promotion import PromotionWorkflow
from workflows.reflection import ReflectionWorkflow
from workflows.reflection_schedule import ReflectionSweepWorkflow
from workflows.retention import RetentionWorkflow

__all__ = ["workflow_classes", "activity_functions", "build_worker", "run_worker"]


def workflow_classes() -> list[type]:
    """Every workflow this worker runs."""
    return [
        PromotionWorkflow,
        ChangeRequestWorkflow,
        RetentionWorkflow,
        ReflectionWorkflow,
        ReflectionSweepWorkflow,
        NotificationWorkflow,
        ProjectKnowledgeWorkflow,
    ]


def activity_functions(
    *, engine: AsyncEngine, settings: Settings, authorizer: Authorizer
) -> list[Callable[..., Any]]:
    """Every activity this worker runs, bound to this process's clients."""
    embedder = make_embedder(settings)
    promotion = PromotionActivities(
        engine=engine,
        embedder=embedder,
        authorizer=authorizer,
        settings=settings,
        llm=make_llm(settings),
    )
    retention = RetentionActivities(
        engine, archive_dir=settings.archive_dir(), policy=settings.retention_policy()
    )
    approaches = ApproachActivities(engine, embedder, settings)
    gate = GateCheckActivities(engine=engine, authorizer=authorizer, settings=settings)
    changes = ChangeRequestActivities(engine, settings)
    reflection = ReflectionActivities(
        engine=engine, settings=settings, llm=make_reflector(settings), authorizer=authorizer
    )
    notifications = NotificationActivities(engine, settings)
    knowledge = KnowledgeActivities(engine)
    return [
        *knowledge.functions(),
        *reflection.functions(),
        *notifications.functions(),
        *retention.functions(),
        approaches.record,
        approaches.check,
        promotion.collect_staging,
        promotion.cognify,
        promotion.plan,
        gate.check_start,
        gate.check_evidence,
        gate.check_approver,
        gate.record_refused_signal,
        promotion.publish,
        promotion.record_decision,
        promotion.record_outcome,
        gate.check_change_request,
        changes.describe,
        changes.apply,
        changes.close,
    ]


def build_worker(
    client: Client,
    *,
    engine: AsyncEngine,
    settings: Settings,
    authorizer: Authorizer,
    task_queue: str | None = None,
    interceptors: Sequence[Any] = (),
) -> Worker:
    """A worker on `task_queue` (default: the settings' queue) with every workflow and activity.

    When tracing is on and `client` does not trace already (its interceptors reach the worker too), the
    worker gets Temporal's tracing interceptor itself, so workflows and activities continue their callers'
    traces.
    """
    instrument_engine(engine)  # the activities' statements join their traces
    chosen = [*interceptors, StartArgumentsInterceptor()]
    tracing = tracing_interceptors()
    if tracing and not any(
        isinstance(i, type(tracing[0])) for i in (*client.config()["interceptors"], *chosen)
    ):
        chosen += tracing
    # the worker's own client decodes loregate's workflow inputs strictly (workflows/input_decoding.py)
    config = client.config()
    converter = data_converter_for(config["data_converter"], workflow_classes())
    if converter is not config["data_converter"]:
        config["data_converter"] = converter
        client = Client(**config)
    return Worker(
        client,
        task_queue=task_queue or settings.task_queue,
        workflows=workflow_classes(),
        activities=activity_functions(engine=engine, settings=settings, authorizer=authorizer),
        interceptors=chosen,
    )


async def run_worker(settings: Settings, *, stop: asyncio.Event | None = None) -> None:
    """Run the worker until `stop` is set (or forever), then shut down cleanly."""
    client = await connect_temporal(settings)
    engine = make_engine(settings)
    authorizer = make_authorizer(settings.sqlalchemy_url(), timeout_seconds=settings.db_timeout_seconds)
    try:
        async with build_worker(client, engine=engine, settings=settings, authorizer=authorizer):
            await (stop.wait() if stop is not None else asyncio.Event().wait())
    finally:
        authorizer.close()
        await engine.dispose()
