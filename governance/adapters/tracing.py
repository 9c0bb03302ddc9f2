"""Traces through the gate (OpenTelemetry), off by default and configured by the standard `OTEL_*` variables.

Tracing is on when `OTEL_TRACES_EXPORTER` names an exporter (`otlp`, `console`; `none` keeps it off) or an
OTLP endpoint is set (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), unless
`OTEL_SDK_DISABLED=true`. Everything else is the SDK's and the exporters' own reading of the environment:
`OTEL_SERVICE_NAME` (default `loregate`), `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER[_ARG]`,
`OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL` (`http/protobuf`, the default, or `grpc`), `..._HEADERS`,
`OTEL_BSP_*`. The packages come with the `otel` extra (`pip install 'loregate[otel]'`); without them a
request for traces is logged and ignored, so a process never fails for the want of telemetry.

Each process asks `tracer_provider()` once per thing it instruments: the HTTP app and its engine
(api/http/app.py), the gRPC server (api/grpc/server.py), the Temporal client and the worker and its engine
(workflows/client.py, workflows/worker.py); Temporal's interceptor carries the trace from the request into
the workflow and its activities, whose statements become spans under them. `use_tracer_provider` installs
a provider of the caller's own instead (an embedding application, or a test's in-memory exporter).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["tracing_requested", "tracer_provider", "use_tracer_provider", "instrument_engine"]

_log = logging.getLogger("loregate.tracing")

DEFAULT_SERVICE_NAME = "loregate"
INSTRUMENTATION_NAME = "loregate"

# the process's provider: None until first asked (then read from the environment), or set explicitly
_state: dict[str, TracerProvider | None] = {}


def tracing_requested(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the `OTEL_*` variables ask for traces (see the module's docstring)."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = env.get("OTEL_TRACES_EXPORTER")
    if exporters is not None and exporters.strip():
        return any(name.strip().lower() not in ("", "none") for name in exporters.split(","))
    return bool(env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


def tracer_provider() -> TracerProvider | None:
    """The process's tracer provider when tracing is on, else None (configured once, on first call)."""
    if "provider" not in _state:
        _state["provider"] = _from_environment() if tracing_requested() else None
    return _state["provider"]


def use_tracer_provider(provider: TracerProvider | None) -> None:
    """Trace what is instrumented from now on to `provider` (None: tracing off), whatever the environment."""
    _state["provider"] = provider


def _otlp_exporter(env: Mapping[str, str]) -> Any:
    protocol = env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    if (protocol or "http/protobuf").strip().lower() == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        return GrpcExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

    return HttpExporter()


def _from_environment() -> TracerProvider | None:
    """A provider exporting as the `OTEL_*` variables say, installed as OpenTelemetry's global one."""
    env = os.environ
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
    except ImportError:
        _log.warning("OTEL_* asks for traces but the `otel` extra is not installed: tracing stays off")
        return None
    service = env.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE_NAME
    provider = TracerProvider(
        resource=Resource.create({SERVICE_NAME: service})
    )  # sampler: OTEL_TRACES_SAMPLER
    names = [n.strip().lower() for n in (env.get("OTEL_TRACES_EXPORTER") or "otlp").split(",") if n.strip()]
    for name in names:
        if name == "otlp":
            try:
                provider.add_span_processor(BatchSpanProcessor(_otlp_exporter(env)))
            except ImportError:
                _log.warning("OTLP trace export needs the `otel` extra (opentelemetry-exporter-otlp)")
        elif name == "console":
            provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
        elif name != "none":
            _log.warning("unknown OTEL_TRACES_EXPORTER %r ignored (loregate knows otlp, console, none)", name)
    trace.set_tracer_provider(provider)
    _log.info("tracing on: service %s, exporters %s", service, ",".join(names))
    return provider


def instrument_engine(engine: AsyncEngine) -> None:
    """Trace every statement `engine` runs, as a child of the span current where it runs (when on)."""
    provider = tracer_provider()
    if provider is None:
        return
    from opentelemetry.instrumentation.sqlalchemy.engine import EngineTracer
    from opentelemetry.instrumentation.sqlalchemy.version import __version__ as version
    from opentelemetry.metrics import get_meter
    from opentelemetry.semconv.metrics import MetricInstruments
    from opentelemetry.trace import get_tracer

    # `SQLAlchemyInstrumentor().instrument(engine=...)` instruments one engine per process; a process here
    # has several (gateway, worker, authoriser), so each gets its own engine tracer, as that call makes.
    tracer = get_tracer("opentelemetry.instrumentation.sqlalchemy", version, provider)
    usage = get_meter("opentelemetry.instrumentation.sqlalchemy", version).create_up_down_counter(
        name=MetricInstruments.DB_CLIENT_CONNECTIONS_USAGE, unit="connections"
    )
    EngineTracer(tracer, engine.sync_engine, usage)  # type: ignore[no-untyped-call]
