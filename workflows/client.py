"""The one Temporal client factory: the worker, the gateways and the CLI connect through it.

Every process honours the same address, namespace, TLS and API-key settings. Importing this module imports
the Temporal client only, never the worker or its activities.
"""

from __future__ import annotations

from typing import Any

from temporalio.client import Client, TLSConfig

from governance.adapters.tracing import INSTRUMENTATION_NAME, tracer_provider
from governance.config import Settings

__all__ = ["connect_temporal", "tracing_interceptors"]


def tracing_interceptors() -> list[Any]:
    """Temporal's OpenTelemetry interceptor when tracing is on (governance/adapters/tracing.py), else none.

    On a client it puts the caller's trace context into the workflow's headers; a worker built from that
    client (or given it) continues the trace in the workflow and each activity it runs.
    """
    provider = tracer_provider()
    if provider is None:
        return []
    from temporalio.contrib.opentelemetry import TracingInterceptor

    return [TracingInterceptor(provider.get_tracer(INSTRUMENTATION_NAME))]


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
        address,
        namespace=settings.temporal_namespace,
        tls=tls,
        api_key=settings.temporal_api_key,
        interceptors=tracing_interceptors(),
    )
