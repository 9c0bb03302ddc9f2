"""`loregate serve --workers N` answers as fast as one process: no Nagle delay on its shared socket.

With several workers uvicorn binds the socket itself and asyncio then leaves Nagle's algorithm on, so every
response waited ~40 ms for the client's delayed ACK (api/http/protocol.py). A sequential client sees it
directly in the median latency of a request that costs a few milliseconds.
"""

from __future__ import annotations

import os
import statistics
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.system.processes import Cluster


@pytest.fixture
def two_worker_gateway(database_url: str, tmp_path: Path) -> Iterator[Cluster]:
    env = {
        **os.environ,
        "LOREGATE_DATABASE_URL": database_url,
        "LOREGATE_TASK_QUEUE": f"unused-{uuid.uuid4().hex[:8]}",
    }
    cluster = Cluster(env=env, log_dir=tmp_path)
    try:
        yield cluster
    finally:
        cluster.close()


async def test_serve_with_two_workers_answers_without_nagle_delay(two_worker_gateway: Cluster) -> None:
    gateway = two_worker_gateway.gateway("gateway", "--workers", "2")
    await two_worker_gateway.wait_healthy(gateway)
    latencies = []
    with httpx.Client(base_url=gateway.url or "", timeout=5) as client:
        for _ in range(40):
            started = time.perf_counter()
            assert client.get("/healthz").status_code == 200
            latencies.append(time.perf_counter() - started)
    median_ms = statistics.median(latencies) * 1000
    assert median_ms < 20, f"median /healthz latency {median_ms:.1f} ms: responses wait for delayed ACKs"
