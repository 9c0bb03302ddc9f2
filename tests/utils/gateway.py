"""Run a real gateway (uvicorn) on a free loopback port, in a thread or as a separate process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import uvicorn

from governance.config import Settings

__all__ = ["free_port", "running_gateway", "gateway_process", "wait_healthy"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_healthy(url: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError as exc:
            last = exc
        time.sleep(0.1)
    raise TimeoutError(f"gateway at {url} not healthy after {timeout}s: {last}")


@contextmanager
def running_gateway(settings: Settings) -> Iterator[str]:
    """The app served by uvicorn in a background thread of this process; yields its base URL."""
    from api.http.app import create_app

    port = free_port()
    config = uvicorn.Config(
        create_app(settings), host="127.0.0.1", port=port, log_level="warning", proxy_headers=False
    )  # as `loregate serve` runs it
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url)
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextmanager
def gateway_process(database_url: str, **env: str) -> Iterator[str]:
    """`loregate serve` is not needed for this: uvicorn's factory mode in a separate OS process."""
    port = free_port()
    proc_env = {**os.environ, "LOREGATE_DATABASE_URL": database_url, **env}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "--factory",
            "api.http.app:create_app",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--no-proxy-headers",
        ],
        env=proc_env,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
