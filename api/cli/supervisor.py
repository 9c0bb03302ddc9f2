"""`loregate up`: one process that starts, watches and stops the whole platform on one machine.

Order: Postgres (embedded or `LOREGATE_DATABASE_URL`) → migrations → Temporal (dev server or
`LOREGATE_TEMPORAL_ADDRESS`) → bootstrap admin key on first start → worker → gateway (HTTP, and gRPC in
the same process) → schedules.
Children run in sessions of their own, so a Ctrl-C in the terminal reaches only this process, which then
stops them in reverse order (SIGTERM, a grace period, SIGKILL for whatever is left of each process tree)
and stops Postgres last. A worker, gateway or Temporal dev server that dies on its own is restarted with
backoff (restarts.py); past its restart budget, or if Postgres dies, the rest is stopped and the exit code
is 1.
The data dir holds the database, the workflow histories, the bootstrap key and the logs: it is made the
owner's alone (0700, files 0600; as root 0710, passable by the database's system user alone;
api/cli/embedded.py `secure_data_dir`) and every child runs with umask 077.
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, Any

import httpx
import psutil
from rich.console import Console

from api.cli.embedded import (
    CHILD_UMASK,
    PRIVATE_DIR_MODE,
    PRIVATE_FILE_MODE,
    secure_data_dir,
    start_embedded_postgres,
    stop_embedded_postgres,
    temporal_dev_server_command,
)
from api.cli.restarts import BIND_ATTEMPTS, RestartBudget, RestartPolicy, bind_failure, pick_free_port
from governance.approval import ApprovalMode
from governance.config import Settings

__all__ = [
    "Supervisor",
    "StartupFailed",
    "SEARCH_ATTRIBUTES",
    "BOOTSTRAP_KEY_FILE",
    "LOCK_FILE",
    "approval_mode_line",
    "running_up",
]

SEARCH_ATTRIBUTES = {"LoregateState": "Keyword"}
BOOTSTRAP_KEY_FILE = "bootstrap-admin.key"
# held (flock) by a running `loregate up` for its whole life, and holding its pid
LOCK_FILE = "up.lock"


def running_up(data_dir: Path) -> int | None:
    """The pid of the `loregate up` running on `data_dir` (it holds the lock), or None when none runs."""
    try:
        lock = open(data_dir / LOCK_FILE)  # noqa: SIM115 - closed below, whichever way the probe goes
    except FileNotFoundError:
        return None
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = lock.read().strip()
            return int(owner) if owner.isdigit() else -1
        fcntl.flock(lock, fcntl.LOCK_UN)  # free: nothing runs; let go at once
        return None


_LOG_TAIL_LINES = 20


class StartupFailed(Exception):
    """A piece of the platform did not come up; the message says which and why."""


class _Interrupted(Exception):
    """SIGINT/SIGTERM arrived while starting: stop what is running, exit 0."""


@dataclass
class Child:
    """A supervised child process and the file its output goes to."""

    name: str
    process: subprocess.Popen[bytes]
    log_path: Path
    command: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)

    def tail(self, lines: int = _LOG_TAIL_LINES) -> str:
        """The last lines of its log, to say why it died."""
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


class Supervisor:
    """Runs `loregate up` for `settings`; `run()` returns the process exit code."""

    def __init__(
        self,
        settings: Settings,
        console: Console,
        *,
        grace_seconds: float = 10.0,
        startup_timeout: float = 180.0,
        pick_port: Callable[[], int] = pick_free_port,
    ) -> None:
        self.settings = settings
        self._pick_port = pick_port  # the dev server's HTTP API and metrics ports, picked anew per start
        self.console = console
        self.grace_seconds = grace_seconds
        self.startup_timeout = startup_timeout
        self.data_dir = settings.data_dir.expanduser().resolve()
        self.log_dir = self.data_dir / "logs"
        self._stop_requested = False
        self._postgres: Any = None  # pgserver handle when we run the embedded database
        self._temporal: Child | None = None
        self._services: list[Child] = []  # worker, gateways: stopped before Temporal
        self._lock_file: IO[str] | None = None
        self._env: dict[str, str] = {}
        self._restart_policy = RestartPolicy(
            max_restarts=settings.supervisor_max_restarts,
            window_seconds=settings.supervisor_restart_window_seconds,
        )
        self._budgets: dict[str, RestartBudget] = {}

    # ---- lifecycle -------------------------------------------------------------------------------

    def run(self) -> int:
        """Start everything, wait for a signal or a dying child, stop everything."""
        previous = {
            signum: signal.signal(signum, self._on_signal) for signum in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            try:
                self._start()
            except _Interrupted:
                return 0
            except StartupFailed as exc:
                self.console.print(f"[bold red]✗[/] {exc}", highlight=False)
                return 1
            return self._watch()
        finally:
            self._shutdown()
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if not self._stop_requested:
            self.console.print(f"\n{signal.Signals(signum).name} received, stopping …", highlight=False)
        self._stop_requested = True

    def _checkpoint(self) -> None:
        if self._stop_requested:
            raise _Interrupted

    def _step(self, message: str) -> None:
        self.console.print(f"[green]✓[/] {message}", highlight=False)

    def _start(self) -> None:
        self.data_dir.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
        self.log_dir.mkdir(mode=PRIVATE_DIR_MODE, exist_ok=True)
        self._take_lock()
        self._check_gateway_ports()
        secure_data_dir(self.data_dir)  # also what an older version left readable
        database_url = self._start_database()
        self._checkpoint()
        self._migrate(database_url)
        self._checkpoint()
        address = self._start_temporal()
        self._checkpoint()
        bootstrap_key = self._bootstrap_admin(database_url)
        self._env = self._child_env(database_url, address)
        self._checkpoint()
        self._spawn_service("worker", [sys.executable, "-m", "api.cli", "worker"])
        gateway_url = self._start_gateway()
        self._checkpoint()
        self._apply_schedules(address)
        self._report(gateway_url, address, bootstrap_key)

    def _watch(self) -> int:
        """Until a signal: 0. A child that dies is restarted within its budget; past it, or Postgres: 1."""
        while not self._stop_requested:
            for child in [*([self._temporal] if self._temporal else []), *self._services]:
                code = child.process.poll()
                if code is not None and not self._restart(child, f"exit code {code}"):
                    return 0 if self._stop_requested else 1
            if self._postgres is not None and not self._postgres.get_postmaster_info().is_running():
                self._died("postgres", "server stopped", None)
                return 1
            time.sleep(0.5)
        return 0

    def _restart(self, child: Child, how: str) -> bool:
        """Start a dead child again after its backoff; False when its budget is spent (or a stop came)."""
        budget = self._budgets.setdefault(child.name, RestartBudget(self._restart_policy))
        delay = budget.next_delay(time.monotonic())
        if delay is None:
            self._died(
                child.name,
                f"{how}; {self._restart_policy.max_restarts} restarts within "
                f"{self._restart_policy.window_seconds:.0f} s",
                child,
            )
            return False
        self.console.print(
            f"[bold yellow]! {child.name} stopped unexpectedly ({how}); restarting in {delay:.0f} s[/]",
            highlight=False,
        )
        self.console.print(f"  last lines of {child.log_path}:", highlight=False)
        self.console.print(child.tail(), markup=False, highlight=False)
        self._stop_children([child])  # whatever is left of its process tree
        deadline = time.monotonic() + delay
        while time.monotonic() < deadline:
            if self._stop_requested:
                return False
            time.sleep(0.1)
        count = budget.record(time.monotonic())
        fresh = self._spawn(child.name, child.command, env=child.env)
        child.process = fresh.process
        self._step(
            f"{child.name} restarted (pid {fresh.process.pid}; restart {count} of at most "
            f"{self._restart_policy.max_restarts} within {self._restart_policy.window_seconds:.0f} s)"
        )
        return True

    def _died(self, name: str, how: str, child: Child | None) -> None:
        self.console.print(
            f"[bold red]✗ {name} stopped unexpectedly ({how}); stopping the rest[/]", highlight=False
        )
        if child is not None:
            self.console.print(f"  last lines of {child.log_path}:", highlight=False)
            self.console.print(child.tail(), markup=False, highlight=False)

    def _shutdown(self) -> None:
        self._stop_children(list(reversed(self._services)))
        self._services = []
        if self._temporal is not None:
            self._stop_children([self._temporal])
            self._temporal = None
        if self._postgres is not None:
            self.console.print("stopping Postgres …", highlight=False)
            stop_embedded_postgres(self._postgres, self.data_dir)
            self._postgres = None
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None

    # ---- pieces ----------------------------------------------------------------------------------

    def _take_lock(self) -> None:
        """One `loregate up` per data dir: a second one would fight over ports and the database files."""
        lock = open(  # noqa: SIM115 - held for the life of the supervisor
            self.data_dir / LOCK_FILE, "a+", opener=_private_opener
        )
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            owner = lock.read().strip() or "?"
            lock.close()
            raise StartupFailed(
                f"another `loregate up` (pid {owner}) is running on {self.data_dir}"
            ) from None
        lock.seek(0)
        lock.truncate()
        lock.write(str(os.getpid()))
        lock.flush()
        self._lock_file = lock

    def _start_database(self) -> str:
        if self.settings.database_url:
            from governance.storage.engine import describe_url

            self._step(f"Postgres: {describe_url(self.settings.database_url)} (LOREGATE_DATABASE_URL)")
            return self.settings.database_url
        pgdata = self.data_dir / "postgres"
        with self.console.status(f"starting embedded Postgres in {pgdata} …"):
            try:
                self._postgres, url = start_embedded_postgres(self.data_dir, private=True)
            except Exception as exc:  # pgserver: CalledProcessError/TimeoutExpired, its log is in pgdata/log
                raise StartupFailed(f"embedded Postgres did not start ({exc}); see {pgdata / 'log'}") from exc
        self._step(f"Postgres (embedded, pgvector): {pgdata}")
        return str(url)

    def _migrate(self, database_url: str) -> None:
        from sqlalchemy.exc import DBAPIError

        from governance.storage.migrate import upgrade_head

        with self.console.status("applying migrations …"):
            try:
                upgrade_head(database_url)
            except DBAPIError as exc:
                raise StartupFailed(f"database unreachable or refused the migration: {exc.orig}") from exc
        self._step("schema up to date")

    def _start_temporal(self) -> str:
        settings = self.settings
        if settings.temporal_address:
            address = settings.temporal_address
            with self.console.status(f"connecting to Temporal at {address} …"):
                self._wait_for_temporal(settings, None)
            self._step(
                f"Temporal: {address} (LOREGATE_TEMPORAL_ADDRESS), namespace {settings.temporal_namespace}"
            )
            return address
        address = f"127.0.0.1:{settings.temporal_port}"
        # the local dev server speaks plain gRPC whatever credentials are configured for a remote cluster
        local = settings.model_copy(
            update={
                "temporal_address": address,
                "temporal_tls": False,
                "temporal_api_key": None,
                "temporal_tls_cert": None,
                "temporal_tls_key": None,
            }
        )
        configured = {
            settings.temporal_port: "LOREGATE_TEMPORAL_PORT",
            settings.temporal_ui_port: "LOREGATE_TEMPORAL_UI_PORT",
        }
        for attempt in range(1, BIND_ATTEMPTS + 1):
            command = temporal_dev_server_command(
                db_file=self.data_dir / "temporal.db",
                port=settings.temporal_port,
                ui_port=settings.temporal_ui_port,
                search_attributes=SEARCH_ATTRIBUTES,
                http_port=self._pick_port(),
                metrics_port=self._pick_port(),
            )
            self._temporal = self._spawn("temporal", command, env=dict(os.environ))
            try:
                with self.console.status(f"starting Temporal dev server on {address} …"):
                    self._wait_for_temporal(local, self._temporal)
                break
            except StartupFailed as failed:
                in_use, setting = bind_failure(self._temporal.tail(), configured)
                if not in_use:
                    raise
                if setting is not None:
                    raise StartupFailed(
                        f"{failed}\nthe port is taken: choose another with {setting}"
                    ) from None
                if attempt == BIND_ATTEMPTS:
                    raise
                # a port picked here (HTTP API, metrics) was taken meanwhile: pick anew and start again
                self._step(
                    f"Temporal dev server: a port picked for it was taken; starting it again ({attempt})"
                )
        secure_data_dir(self.data_dir)  # temporal.db (workflow histories) from before the umask, too
        self._step(f"Temporal dev server: {address}, UI on port {settings.temporal_ui_port}")
        return address

    def _wait_for_temporal(self, settings: Settings, child: Child | None) -> None:
        """Until the namespace answers; a dev server that exits first is reported with its log."""
        from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest

        from workflows.client import connect_temporal

        async def probe() -> None:
            client = await connect_temporal(settings)
            await client.workflow_service.describe_namespace(
                DescribeNamespaceRequest(namespace=settings.temporal_namespace)
            )

        last_error = "no answer"
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            self._checkpoint()
            if child is not None and child.process.poll() is not None:
                raise StartupFailed(
                    f"Temporal dev server exited (code {child.process.returncode}); "
                    f"see {child.log_path}:\n{child.tail()}"
                )
            try:
                asyncio.run(probe())
                return
            except Exception as exc:  # connection refused / namespace not yet registered: try again
                last_error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            time.sleep(0.5)
        raise StartupFailed(f"Temporal at {settings.temporal_address} did not answer: {last_error}")

    def _bootstrap_admin(self, database_url: str) -> str | None:
        """On the first start (no principal yet) create a human admin and return its key, else None."""
        from sqlalchemy.exc import DBAPIError

        from governance.storage.engine import make_engine
        from governance.storage.identity import bootstrap_admin

        async def work() -> str | None:
            engine = make_engine(
                self.settings.model_copy(update={"database_url": database_url, "db_pool_size": 1})
            )
            try:
                async with engine.begin() as conn:
                    # two supervisors on one external database must not both bootstrap
                    return await bootstrap_admin(conn)
            finally:
                await engine.dispose()

        try:
            key = asyncio.run(work())
        except DBAPIError as exc:
            raise StartupFailed(f"could not check or create the bootstrap admin: {exc.orig}") from exc
        if key is not None:
            path = self.data_dir / BOOTSTRAP_KEY_FILE
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as out:
                os.fchmod(out.fileno(), 0o600)  # also when the file existed with wider permissions
                out.write(key + "\n")
        return key

    def _check_gateway_ports(self) -> None:
        """Refuse at once a gateway port another process listens on. Else the gateway's health check is
        answered by that process (another `loregate up`, say): `up` reported a gateway that never bound,
        and gRPC's SO_REUSEPORT would even share the port with it."""
        host = self.settings.http_host
        for port, option in ((self.settings.http_port, "http"), (self.settings.grpc_port, "grpc")):
            if port and _port_taken(host, port):
                raise StartupFailed(
                    f"port {port} on {host or '0.0.0.0'} is already in use (another `loregate up` or "
                    f"program listens there); choose another with --{option}-port "
                    f"(LOREGATE_{option.upper()}_PORT)"
                )

    def _start_gateway(self) -> str:
        settings = self.settings
        self._spawn_service(
            "gateway",
            [
                sys.executable,
                "-m",
                "api.cli",
                "serve",
                "--host",
                settings.http_host,
                "--port",
                str(settings.http_port),
            ],
        )
        probe_host = "127.0.0.1" if settings.http_host in ("0.0.0.0", "::", "") else settings.http_host
        url = f"http://{probe_host}:{settings.http_port}"
        gateway = self._services[-1]
        with self.console.status(f"starting HTTP gateway on {url} …"):
            self._wait_until(
                lambda: _answers(f"{url}/healthz"), gateway, f"HTTP gateway at {url}/healthz did not answer"
            )
        self._step(f"HTTP gateway: {url}")
        return url

    def _apply_schedules(self, address: str) -> None:
        from workflows.client import connect_temporal
        from workflows.schedules import apply_schedules

        settings = self.settings.model_copy(update={"temporal_address": address})

        async def apply() -> None:
            await apply_schedules(await connect_temporal(settings), settings)

        with self.console.status("applying schedules …"):
            try:
                asyncio.run(apply())
            except RuntimeError as exc:
                raise StartupFailed(f"could not apply the Temporal schedules: {exc}") from exc
        self._step("schedules applied")

    def _report(self, gateway_url: str, address: str, bootstrap_key: str | None) -> None:
        settings = self.settings
        self.console.print()
        self.console.print("[bold]loregate is up[/]", highlight=False)
        self.console.print(f"  HTTP gateway  {gateway_url}   (OpenAPI: {gateway_url}/docs)", highlight=False)
        if settings.grpc_port:
            self.console.print(f"  gRPC gateway  {settings.http_host}:{settings.grpc_port}", highlight=False)
        if self._temporal is not None:
            self.console.print(
                f"  Temporal UI   http://127.0.0.1:{settings.temporal_ui_port}", highlight=False
            )
        self.console.print(
            f"  Temporal      {address}, namespace {settings.temporal_namespace}", highlight=False
        )
        self.console.print(f"  data          {self.data_dir}", highlight=False)
        self.console.print(f"  logs          {self.log_dir}", highlight=False)
        self.console.print(f"  approvals     {approval_mode_line(settings)}", highlight=False)
        key_file = self.data_dir / BOOTSTRAP_KEY_FILE
        if bootstrap_key is not None:
            self.console.print()
            self.console.print(
                f"[bold yellow]Bootstrap admin API key[/] (shown once; also saved to {key_file}, mode 0600):",
                highlight=False,
            )
            self.console.print(bootstrap_key, soft_wrap=True, markup=False, highlight=False)
        elif key_file.exists():
            self.console.print(f"  admin key     in {key_file}", highlight=False)
        self.console.print()
        self.console.print("Press Ctrl-C to stop.", highlight=False)

    # ---- processes -------------------------------------------------------------------------------

    def _child_env(self, database_url: str, address: str) -> dict[str, str]:
        """The children see the resolved database and Temporal, whatever started them."""
        env = dict(os.environ)
        env.update(
            LOREGATE_DATABASE_URL=database_url,
            LOREGATE_TEMPORAL_ADDRESS=address,
            LOREGATE_DATA_DIR=str(self.data_dir),
            LOREGATE_HTTP_HOST=self.settings.http_host,
            LOREGATE_HTTP_PORT=str(self.settings.http_port),
            LOREGATE_GRPC_PORT=str(self.settings.grpc_port),
            # the console links each promotion to the UI of the dev server this supervisor started
            LOREGATE_TEMPORAL_UI_PORT=str(self.settings.temporal_ui_port),
            PYTHONUNBUFFERED="1",
        )
        return env

    def _spawn(self, name: str, command: list[str], *, env: dict[str, str]) -> Child:
        log_path = self.log_dir / f"{name}.log"
        with open(log_path, "ab", opener=_private_opener) as log:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,  # Ctrl-C reaches only the supervisor, which stops children in order
                umask=CHILD_UMASK,  # what a child creates (Temporal's sqlite files) is the owner's alone
            )
        return Child(name, process, log_path, command=command, env=env)

    def _spawn_service(self, name: str, command: list[str]) -> None:
        self._services.append(self._spawn(name, command, env=self._env))

    def _wait_until(self, ready: Callable[[], bool], child: Child, failure: str) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            self._checkpoint()
            for service in self._services:
                if service.process.poll() is not None:
                    raise StartupFailed(
                        f"{service.name} exited (code {service.process.returncode}); "
                        f"see {service.log_path}:\n{service.tail()}"
                    )
            if ready():
                return
            time.sleep(0.5)
        raise StartupFailed(f"{failure} within {self.startup_timeout:.0f} s; see {child.log_path}")

    def _stop_children(self, children: list[Child]) -> None:
        """SIGTERM each child, wait the grace period for its whole tree, SIGKILL what is left."""
        tree: list[psutil.Process] = []
        for child in children:
            try:
                leader = psutil.Process(child.process.pid)
                tree += [leader, *leader.children(recursive=True)]
            except psutil.NoSuchProcess:
                pass
            if child.process.poll() is None:
                self.console.print(f"stopping {child.name} …", highlight=False)
                child.process.terminate()
        _, alive = psutil.wait_procs(tree, timeout=self.grace_seconds)
        for process in alive:
            self.console.print(
                f"{process.pid} did not stop in {self.grace_seconds:.0f} s, killing it", highlight=False
            )
            try:
                process.kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(alive, timeout=5)
        for child in children:
            try:
                child.process.wait(timeout=1)
            except subprocess.TimeoutExpired:
                child.process.kill()


def _private_opener(path: str, flags: int) -> int:
    """`open(..., opener=)` creating the file 0600 (and making an existing one 0600)."""
    fd = os.open(path, flags, PRIVATE_FILE_MODE)
    os.fchmod(fd, PRIVATE_FILE_MODE)
    return fd


def _port_taken(host: str, port: int) -> bool:
    """Whether a listening socket holds `port` on `host` (a bind as the gateway's would fail)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn: TIME_WAIT is no owner
        try:
            probe.bind((host or "0.0.0.0", port))
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


def approval_mode_line(settings: Settings) -> str:
    """What `loregate up` says about who may decide through Temporal (governance/approval.py)."""
    mode = settings.gate_mode
    if mode is ApprovalMode.TRUSTING:
        return (
            "[bold yellow]trusting[/]: a Temporal UI signal or raw start is believed as it names its sender; "
            "for a single local operator only (LOREGATE_APPROVAL_MODE=authenticated asks for proof)"
        )
    if mode is ApprovalMode.API_ONLY:
        return "api_only: decisions only through the API, CLI or console; Temporal UI signals are refused"
    return (
        "authenticated: a Temporal UI decision needs a token from `loregate approval-token`; "
        "raw starts need the gateway's grant"
    )
