"""The gRPC gateway on a loopback port for tests, and the small helpers a gRPC caller needs."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import grpc

from api.grpc.proto import pb2, pb2_grpc
from api.grpc.server import running_grpc_server
from governance.config import Settings

__all__ = ["grpc_gateway", "bearer", "refusal", "pb2"]


@asynccontextmanager
async def grpc_gateway(settings: Settings) -> AsyncIterator[Any]:
    """A gRPC gateway of its own on a free loopback port; yields a connected `LoregateStub`."""
    async with running_grpc_server(settings, host="127.0.0.1", port=0) as port:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield pb2_grpc.LoregateStub(channel)


def bearer(key: str) -> tuple[tuple[str, str], ...]:
    """Call metadata carrying an API key, as HTTP's Authorization header does."""
    return (("authorization", f"Bearer {key}"),)


def refusal(error: grpc.aio.AioRpcError) -> dict[str, Any]:
    """The `{"error", "detail"}` body a refusal carries in its status details."""
    body = json.loads(error.details() or "{}")
    assert isinstance(body, dict)
    return body
