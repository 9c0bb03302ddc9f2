"""Prometheus metrics of the gateway and the middleware that records them.

Counters and histograms count what this process did; `PlatformCollector` adds, at each scrape, what the
platform holds (api/services/platform_metrics.py: Postgres aggregates and Temporal's pending approvals).
Names follow Prometheus' conventions: `loregate_` prefix, `_total` counters, base units (`_seconds`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, MutableMapping
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from api.services.platform_metrics import PlatformSnapshot, platform_snapshot
from governance.adapters.embedders import query_cache_stats

__all__ = [
    "REQUESTS",
    "LATENCY",
    "MetricsMiddleware",
    "PlatformCollector",
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


class PlatformCollector(Collector):
    """The platform's gauges and totals from the latest snapshot, and the query cache's hits and misses."""

    def __init__(self) -> None:
        self.snapshot: PlatformSnapshot | None = None

    def collect(self) -> Iterator[Metric]:
        hits, misses = query_cache_stats()
        yield CounterMetricFamily(
            "loregate_query_embedding_cache_hits", "Query vectors answered from the cache", value=hits
        )
        yield CounterMetricFamily(
            "loregate_query_embedding_cache_misses", "Query vectors the embedder computed", value=misses
        )
        snap = self.snapshot
        if snap is None:
            return
        counts = snap.counts
        up = GaugeMetricFamily(
            "loregate_metrics_source_up", "Whether the scrape could read a source", labels=["source"]
        )
        up.add_metric(["postgres"], 1)
        up.add_metric(["temporal"], 0 if snap.promotions_pending is None else 1)
        yield up
        yield GaugeMetricFamily(
            "loregate_change_requests_pending",
            "Change requests awaiting approval",
            value=counts.change_requests_pending,
        )
        yield GaugeMetricFamily(
            "loregate_change_requests_oldest_pending_seconds",
            "Age of the oldest change request awaiting approval (0: none)",
            value=counts.change_requests_oldest_seconds,
        )
        if snap.promotions_pending is not None:
            yield GaugeMetricFamily(
                "loregate_promotions_pending_approval",
                "Promotions awaiting a human approval",
                value=snap.promotions_pending,
            )
            yield GaugeMetricFamily(
                "loregate_promotions_oldest_pending_approval_seconds",
                "Age (since its start) of the oldest promotion awaiting approval (0: none)",
                value=snap.promotions_oldest_seconds or 0.0,
            )
        outcomes = CounterMetricFamily("loregate_promotions", "Promotions by outcome", labels=["outcome"])
        for outcome, n in sorted(counts.promotions_by_outcome.items()):
            outcomes.add_metric([outcome], n)
        yield outcomes
        decisions = CounterMetricFamily(
            "loregate_plan_decisions", "Promotion plan items by decision", labels=["decision"]
        )
        for decision, n in sorted(counts.plan_decisions.items()):
            decisions.add_metric([decision], n)
        yield decisions
        yield CounterMetricFamily(
            "loregate_plan_items_quarantined",
            "Promotion plan items held for a human because they carry instructions aimed at agents",
            value=counts.plan_items_quarantined,
        )
        redactions = CounterMetricFamily(
            "loregate_redactions", "Redactions in published promotions and change requests", labels=["rule"]
        )
        for rule, n in sorted(counts.redactions_by_rule.items()):
            redactions.add_metric([rule], n)
        yield redactions
        yield CounterMetricFamily(
            "loregate_retention_prunes", "Memories the retention pruned", value=counts.retention_prunes
        )
        latency = HistogramMetricFamily(
            "loregate_approval_latency_seconds",
            "From a plan or change request to its approval or rejection",
            labels=["kind"],
        )
        for kind, hist in sorted(counts.approval_latency.items()):
            buckets = [(_bound(b), n) for b, n in hist.buckets] + [("+Inf", hist.count)]
            latency.add_metric([kind], buckets, sum_value=hist.total_seconds)
        yield latency


def _bound(value: float) -> str:
    return repr(float(value))  # "900.0", as prometheus_client writes its own histograms' bounds


PLATFORM = PlatformCollector()
REGISTRY.register(PLATFORM)


async def metrics_response(request: Request) -> Response:
    """Every metric of this process, with the platform's snapshot refreshed first (at most 15 s old)."""
    resources = getattr(request.app.state, "resources", None)
    if resources is not None:
        cache = request.app.state.__dict__.setdefault("_metrics_cache", {})
        try:
            PLATFORM.snapshot = await platform_snapshot(resources, cache)
        except Exception:  # the database is down: process metrics still go out, the platform's do not
            PLATFORM.snapshot = None
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
