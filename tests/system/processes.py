"""loregate processes (`loregate serve`, `loregate worker`) as OS processes on loopback, killed without fail.

Every child runs in a session (and so a process group) of its own and, on Linux, dies with the test process
(PR_SET_PDEATHSIG), so neither a failing test nor a killed pytest leaves orphans behind. `Cluster.close()`
signals every process group it ever started — also those already SIGKILLed on purpose — and waits for them.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.utils.gateway import free_port

__all__ = ["Child", "Cluster", "loregate_command"]


def loregate_command() -> list[str]:
    """The `loregate` console script of this interpreter's environment (or the module that backs it)."""
    script = Path(sys.executable).with_name("loregate")
    return [str(script)] if script.exists() else [sys.executable, "-m", "api.cli"]


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    if sys.platform.startswith("linux"):
        PR_SET_PDEATHSIG = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


@dataclass
class Child:
    """One started process: its role, its group (== its pid) and where its output goes."""

    name: str
    proc: subprocess.Popen[bytes]
    log: Path
    url: str | None = None  # gateways only

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def identity(self) -> str:
        """The Temporal worker identity the Python SDK gives this process by default."""
        return f"{self.pid}@{socket.gethostname()}"

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the whole process group, as a crashed machine would vanish."""
        _signal_group(self.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass


@dataclass
class Cluster:
    """Gateways and workers sharing one environment (database, Temporal address, task queue)."""

    env: dict[str, str]
    log_dir: Path
    children: list[Child] = field(default_factory=list)

    def _spawn(self, name: str, args: list[str]) -> Child:
        log = self.log_dir / f"{name}.log"
        # spawned from the main thread on purpose: PDEATHSIG fires when the spawning *thread* ends
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [*loregate_command(), *args],
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        child = Child(name, proc, log)
        self.children.append(child)
        return child

    def gateway(self, name: str, *extra: str) -> Child:
        """`loregate serve` on a free HTTP port and a free gRPC port (`extra`: more options)."""
        port, grpc_port = free_port(), free_port()
        child = self._spawn(
            name, ["serve", "--host", "127.0.0.1", "--port", str(port), "--grpc-port", str(grpc_port), *extra]
        )
        child.url = f"http://127.0.0.1:{port}"
        return child

    def worker(self, name: str) -> Child:
        """`loregate worker` on the cluster's task queue."""
        return self._spawn(name, ["worker"])

    async def wait_healthy(self, child: Child, timeout: float = 60.0) -> None:
        assert child.url is not None
        deadline = time.monotonic() + timeout
        async with httpx.AsyncClient(timeout=2) as client:
            while time.monotonic() < deadline:
                if not child.alive():
                    raise RuntimeError(f"{child.name} exited with {child.proc.returncode}:\n{child.tail()}")
                try:
                    if (await client.get(f"{child.url}/healthz")).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.2)
        raise TimeoutError(f"{child.name} not healthy after {timeout}s:\n{child.tail()}")

    def close(self, grace: float = 5.0) -> None:
        """SIGTERM every group, SIGKILL what is left after `grace` seconds, reap everything."""
        for child in self.children:
            _signal_group(child.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for child in self.children:
            try:
                child.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for child in self.children:
            _signal_group(child.pid, signal.SIGKILL)  # also any grandchild left in the group
            try:
                child.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored
                pass
