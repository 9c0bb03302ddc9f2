"""Running the real `loregate` command in tests: free ports, clean environments, and process tracking.

Every process a `loregate up` starts is tracked; whatever is left when a test ends (passed or failed) is
terminated, then killed — including the embedded Postgres, which pg_ctl daemonises outside the tree.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

__all__ = [
    "LOREGATE",
    "KEY_PATTERN",
    "free_port",
    "cli_env",
    "run_cli",
    "processes_mentioning",
    "alive",
    "UpProcess",
    "UpLauncher",
]

LOREGATE = str(Path(sys.executable).parent / "loregate")
KEY_PATTERN = re.compile(r"lg_[0-9a-f]{12}_[A-Za-z0-9_-]{20,}")
STARTUP_TIMEOUT = 300.0


def free_port() -> int:
    """A TCP port nobody listens on right now (tests run in parallel with other engineers' processes)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cli_env(**overrides: str) -> dict[str, str]:
    """The environment of a CLI child: none of the session's LOREGATE_* leaks in unless given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOREGATE_")}
    env.update(overrides)
    return env


def run_cli(
    *args: str,
    env: dict[str, str],
    timeout: float = 180.0,
    input: str | None = None,
    user: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `loregate ARGS` to completion (with `input` on its standard input) and capture its output;
    as `user` (and that user's group alone) when given, which needs root."""
    return subprocess.run(
        [LOREGATE, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        input=input,
        **_as(user),
    )


def _as(user: str | None) -> dict[str, Any]:
    """`subprocess` arguments that run a child as `user` with only its own group, or none."""
    return {} if user is None else {"user": user, "group": user, "extra_groups": [], "cwd": "/"}


def processes_mentioning(text: str) -> list[psutil.Process]:
    """Live processes whose command line contains `text` (e.g. the data dir), with their children."""
    found: list[psutil.Process] = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if any(text in part for part in proc.info["cmdline"] or []):
                found += [proc, *proc.children(recursive=True)]
        except psutil.Error:
            continue
    return found


def alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    """Those of `procs` still running (pid reuse is ruled out by psutil's create-time check)."""
    result = []
    for proc in procs:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                result.append(proc)
        except psutil.NoSuchProcess:
            continue
    return result


@dataclass
class UpProcess:
    """A running `loregate up` with the ports it was given."""

    process: subprocess.Popen[bytes]
    output_path: Path
    data_dir: Path
    http_port: int
    grpc_port: int
    ui_port: int
    temporal_port: int = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def output(self) -> str:
        return self.output_path.read_text(errors="replace")

    def process_tree(self) -> list[psutil.Process]:
        """The supervisor, its descendants and the embedded Postgres (daemonised by pg_ctl)."""
        leader = psutil.Process(self.process.pid)
        return [leader, *leader.children(recursive=True), *processes_mentioning(str(self.data_dir))]

    def stop(self, signum: int = signal.SIGTERM, timeout: float = 120.0) -> int:
        self.process.send_signal(signum)
        return self.process.wait(timeout=timeout)


@dataclass
class UpLauncher:
    """Starts `loregate up` on free ports; `cleanup()` leaves no process behind whatever happened."""

    tracked: list[psutil.Process] = field(default_factory=list)
    launched: list[UpProcess] = field(default_factory=list)

    def start(
        self, data_dir: Path, *, env: dict[str, str] | None = None, user: str | None = None
    ) -> UpProcess:
        http_port, grpc_port, temporal_port, ui_port = free_port(), free_port(), free_port(), free_port()
        output_path = data_dir.parent / f"up-{len(self.launched)}.out"
        with open(output_path, "wb") as out:
            process = subprocess.Popen(
                [
                    LOREGATE,
                    "up",
                    "--data-dir",
                    str(data_dir),
                    "--http-port",
                    str(http_port),
                    "--grpc-port",
                    str(grpc_port),
                    "--temporal-port",
                    str(temporal_port),
                    "--ui-port",
                    str(ui_port),
                    "--grace",
                    "15",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env or cli_env(),
                **_as(user),
            )
        up = UpProcess(process, output_path, data_dir, http_port, grpc_port, ui_port, temporal_port)
        self.launched.append(up)
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while "Press Ctrl-C to stop." not in up.output():
            if process.poll() is not None:
                raise AssertionError(f"loregate up exited with {process.returncode}:\n{up.output()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"loregate up did not start in {STARTUP_TIMEOUT} s:\n{up.output()}")
            self._track(up)
            time.sleep(0.5)
        self._track(up)
        return up

    def _track(self, up: UpProcess) -> None:
        try:
            self.tracked += up.process_tree()
        except psutil.NoSuchProcess:
            pass

    def cleanup(self) -> None:
        for up in self.launched:
            if up.process.poll() is None:
                up.process.send_signal(signal.SIGTERM)
                try:
                    up.process.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    up.process.kill()
                    up.process.wait()
            self.tracked += processes_mentioning(str(up.data_dir))
        survivors = alive(self.tracked)
        for proc in survivors:
            try:
                proc.terminate()
            except psutil.NoSuchProcess:
                pass
        _, still = psutil.wait_procs(survivors, timeout=10)
        for proc in still:
            try:
                proc.kill()
            except psutil.NoSuchProcess:
                pass
