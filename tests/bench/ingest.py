"""Staging ingest benchmark: HTTP gateway rows/s against a raw psycopg COPY into the same table, same run.

    python tests/bench/ingest.py [--clients N] [--seconds S] [--workers W] [--batch B] [--same-task]

Starts its own embedded Postgres (pgserver, in a temporary directory) with the migrations applied, runs the
gateway as `uvicorn --factory api.http.app:create_app --workers W` (separate OS processes), and drives it with
an asyncio load generator (one httpx.AsyncClient per client, HTTP/1.1 keep-alive) from this process. Prints:

  - single-entry appends: rows/s with N concurrent clients, p50/p99 latency
  - batches of B (default 100) entries: rows/s
  - a plain psycopg COPY of the same rows into staging_entries: rows/s
  - the ratios, against the targets (batched >= 0.3 of COPY; single >= 1,500/s with p99 < 50 ms)

Everything (Postgres, gateway processes, load generator) shares this machine's cores, so the load
generator's own CPU is part of the measurement; the figures are a floor for a gateway on its own host.
Not collected by pytest (tests/bench is outside the default run).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from api.cli.embedded import start_embedded_postgres  # noqa: E402
from governance.config import Settings  # noqa: E402
from governance.scopes import ActorType, EntryKind  # noqa: E402
from governance.staging import EntryDraft, canonical_payload, request_hash  # noqa: E402
from governance.storage.engine import make_engine  # noqa: E402
from governance.storage.identity import create_api_key, create_principal  # noqa: E402
from governance.storage.migrate import upgrade_head  # noqa: E402

CONTENT = "ran pytest -q tests/api: 42 passed, 1 skipped in 3.1s; next: profile the append path " * 2
PAYLOAD = {"tool": "pytest", "exit_code": 0, "duration_ms": 3100}


@dataclass
class Phase:
    """Rows written and request latencies of one measured phase."""

    name: str
    rows: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    requests: int = 0
    gateway_cpu: float = 0.0  # CPU seconds the gateway processes spent in this phase
    client_cpu: float = 0.0  # CPU seconds of this load generator

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.seconds if self.seconds else 0.0

    def pct(self, q: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


@dataclass
class Fixture:
    """Keys and tasks made directly in the database before the gateway is loaded."""

    agent_keys: list[str]
    task_ids: list[str]
    copy_task_id: str
    agent_id: str


async def _prepare(database_url: str, clients: int, same_task: bool) -> Fixture:
    """One agent principal per client, and the tasks they write into (one shared task with --same-task)."""
    engine = make_engine(Settings(database_url=database_url))
    keys: list[str] = []
    agent_id = ""
    async with engine.begin() as conn:
        for i in range(clients):
            principal = await create_principal(
                conn, name=f"bench-agent-{i}", actor_type=ActorType.AGENT, org="bench", project="ingest"
            )
            agent_id = principal.id
            keys.append(await create_api_key(conn, principal.id))
        count = 1 if same_task else clients
        task_ids = [f"bench-{uuid.uuid4().hex[:10]}" for _ in range(count + 1)]
        for task_id in task_ids:
            await conn.exec_driver_sql(
                "INSERT INTO tasks (id, org, project, worktree, description, created_by) "
                "VALUES (%(id)s, 'bench', 'ingest', 'main', 'ingest benchmark', 'bench')",
                {"id": task_id},
            )
    await engine.dispose()
    return Fixture(keys, task_ids[:-1], task_ids[-1], agent_id)


def _start_gateway(database_url: str, port: int, workers: int, pool: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "LOREGATE_DATABASE_URL": database_url, "LOREGATE_DB_POOL_SIZE": str(pool)}
    # throughput is measured here, not limits: one tenant's 16 keys would pass its request rate and quota
    env |= {
        "LOREGATE_RATE_LIMIT_PRINCIPAL_PER_SECOND": "0",
        "LOREGATE_RATE_LIMIT_TENANT_PER_SECOND": "0",
        "LOREGATE_STAGING_MAX_TENANT_ENTRIES_PER_DAY": "0",
        "LOREGATE_STAGING_MAX_TENANT_BYTES_PER_DAY": "0",
    }
    # what a user runs: `loregate serve` (its HTTP protocol, no access log), gRPC off
    cmd = [
        sys.executable,
        "-m",
        "api.cli",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--grpc-port",
        "0",
    ]
    return subprocess.Popen(cmd, env=env, cwd=REPO)


def _wait_healthy(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"gateway at {url} did not become healthy")


async def _drive(url: str, fx: Fixture, *, clients: int, seconds: float, batch: int, phase: Phase) -> None:
    """N clients, each sending one request at a time for `seconds`; rows and latencies go into `phase`."""
    body = {"entries": [{"kind": "tool_output", "content": CONTENT, "payload": PAYLOAD}] * batch}
    stop_at = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)

    async def client(i: int) -> None:
        task_id = fx.task_ids[i % len(fx.task_ids)]
        headers = {"Authorization": f"Bearer {fx.agent_keys[i]}"}
        async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=30) as http:
            while time.perf_counter() < stop_at:
                start = time.perf_counter()
                r = await http.post(f"/v1/tasks/{task_id}/entries", json=body)
                phase.latencies.append(time.perf_counter() - start)
                phase.requests += 1
                if r.status_code == 201:
                    phase.rows += batch
                else:
                    phase.errors += 1

    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(client(i) for i in range(clients)))
    phase.seconds = time.perf_counter() - started
    phase.client_cpu = time.process_time() - cpu


def _cpu_of(proc: subprocess.Popen[bytes]) -> float:
    """User+system CPU seconds of the gateway's processes (the uvicorn supervisor and its workers)."""
    import psutil

    total = 0.0
    root = psutil.Process(proc.pid)
    for p in [root, *root.children(recursive=True)]:
        try:
            times = p.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            pass
    return total


def _measure(
    url: str, fx: Fixture, gateway: subprocess.Popen[bytes], phase: Phase, **kwargs: object
) -> Phase:
    """Run one phase and charge it the gateway CPU it cost (a load-independent figure on a shared machine)."""
    before = _cpu_of(gateway)
    asyncio.run(_drive(url, fx, phase=phase, **kwargs))  # type: ignore[arg-type]
    phase.gateway_cpu = _cpu_of(gateway) - before
    return phase


def _copy(database_url: str, fx: Fixture, rows: int) -> Phase:
    """The baseline: the same rows as the gateway writes, through one plain COPY."""
    draft = EntryDraft(kind=EntryKind.TOOL_OUTPUT, content=CONTENT, payload=PAYLOAD)
    payload, rhash = canonical_payload(PAYLOAD), request_hash(draft)
    phase = Phase("copy")
    with psycopg.connect(database_url) as conn:
        start = time.perf_counter()
        with conn.cursor() as cur:
            with cur.copy(
                "COPY staging_entries (task_id, seq, actor_id, actor_type, kind, content, payload, "
                "request_hash) FROM STDIN"
            ) as copy:
                for seq in range(1, rows + 1):
                    copy.write_row(
                        (fx.copy_task_id, seq, fx.agent_id, "agent", "tool_output", CONTENT, payload, rhash)
                    )
        conn.commit()
        phase.seconds = time.perf_counter() - start
    phase.rows = rows
    return phase


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=2, help="uvicorn worker processes")
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--pool", type=int, default=16, help="LOREGATE_DB_POOL_SIZE of each worker")
    parser.add_argument("--copy-rows", type=int, default=200_000)
    parser.add_argument("--same-task", action="store_true", help="all clients write into one task")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="loregate-bench-") as tmp:
        server, _ = start_embedded_postgres(Path(tmp))
        gateway: subprocess.Popen[bytes] | None = None
        try:
            server.psql("CREATE DATABASE bench;")
            database_url = server.get_uri("bench")
            upgrade_head(database_url)
            fx = asyncio.run(_prepare(database_url, args.clients, args.same_task))
            from tests.utils.gateway import free_port

            port = free_port()
            url = f"http://127.0.0.1:{port}"
            gateway = _start_gateway(database_url, port, args.workers, args.pool)
            _wait_healthy(url)

            _measure(url, fx, gateway, Phase("warm-up"), clients=args.clients, seconds=2, batch=1)
            single = _measure(
                url, fx, gateway, Phase("single"), clients=args.clients, seconds=args.seconds, batch=1
            )
            batched = _measure(
                url,
                fx,
                gateway,
                Phase(f"batch-{args.batch}"),
                clients=args.clients,
                seconds=args.seconds,
                batch=args.batch,
            )
            copy = _copy(database_url, fx, args.copy_rows)
        finally:
            if gateway is not None:
                gateway.terminate()
                gateway.wait(timeout=20)
            server.cleanup()

    import importlib.util

    loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    http = "httptools" if importlib.util.find_spec("httptools") else "h11"
    print(
        f"configuration: {os.cpu_count()} cores shared by Postgres (pgserver), {args.workers} uvicorn worker "
        f"process(es) [{loop} loop, {http} parser], and this load generator (httpx.AsyncClient, "
        f"{args.clients} clients, keep-alive, one request in flight per client); db pool {args.pool}/worker; "
        f"{'one shared task' if args.same_task else 'one task per client'}; "
        f"{len(CONTENT)}-char entries with a small JSON payload; {args.seconds:g} s per phase"
    )
    print(
        f"single-entry appends : {single.rows_per_s:9,.0f} rows/s   p50 {single.pct(0.5):6.1f} ms   "
        f"p99 {single.pct(0.99):6.1f} ms   errors {single.errors}"
    )
    print(
        f"batches of {args.batch:<4}       : {batched.rows_per_s:9,.0f} rows/s   "
        f"p50 {batched.pct(0.5):6.1f} ms   "
        f"p99 {batched.pct(0.99):6.1f} ms   errors {batched.errors}"
    )
    for ph in (single, batched):
        print(
            f"  {ph.name:<10} CPU per request: gateway {1000 * ph.gateway_cpu / max(ph.requests, 1):.2f} ms, "
            f"load generator {1000 * ph.client_cpu / max(ph.requests, 1):.2f} ms  ({ph.requests} requests)"
        )
    print(f"machine load average : {os.getloadavg()[0]:.1f} (other work on these cores slows every figure)")
    print(
        f"raw psycopg COPY     : {copy.rows_per_s:9,.0f} rows/s   "
        f"({copy.rows:,} rows in {copy.seconds:.2f} s)"
    )
    batch_ratio = batched.rows_per_s / copy.rows_per_s
    single_ratio = single.rows_per_s / copy.rows_per_s
    print(
        f"ratio batched/COPY   : {batch_ratio:.3f}   "
        f"(target >= 0.30: {'met' if batch_ratio >= 0.3 else 'MISSED'})"
    )
    print(f"ratio single/COPY    : {single_ratio:.4f}")
    ok = single.rows_per_s >= 1500 and single.pct(0.99) < 50
    print(f"single-entry target  : >= 1,500 rows/s with p99 < 50 ms: {'met' if ok else 'MISSED'}")
    if statistics.mean(single.latencies or [0]) and single.errors + batched.errors:
        print(f"note: {single.errors + batched.errors} requests were refused; figures count only stored rows")


if __name__ == "__main__":
    main()
