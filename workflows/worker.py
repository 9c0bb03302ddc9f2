"""The one worker entry point: which workflows and activities loregate runs, on `settings.task_queue`.

A new workflow registers by adding one line to `workflow_classes()` and its activities to
`activity_functions()`. `connect_temporal` is shared by the worker, the gateway and the CLI so every
process honours the same address, namespace, TLS and API key settings.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client, TLSConfig
from temporalio.worker import Worker

from activities.approaches import ApproachActivities
from activities.promotion import PromotionActivities
from activities.retention import RetentionActivities
from governance.config import Settings
from governance.embedders import make_embedder
from governance.llm import make_llm
from governance.storage.engine import make_engine
from policy.enforcer import Authorizer, make_authorizer
from workflows.promotion import PromotionWorkflow
from workflows.retention import RetentionWorkflow

__all__ = ["connect_temporal", "workflow_classes", "activity_functions", "build_worker", "run_worker"]


async def connect_temporal(settings: Settings) -> Client:
    """A client for the configured Temporal (dev server by default, a cluster or Temporal Cloud at scale)."""
    address = settings.temporal_address or f"127.0.0.1:{settings.temporal_port}"
    tls: TLSConfig | bool = False
    if settings.temporal_tls_cert and settings.temporal_tls_key:
        tls = TLSConfig(
            client_cert=settings.temporal_tls_cert.read_bytes(),
            client_private_key=settings.temporal_tls_key.read_bytes(),
        )
    elif settings.temporal_tls or settings.temporal_api_key:
        tls = True  # Temporal Cloud API keys travel over TLS only
    return await Client.connect(
        address, namespace=settings.temporal_namespace, tls=tls, api_key=settings.temporal_api_key
    )


def workflow_classes() -> list[type]:
    """Every workflow this worker runs."""
    return [PromotionWorkflow, RetentionWorkflow]


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
    retention = RetentionActivities(engine)
    approaches = ApproachActivities(engine, embedder, settings)
    return [
        retention.decay,
        retention.expire,
        retention.prune,
        approaches.record,
        approaches.check,
        promotion.collect_staging,
        promotion.cognify,
        promotion.plan,
        promotion.check_approver,
        promotion.publish,
        promotion.record_decision,
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
    """A worker on `task_queue` (default: the settings' queue) with every workflow and activity."""
    return Worker(
        client,
        task_queue=task_queue or settings.task_queue,
        workflows=workflow_classes(),
        activities=activity_functions(engine=engine, settings=settings, authorizer=authorizer),
        interceptors=list(interceptors),
    )


async def run_worker(settings: Settings, *, stop: asyncio.Event | None = None) -> None:
    """Run the worker until `stop` is set (or forever), then shut down cleanly."""
    client = await connect_temporal(settings)
    engine = make_engine(settings)
    authorizer = make_authorizer(settings.sqlalchemy_url())
    try:
        async with build_worker(client, engine=engine, settings=settings, authorizer=authorizer):
            await (stop.wait() if stop is not None else asyncio.Event().wait())
    finally:
        authorizer.close()
        await engine.dispose()
