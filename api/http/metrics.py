"""Prometheus metrics of the gateway (per process) and the middleware that records them."""

from __future__ import annotations

import time
from collections.abc import MutableMapping
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, Counter, Histogram, generate_latest
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = [
    "REQUESTS",
    "LATENCY",
    "MetricsMiddleware",
    "metrics_response",
]

REQUESTS = Counter("loregate_http_requests_total", "HTTP requests", ["method", "route", "status"])
LATENCY = Histogram(
    "loregate_http_request_seconds",
    "HTTP request latency",
    ["method", "route"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
)


class MetricsMiddleware:
    """Pure ASGI (no BaseHTTPMiddleware overhead): counts and times requests by route template."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def _send(message: MutableMapping[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, _send)
        finally:
            route = scope.get("route")
            name = getattr(route, "path", "unmatched")
            REQUESTS.labels(scope["method"], name, str(status)).inc()
            LATENCY.labels(scope["method"], name).observe(time.perf_counter() - start)


async def metrics_response(_: Request) -> Response:
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
