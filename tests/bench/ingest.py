"""Staging ingest benchmark: HTTP gateway rows/s against a raw psycopg COPY into the same table, same run.

    python tests/bench/ingest.py [--clients N] [--seconds S] [--workers W] [--batch B] [--same-task]
                                 [--stream-messages M] [--no-grpc] [--daily-quotas] [--py-spy DIR]

Starts its own embedded Postgres (pgserver, in a temporary directory) with the migrations applied, runs the
gateway as `uvicorn --factory api.http.app:create_app --workers W` (separate OS processes), and drives it with
an asyncio load generator (one httpx.AsyncClient per client, HTTP/1.1 keep-alive; one grpc.aio channel per
client) from this process. Prints:

  - single-entry appends: rows/s with N concurrent clients, p50/p99 latency, over HTTP and over gRPC (one
    AppendEntries call carrying one entry)
  - batches of B (default 100) entries: rows/s over HTTP, and over gRPC as streams of M messages of B entries
  - a plain psycopg COPY of the same rows into staging_entries, before the gateway phases and after them:
    rows/s of each, and Postgres' CPU per row
  - the ratios to the mean of the two COPYs, against the targets (batched >= 0.5 of COPY; single >=
    1,500/s with p99 < 50 ms)

Every measured phase starts from a settled database: autovacuum is off on the bench's own server, and before
each phase (untimed) `VACUUM (ANALYZE)` of staging and a `CHECKPOINT` clear the debt the previous phase left.
Without this, the autovacuum of the first COPY's 200,000 rows ran during a gateway phase and was charged to
it (seen in `pg_stat_all_tables`: the vacuum and analyze of the month's partition ended mid-phase).
`--no-settle` measures the old way.

With `--py-spy DIR` every gateway worker is sampled by py-spy during each measured phase (raw collapsed
stacks in DIR, `<phase>-<pid>.txt`; py-spy is not a dependency): where a request's CPU goes (docs/scaling.md,
"The append path, profiled").

Everything (Postgres, gateway processes, load generator) shares this machine's cores, so the load
generator's own CPU is part of the measurement; the figures are a floor for a gateway on its own host.
Not collected by pytest (tests/bench is outside the default run).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
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
    db_cpu: float = 0.0  # CPU seconds Postgres' processes (postmaster and backends) spent in this phase
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


def _start_gateway(
    database_url: str, port: int, workers: int, pool: int, grpc_port: int, daily_quotas: bool = False
) -> subprocess.Popen[bytes]:
    env = {**os.environ, "LOREGATE_DATABASE_URL": database_url, "LOREGATE_DB_POOL_SIZE": str(pool)}
    # throughput is measured here, not limits: one tenant's 16 keys would pass its request rate and quota
    env |= {
        "LOREGATE_RATE_LIMIT_PRINCIPAL_PER_SECOND": "0",
        "LOREGATE_RATE_LIMIT_TENANT_PER_SECOND": "0",
    }
    if not daily_quotas:  # else the defaults count every append on the tenant's day (a transaction each)
        env |= {
            "LOREGATE_STAGING_MAX_TENANT_ENTRIES_PER_DAY": "0",
            "LOREGATE_STAGING_MAX_TENANT_BYTES_PER_DAY": "0",
        }
    # what a user runs: `loregate serve` (its HTTP protocol, no access log), gRPC in the same processes
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
        str(grpc_port),
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


async def _drive(
    url: str, fx: Fixture, *, clients: int, seconds: float, batch: int, phase: Phase, raw: bool = True
) -> None:
    """N clients, each sending one request at a time for `seconds`; rows and latencies go into `phase`.

    `raw` (the default): each client writes its request, encoded once, on its own keep-alive connection and
    reads the answer by Content-Length: ~0.1 ms of load-generator CPU per request. httpx (`--http-client
    httpx`) spends ~1.3-2 ms per request, which on a busy machine capped this phase at the load generator
    (measured: 41-91 single appends/s while the gateway had CPU to spare).
    """
    body = {"entries": [{"kind": "tool_output", "content": CONTENT, "payload": PAYLOAD}] * batch}
    stop_at = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    host, _, port = url.removeprefix("http://").partition(":")

    async def raw_client(i: int) -> None:
        task_id = fx.task_ids[i % len(fx.task_ids)]
        content = json.dumps(body).encode()
        request = (
            f"POST /v1/tasks/{task_id}/entries HTTP/1.1\r\nHost: {host}\r\n"
            f"Authorization: Bearer {fx.agent_keys[i]}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(content)}\r\n\r\n"
        ).encode() + content
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while time.perf_counter() < stop_at:
                start = time.perf_counter()
                writer.write(request)
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length:", 1)[1].split(b"\r\n", 1)[0])
                await reader.readexactly(length)
                phase.latencies.append(time.perf_counter() - start)
                phase.requests += 1
                if head.startswith(b"HTTP/1.1 201"):
                    phase.rows += batch
                else:
                    phase.errors += 1
        finally:
            writer.close()

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
    await asyncio.gather(*((raw_client if raw else client)(i) for i in range(clients)))
    phase.seconds = time.perf_counter() - started
    phase.client_cpu = time.process_time() - cpu


async def _drive_grpc(
    target: str, fx: Fixture, *, clients: int, seconds: float, batch: int, messages: int, phase: Phase
) -> None:
    """N clients, each making one AppendEntries call at a time: `messages` messages of `batch` entries."""
    import grpc

    from api.grpc.proto import pb2, pb2_grpc

    entry = pb2.Entry(kind="tool_output", content=CONTENT, payload_json=json.dumps(PAYLOAD))
    stop_at = time.perf_counter() + seconds

    async def client(i: int) -> None:
        task_id = fx.task_ids[i % len(fx.task_ids)]
        metadata = (("authorization", f"Bearer {fx.agent_keys[i]}"),)
        requests = [pb2.AppendRequest(task_id=task_id, entries=[entry] * batch)]
        requests += [pb2.AppendRequest(entries=[entry] * batch) for _ in range(messages - 1)]
        async with grpc.aio.insecure_channel(target) as channel:
            stub = pb2_grpc.LoregateStub(channel)
            while time.perf_counter() < stop_at:
                start = time.perf_counter()
                try:
                    reply = await stub.AppendEntries(iter(requests), metadata=metadata, timeout=30)
                except grpc.aio.AioRpcError:
                    phase.errors += 1
                    reply = None
                phase.latencies.append(time.perf_counter() - start)
                phase.requests += 1
                if reply is not None:
                    phase.rows += len(reply.entries)

    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(client(i) for i in range(clients)))
    phase.seconds = time.perf_counter() - started
    phase.client_cpu = time.process_time() - cpu


def _workers_of(proc: subprocess.Popen[bytes]) -> list[int]:
    """The gateway's worker processes (uvicorn's children that serve requests)."""
    import psutil

    root = psutil.Process(proc.pid)
    found = [p for p in root.children(recursive=True) if "python" in p.name().lower()]
    return [p.pid for p in found if not p.children()] or [proc.pid]


def _py_spy(
    proc: subprocess.Popen[bytes], out: Path | None, phase: str, seconds: float
) -> list[subprocess.Popen[bytes]]:
    """py-spy samplers of the gateway's workers for one phase (none without `--py-spy`)."""
    if out is None:
        return []
    out.mkdir(parents=True, exist_ok=True)
    spies = []
    for pid in _workers_of(proc):
        cmd = ["py-spy", "record", "--pid", str(pid), "--format", "raw", "--rate", "250"]
        cmd += [
            "--duration",
            str(max(1, int(seconds))),
            "--nonblocking",
            "-o",
            str(out / f"{phase}-{pid}.txt"),
        ]
        spies.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    return spies


def _cpu_of(proc: subprocess.Popen[bytes] | int) -> float:
    """User+system CPU seconds of a process tree: the gateway's (the uvicorn supervisor and its workers), or
    Postgres' (the postmaster and its backends; a backend that ended during the phase is not counted)."""
    import psutil

    total = 0.0
    root = psutil.Process(proc if isinstance(proc, int) else proc.pid)
    for p in [root, *root.children(recursive=True)]:
        try:
            times = p.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            pass
    return total


# the bench database's URL while it runs (None: phases are not settled, `--no-settle`)
_SETTLE: list[str | None] = [None]


def _settle() -> None:
    """Clear the maintenance debt of the phase before (untimed): vacuum and analyze staging, checkpoint."""
    if _SETTLE[0] is None:
        return
    with psycopg.connect(_SETTLE[0], autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE) staging_entries")
        conn.execute("CHECKPOINT")


def _measure(
    url: str,
    fx: Fixture,
    gateway: subprocess.Popen[bytes],
    phase: Phase,
    *,
    spy: Path | None = None,
    grpc_target: str | None = None,
    **kwargs: object,
) -> Phase:
    """Run one phase and charge it the gateway CPU it cost (a load-independent figure on a shared machine)."""
    _settle()
    spies = _py_spy(gateway, spy, phase.name, float(kwargs["seconds"]))  # type: ignore[arg-type]
    before, db_before = _cpu_of(gateway), _cpu_of(_POSTMASTER[0])
    if grpc_target is None:
        asyncio.run(_drive(url, fx, phase=phase, **kwargs))  # type: ignore[arg-type]
    else:
        asyncio.run(_drive_grpc(grpc_target, fx, phase=phase, **kwargs))  # type: ignore[arg-type]
    phase.gateway_cpu = _cpu_of(gateway) - before
    phase.db_cpu = _cpu_of(_POSTMASTER[0]) - db_before
    for s in spies:
        s.wait(timeout=60)
    return phase


# the postmaster's pid, once Postgres runs (its first line of postmaster.pid)
_POSTMASTER: list[int] = [0]


def _copy(database_url: str, fx: Fixture, rows: int, first_seq: int = 1) -> Phase:
    """The baseline: the same rows as the gateway writes, through one plain COPY."""
    draft = EntryDraft(kind=EntryKind.TOOL_OUTPUT, content=CONTENT, payload=PAYLOAD)
    payload, rhash = canonical_payload(PAYLOAD), request_hash(draft)
    phase = Phase("copy")
    _settle()
    with psycopg.connect(database_url) as conn:
        db_before = _cpu_of(_POSTMASTER[0])
        start = time.perf_counter()
        with conn.cursor() as cur:
            with cur.copy(
                "COPY staging_entries (task_id, seq, actor_id, actor_type, kind, content, payload, "
                "request_hash) FROM STDIN"
            ) as copy:
                for seq in range(first_seq, first_seq + rows):
                    copy.write_row(
                        (fx.copy_task_id, seq, fx.agent_id, "agent", "tool_output", CONTENT, payload, rhash)
                    )
        conn.commit()
        phase.seconds = time.perf_counter() - start
        phase.db_cpu = _cpu_of(_POSTMASTER[0]) - db_before
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
    parser.add_argument("--stream-messages", type=int, default=10, help="messages per gRPC stream call")
    parser.add_argument("--no-grpc", action="store_true", help="measure HTTP only")
    parser.add_argument(
        "--daily-quotas",
        action="store_true",
        help="keep the default daily tenant quotas (counted in a transaction per append) instead of none",
    )
    parser.add_argument(
        "--http-client", choices=("raw", "httpx"), default="raw", help="HTTP load generator (see _drive)"
    )
    parser.add_argument(
        "--no-settle",
        action="store_true",
        help="leave autovacuum on and start each phase without VACUUM and CHECKPOINT (the old way)",
    )
    parser.add_argument("--py-spy", type=Path, default=None, help="sample the workers into this directory")
    args = parser.parse_args()
    phases: list[Phase] = []

    with tempfile.TemporaryDirectory(prefix="loregate-bench-") as tmp:
        server, _ = start_embedded_postgres(Path(tmp))
        _POSTMASTER[0] = int((Path(tmp) / "postgres" / "postmaster.pid").read_text().split()[0])
        gateway: subprocess.Popen[bytes] | None = None
        try:
            server.psql("CREATE DATABASE bench;")
            database_url = server.get_uri("bench")
            upgrade_head(database_url)
            if not args.no_settle:  # maintenance runs between phases, never during one (see the docstring)
                server.psql("ALTER SYSTEM SET autovacuum = off;")
                server.psql("SELECT pg_reload_conf();")
                _SETTLE[0] = database_url
            fx = asyncio.run(_prepare(database_url, args.clients, args.same_task))
            from tests.utils.gateway import free_port

            port, grpc_port = free_port(), 0 if args.no_grpc else free_port()
            url = f"http://127.0.0.1:{port}"
            gateway = _start_gateway(
                database_url, port, args.workers, args.pool, grpc_port, args.daily_quotas
            )
            _wait_healthy(url)
            grpc_target = f"127.0.0.1:{grpc_port}"

            # the baseline before the gateway phases and again after them: the machine's load moves
            # during a run, and the ratios use the mean of the two (both are printed)
            copies = [_copy(database_url, fx, args.copy_rows)]
            common = dict(clients=args.clients, seconds=args.seconds, spy=args.py_spy)
            raw = args.http_client == "raw"
            _measure(url, fx, gateway, Phase("warm-up"), clients=args.clients, seconds=2, batch=1, raw=raw)
            single = _measure(url, fx, gateway, Phase("single"), batch=1, raw=raw, **common)
            batched = _measure(
                url, fx, gateway, Phase(f"batch-{args.batch}"), batch=args.batch, raw=raw, **common
            )
            phases = [single, batched]
            if not args.no_grpc:
                _measure(
                    url,
                    fx,
                    gateway,
                    Phase("warm-up"),
                    grpc_target=grpc_target,
                    clients=args.clients,
                    seconds=2,
                    batch=1,
                    messages=1,
                )
                for name, batch, messages in (
                    ("grpc-single", 1, 1),
                    (f"grpc-stream-{args.stream_messages}x{args.batch}", args.batch, args.stream_messages),
                ):
                    phases.append(
                        _measure(
                            url,
                            fx,
                            gateway,
                            Phase(name),
                            grpc_target=grpc_target,
                            batch=batch,
                            messages=messages,
                            **common,
                        )
                    )
            copies.append(_copy(database_url, fx, args.copy_rows, first_seq=args.copy_rows + 1))
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
        f"process(es) [{loop} loop, {http} parser], and this load generator ({args.http_client} HTTP client, "
        f"{args.clients} clients, keep-alive, one request in flight per client); db pool {args.pool}/worker; "
        f"{'one shared task' if args.same_task else 'one task per client'}; "
        f"{'phases not settled' if args.no_settle else 'each phase settled first (no autovacuum in it)'}; "
        f"{'default daily quotas' if args.daily_quotas else 'no daily quota'}; "
        f"{len(CONTENT)}-char entries with a small JSON payload; {args.seconds:g} s per phase"
    )
    for ph in phases:
        print(
            f"{ph.name:<23}: {ph.rows_per_s:9,.0f} rows/s   p50 {ph.pct(0.5):7.1f} ms   "
            f"p99 {ph.pct(0.99):7.1f} ms   errors {ph.errors}"
        )
    for ph in phases:
        print(
            f"  {ph.name:<20} CPU per call: gateway {1000 * ph.gateway_cpu / max(ph.requests, 1):.2f} ms "
            f"({1000 * ph.gateway_cpu / max(ph.rows, 1):.3f} ms/row), "
            f"load generator {1000 * ph.client_cpu / max(ph.requests, 1):.2f} ms, "
            f"Postgres {1000 * ph.db_cpu / max(ph.requests, 1):.2f} ms "
            f"({1e6 * ph.db_cpu / max(ph.rows, 1):.1f} µs/row)  ({ph.requests} calls)"
        )
    print(f"machine load average : {os.getloadavg()[0]:.1f} (other work on these cores slows every figure)")
    for when, copy in zip(("before", "after"), copies, strict=True):
        print(
            f"raw psycopg COPY {when:<6}: {copy.rows_per_s:9,.0f} rows/s   "
            f"({copy.rows:,} rows in {copy.seconds:.2f} s; "
            f"Postgres CPU {1e6 * copy.db_cpu / copy.rows:.1f} µs/row)"
        )
    copy = Phase("copy", rows=1, seconds=1 / statistics.mean(c.rows_per_s for c in copies))
    print(f"raw psycopg COPY mean  : {copy.rows_per_s:9,.0f} rows/s (the baseline of the ratios)")
    for ph in phases:
        ratio = ph.rows_per_s / copy.rows_per_s
        goal = ""
        if ph.name.startswith(("batch", "grpc-stream")):
            goal = f"   (target >= 0.50: {'met' if ratio >= 0.5 else 'MISSED'})"
        print(f"ratio {ph.name + '/COPY':<26}: {ratio:.4f}{goal}")
    for ph in phases:
        if ph.name.endswith("single"):
            ok = ph.rows_per_s >= 1500 and ph.pct(0.99) < 50
            print(f"{ph.name} target: >= 1,500 rows/s with p99 < 50 ms: {'met' if ok else 'MISSED'}")
    refused = sum(ph.errors for ph in phases)
    if statistics.mean(single.latencies or [0]) and refused:
        print(f"note: {refused} requests were refused; figures count only stored rows")


if __name__ == "__main__":
    main()
