"""The HTTP gateway: a FastAPI app per process, stateless apart from caches (run as many as needed)."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI
from fastapi.staticfiles import StaticFiles
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from api.http import console
from api.http.append_path import AppendPath
from api.http.encoded_slash import EncodedSlash
from api.http.errors import ERROR_RESPONSES, install_error_handlers
from api.http.limits import BodySizeLimit
from api.http.metrics import MetricsMiddleware
from api.http.query_check import refuse_unknown_query
from api.http.routes import (
    admin,
    approaches,
    change_requests,
    citations,
    erasure,
    health,
    knowledge,
    learning,
    memories,
    promotions,
    reflections,
    search,
    staging,
    transfer,
    truth,
    webhooks,
    working_memory,
)
from api.services.gateway import GatewayResources
from api.services.sessions import SessionBook
from governance.adapters.tracing import instrument_engine, tracer_provider
from governance.config import Settings, get_settings
from governance.storage.engine import make_engine
from policy.enforcer import make_authorizer

__all__ = ["create_app"]


def _settle_heap() -> None:
    """Collect what startup left behind, then move every object still alive (modules, schemas, the
    enforcer's model, pools: ~200 k objects) out of the collector's sight. Without this a full collection
    walked them all every few seconds under ingest: 0.3-0.4 s of wall time each, the whole process (every
    request in flight) paused meanwhile, ~40 % of a gateway's CPU under batch load (docs/scaling.md)."""
    gc.collect()
    gc.freeze()


def create_app(
    settings: Settings | None = None, *, grpc_port: int | None = None, settle_heap: bool = False
) -> FastAPI:
    """The gateway for `settings` (default: from the environment).

    `uvicorn --factory api.http.app:create_app` runs it.

    With `grpc_port`, the gRPC gateway runs in the same process and event loop, sharing the engine, the
    authoriser and the key cache (`loregate serve` does this; tests of HTTP alone leave it off). With
    `settle_heap` (a process serving nothing else: `loregate serve`), startup's objects are frozen out of
    the garbage collector's full collections once the gateway has started (`gc.freeze`).
    """
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        authorizer = make_authorizer(settings.sqlalchemy_url(), timeout_seconds=settings.db_timeout_seconds)
        resources = GatewayResources(settings=settings, engine=make_engine(settings), authorizer=authorizer)
        instrument_engine(resources.engine)
        authorizer.add_listener(resources.key_cache.clear)
        app.state.resources = resources
        grpc_server = None
        if grpc_port is not None:
            from api.grpc.server import start_grpc_server

            grpc_server, _ = await start_grpc_server(resources, settings.http_host, grpc_port)
        if settle_heap:
            _settle_heap()
        try:
            yield
        finally:
            if grpc_server is not None:
                await grpc_server.stop(grace=5)
            authorizer.close()
            await resources.engine.dispose()

    app = FastAPI(
        title="loregate",
        version="0.1.0",
        summary="Governed shared memory for parallel AI agents",
        description=(
            "Agents append to task-scoped staging; a Temporal promotion gate publishes verified, "
            "deduplicated memory. Authenticate with `Authorization: Bearer <api key>`. Every error is "
            '`{"error": <type>, "detail": <message>}`.'
        ),
        lifespan=lifespan,
    )
    install_error_handlers(app)
    for router in (
        health.router,
        staging.router,
        admin.router,
        truth.router,
        erasure.router,
        search.router,
        learning.router,
        reflections.router,
        memories.router,
        approaches.router,
        citations.router,
        promotions.router,
        change_requests.router,
        transfer.router,
        webhooks.router,
        working_memory.router,
        knowledge.router,
    ):
        # a query parameter the route does not take is refused (422), never ignored; a probe's health
        # check stays lenient (a 422 there would take a healthy gateway out of its pool)
        checked = [] if router is health.router else [Depends(refuse_unknown_query)]
        app.include_router(router, responses=ERROR_RESPONSES, dependencies=checked)
    # the web console (api/http/console): server-rendered pages over the same services
    app.state.console_sessions = SessionBook()
    app.include_router(console.router)
    app.mount("/console/static", StaticFiles(directory=console.STATIC_DIR), name="console-static")
    # innermost: appends past the body limit and the metrics, then straight to their use case
    app.add_middleware(AppendPath)
    # before any route (the append path's included): an id sent with `%2F` never becomes another route
    app.add_middleware(EncodedSlash)
    app.add_middleware(
        BodySizeLimit,
        max_bytes=settings.max_request_bytes,
        larger={path: settings.max_import_bytes for path in ("/v1/imports", "/v1/restores")},
    )
    app.add_middleware(MetricsMiddleware)
    if settings.trusted_proxies:
        # X-Forwarded-For / -Proto from these peers only (the client address the sign-in throttle counts)
        app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=settings.trusted_proxies)
    _trace(app)
    return app


def _trace(app: FastAPI) -> None:
    """A server span per request (when tracing is on): the root of what the request does downstream."""
    provider = tracer_provider()
    if provider is None:
        return
    from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor

    # liveness probes and scrapes would drown the traces that matter
    FastAPIInstrumentor.instrument_app(app, tracer_provider=provider, excluded_urls="healthz,metrics")
