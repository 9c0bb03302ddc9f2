"""Beyond one machine: two gateways and two workers, as OS processes, on one Postgres and one Temporal.

Eight agents append a few hundred staging entries each, in batches with idempotency keys, through both
gateways; their tasks are promoted (task scope, verification in the start input) through both gateways.
Meanwhile one worker is SIGKILLed with promotions in flight (preferably while it holds a started activity)
and a replacement starts, and one gateway is SIGKILLed with batches in flight: a client whose request broke
retries the same batch, with the same idempotency keys, against the surviving gateway.

Then every acknowledged write is stored exactly once with gapless sequence numbers, every started promotion
is published, and nothing is published twice. `pytest -s` shows the figures.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.api.enums.v1 import PendingActivityState, TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

from governance.scopes import ActorType
from tests.system.processes import Child, Cluster
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.tenancy import task_key_of
from workflows.promotion import PromotionWorkflow
from workflows.promotion_contract import PromotionResult, PromotionState, workflow_id_for

TASKS = 8
EARLY = 4  # tasks 0..3 write at full speed and are promoted first; 4..7 keep writing through the faults
ENTRIES_PER_TASK = 300
BATCH = 30
BATCHES = ENTRIES_PER_TASK // BATCH
PROMOTION_BODY = {"target_scope": "task", "verification": {"source": "tests_passed", "success": True}}
PROMOTION_TIMEOUT = 75.0  # a promotion whose worker vanished must be resumed well within this


def entry(task_index: int, j: int) -> dict[str, Any]:
    """Entry j of a task: a few that distil into memories, the rest the chatter of an agent at work."""
    t = task_index
    special: dict[int, tuple[str, str, dict[str, Any] | None]] = {
        0: ("decision", f"db.driver: psycopg 3 with the async API for shard {t}", {"key": "db.driver"}),
        1: ("fact", f"Shard {t} builds its release wheels with maturin on manylinux 2014.", None),
        2: ("error", f"ImportError: no module named psycopg2 in worker {t}", None),
        3: ("result", f"Switched worker {t} to psycopg; all its tests pass.", {"repeatable": True}),
        4: ("fact", f"The staging database of shard {t} listens on port {5400 + t} behind pgbouncer.", None),
    }
    kind, content, payload = special.get(j) or (
        ("log", "thought", "tool_output")[j % 3],
        f"shard {t} step {j}: checked module {j * 7 % 101}",
        {"j": j},
    )
    return {"kind": kind, "content": content, "payload": payload, "idempotency_key": f"shard-{t}-entry-{j}"}


@dataclass
class Ack:
    idempotency_key: str
    id: int
    seq: int
    replayed: bool


@dataclass
class Traffic:
    """Clients spread over the gateways; a broken request moves on to the next gateway, same body."""

    gateways: list[Child]
    client: httpx.AsyncClient
    inflight: dict[int, tuple[int, float]] = field(default_factory=dict)  # request -> (gateway, start)
    latencies: dict[int, list[float]] = field(default_factory=dict)
    dead: set[int] = field(default_factory=set)
    failed_requests: int = 0
    failures: Counter[str] = field(default_factory=Counter)
    _next: int = 0

    async def send(
        self, prefer: int, path: str, body: dict[str, Any], actor: Actor
    ) -> tuple[int, httpx.Response, int]:
        """POST `body` to the preferred gateway, else the next live one; (gateway, answer, broken tries)."""
        broken = 0
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            order = [(prefer + k) % len(self.gateways) for k in range(len(self.gateways))]
            for idx in (i for i in order if i not in self.dead):
                self._next += 1
                token, begun = self._next, time.monotonic()
                self.inflight[token] = (idx, begun)
                try:
                    answer = await self.client.post(
                        f"{self.gateways[idx].url}{path}", json=body, headers=actor.headers
                    )
                except httpx.TransportError as exc:  # refused, reset, or cut off before the answer
                    self.failed_requests += 1
                    broken += 1
                    self.failures[type(exc).__name__] += 1
                    if isinstance(exc, httpx.ConnectError):
                        self.dead.add(idx)
                    continue
                finally:
                    del self.inflight[token]
                self.latencies.setdefault(idx, []).append(time.monotonic() - begun)
                return idx, answer, broken
            await asyncio.sleep(0.2)
        raise TimeoutError(f"no gateway answered POST {path}")

    def busy_for(self, idx: int) -> float:
        """How long the oldest request now in the hands of gateway `idx` has been waiting (0: none)."""
        now = time.monotonic()
        return max((now - begun for gw, begun in self.inflight.values() if gw == idx), default=0.0)


@dataclass
class Run:
    """What the agents and the orchestrator saw, for the checks afterwards."""

    task_ids: list[str]
    acks: dict[str, list[Ack]] = field(default_factory=dict)
    retried_batches: int = 0
    retried_replayed: int = 0  # retried batches the dead gateway had committed before it died
    late_batches_done: int = 0
    parked: int = 0  # late agents waiting for the gateway kill before their last batches
    promoted_via: dict[str, int] = field(default_factory=dict)
    early_promoted: asyncio.Event = field(default_factory=asyncio.Event)
    gateway_killed: asyncio.Event = field(default_factory=asyncio.Event)
    events: list[str] = field(default_factory=list)
    killed: list[Child] = field(default_factory=list)


async def agent(run: Run, traffic: Traffic, actor: Actor, orchestrator: Actor, t: int) -> None:
    """Write the task's entries in batches through alternating gateways, then ask for its promotion.

    A late agent writes half its batches, waits until the early tasks' promotions are started, writes on
    (these batches overlap the faults), and holds its last two batches until the gateway is down, so some
    batches always meet the dead gateway whatever the timing.
    """
    task_id = run.task_ids[t]
    acks = run.acks.setdefault(task_id, [])
    late = t >= EARLY
    for b in range(BATCHES):
        if late and b == BATCHES // 2:
            await run.early_promoted.wait()
        if late and b == BATCHES - 2:
            run.parked += 1
            await run.gateway_killed.wait()
        batch = [entry(t, j) for j in range(b * BATCH, (b + 1) * BATCH)]
        _, answer, broken = await traffic.send(
            (t + b) % 2, f"/v1/tasks/{task_id}/entries", {"entries": batch}, actor
        )
        assert answer.status_code == 201, answer.text
        body = answer.json()["entries"]
        assert len(body) == len(batch)
        if broken:  # the same batch, same keys, went again to the surviving gateway
            run.retried_batches += 1
            run.retried_replayed += all(e["replayed"] for e in body)
        acks.extend(
            Ack(sent["idempotency_key"], e["id"], e["seq"], e["replayed"])
            for sent, e in zip(batch, body, strict=True)
        )
        if late:
            run.late_batches_done += 1
            await asyncio.sleep(0.02)  # an agent thinks between batches; it also widens the fault window
    via, answer, _ = await traffic.send(t % 2, f"/v1/tasks/{task_id}/promotion", PROMOTION_BODY, orchestrator)
    assert answer.status_code == 202, answer.text
    assert answer.json()["workflow_id"] == workflow_id_for(task_key_of(task_id))
    run.promoted_via[task_id] = via
    if all(tid in run.promoted_via for tid in run.task_ids[:EARLY]):
        run.early_promoted.set()


async def wait_for_pollers(
    client: Client, task_queue: str, identities: set[str], timeout: float = 90.0
) -> None:
    """Until every worker in `identities` polls both the workflow and the activity side of the queue."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen: list[set[str]] = []
        for kind in (TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY):
            answer = await client.workflow_service.describe_task_queue(
                DescribeTaskQueueRequest(
                    namespace=client.namespace, task_queue=TaskQueue(name=task_queue), task_queue_type=kind
                )
            )
            seen.append({p.identity for p in answer.pollers})
        if all(identities <= s for s in seen):
            return
        await asyncio.sleep(0.3)
    raise TimeoutError(f"workers {identities} not polling {task_queue}")


async def busy_worker(client: Client, task_ids: list[str], workers: list[Child]) -> tuple[Child, str] | None:
    """A worker that holds a started promotion activity right now, and that activity's name."""
    by_identity = {w.identity: w for w in workers if w.alive()}
    for task_id in task_ids:
        desc = await client.get_workflow_handle(workflow_id_for(task_key_of(task_id))).describe()
        for pending in desc.raw_description.pending_activities:
            if (
                pending.state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
                and pending.last_worker_identity in by_identity
            ):
                return by_identity[pending.last_worker_identity], pending.activity_type.name
    return None


async def kill_a_worker(
    run: Run, cluster: Cluster, client: Client, workers: list[Child], started: float
) -> None:
    """SIGKILL a worker with promotions in flight, preferably one holding a started activity; replace it."""
    await run.early_promoted.wait()
    victim, holding = None, "no started activity seen"
    deadline = time.monotonic() + 8
    while victim is None and time.monotonic() < deadline:
        found = await busy_worker(client, list(run.promoted_via), workers)
        if found is not None:
            victim, holding = found[0], f"holding a started {found[1]} activity"
        else:
            await asyncio.sleep(0.01)
    victim = victim or workers[0]
    victim.kill()
    run.killed.append(victim)
    run.events.append(f"{victim.name} SIGKILLed at {time.monotonic() - started:.1f}s ({holding})")
    cluster.worker("worker-replacement")


async def kill_a_gateway(run: Run, traffic: Traffic, started: float) -> None:
    """SIGKILL gateway-0 while a batch is in its hands (well into its usual latency), as a machine dies."""
    await run.early_promoted.wait()
    while run.parked < TASKS - EARLY:
        typical = statistics.median(traffic.latencies.get(0) or [0.01])
        if traffic.busy_for(0) >= typical / 2:
            break
        await asyncio.sleep(0.001)
    in_flight = sum(1 for gw, _ in traffic.inflight.values() if gw == 0)
    traffic.gateways[0].kill()
    run.killed.append(traffic.gateways[0])
    run.gateway_killed.set()
    run.events.append(
        f"gateway-0 SIGKILLed at {time.monotonic() - started:.1f}s with {in_flight} batch(es) in its hands, "
        f"{run.late_batches_done}/{(TASKS - EARLY) * BATCHES} late batches acknowledged"
    )


async def test_multiprocess_cluster_survives_killed_worker_and_gateway(
    engine: AsyncEngine, database_url: str, local_env: Any, tmp_path: Path
) -> None:
    started = time.monotonic()
    client: Client = local_env.client
    org, project = new_tenant()
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    agents = [await make_actor(engine, ActorType.AGENT, org, project) for _ in range(TASKS)]
    task_queue = f"mp-{uuid.uuid4().hex[:8]}"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("LOREGATE_")  # nothing from the test process leaks into the children
    }
    env.update(
        {
            "LOREGATE_DATABASE_URL": database_url,
            "LOREGATE_TEMPORAL_ADDRESS": client.service_client.config.target_host,
            "LOREGATE_TEMPORAL_NAMESPACE": client.namespace,
            "LOREGATE_TASK_QUEUE": task_queue,
            "LOREGATE_DATA_DIR": str(tmp_path / "data"),
            "LOREGATE_DB_POOL_SIZE": "5",
        }
    )
    logs = tmp_path / "logs"
    logs.mkdir()
    cluster = Cluster(env, logs)
    try:
        gateways = [cluster.gateway("gateway-0"), cluster.gateway("gateway-1")]
        workers = [cluster.worker("worker-0"), cluster.worker("worker-1")]
        await asyncio.gather(*(cluster.wait_healthy(g, timeout=120) for g in gateways))
        healthy = time.monotonic() - started
        await wait_for_pollers(client, task_queue, {w.identity for w in workers}, timeout=120)
        ready = time.monotonic() - started

        async with httpx.AsyncClient(timeout=30) as http:
            traffic = Traffic(gateways, http)
            openapi = (await http.get(f"{gateways[0].url}/openapi.json")).json()
            assert "/v1/tasks/{task_id}/promotion" in openapi["paths"], "the promotion route is missing"
            run = Run(task_ids=[f"mp-{uuid.uuid4().hex[:10]}-{t}" for t in range(TASKS)])
            for t, task_id in enumerate(run.task_ids):
                _, answer, _ = await traffic.send(
                    t % 2,
                    "/v1/tasks",
                    {
                        "org": org,
                        "project": project,
                        "worktree": "main",
                        "task_id": task_id,
                        "description": f"move shard {t} to the async database driver",
                    },
                    orchestrator,
                )
                assert answer.status_code == 201, answer.text

            load = asyncio.gather(*(agent(run, traffic, agents[t], orchestrator, t) for t in range(TASKS)))
            faults = asyncio.gather(
                kill_a_worker(run, cluster, client, workers, started), kill_a_gateway(run, traffic, started)
            )
            try:
                await asyncio.wait_for(asyncio.gather(load, faults), timeout=60)
            finally:
                load.cancel()
                faults.cancel()
            writes_done = time.monotonic() - started

            results: dict[str, PromotionResult] = {}

            async def outcome(task_id: str) -> None:
                handle = client.get_workflow_handle_for(
                    PromotionWorkflow.run, workflow_id_for(task_key_of(task_id))
                )
                try:
                    results[task_id] = await asyncio.wait_for(handle.result(), PROMOTION_TIMEOUT)
                except TimeoutError:
                    desc = await handle.describe()
                    stuck = [
                        (p.activity_type.name, p.last_worker_identity, p.attempt)
                        for p in desc.raw_description.pending_activities
                    ]
                    raise AssertionError(f"promotion of {task_id} not done; pending: {stuck}") from None

            await asyncio.gather(*(outcome(task_id) for task_id in run.task_ids))
            promoted = time.monotonic() - started
            survivor = gateways[1].url
            plans: dict[str, list[Any]] = {}
            for task_id in run.task_ids:
                answer = await http.get(f"{survivor}/v1/promotions/{task_id}", headers=orchestrator.headers)
                assert answer.status_code == 200, answer.text
                status = answer.json()
                assert status["state"] == PromotionState.PUBLISHED, status
                plans[task_id] = status["plan"]

        crashed = [c.name for c in cluster.children if not c.alive() and c not in run.killed]
        assert not crashed, f"processes nobody killed have died: {crashed}"
        times = {
            "gateways healthy": healthy,
            "workers polling": ready,
            "writes and faults done": writes_done,
            "promotions done": promoted,
        }
        await check_and_report(engine, run, traffic, results, plans, org, times=times, started=started)
    except BaseException:
        for child in cluster.children:
            print(f"---- {child.name} (pid {child.pid}, alive {child.alive()}) ----\n{child.tail()}")
        raise
    finally:
        cluster.close()
    assert not any(c.alive() for c in cluster.children)


async def check_and_report(
    engine: AsyncEngine,
    run: Run,
    traffic: Traffic,
    results: dict[str, PromotionResult],
    plans: dict[str, list[Any]],
    org: str,
    *,
    times: dict[str, float],
    started: float,
) -> None:
    async with engine.connect() as conn:
        staged = (
            await conn.execute(
                text(
                    "SELECT COALESCE(t.public_id, t.id) AS task_id, s.id, s.seq, s.idempotency_key"
                    " FROM staging_entries s JOIN tasks t ON t.id = s.task_id"
                    " WHERE COALESCE(t.public_id, t.id) = ANY(:ids)"
                ),
                {"ids": run.task_ids},
            )
        ).all()
        events = (
            await conn.execute(
                text(
                    "SELECT COALESCE(t.public_id, t.id) AS task_id, e.workflow_id, e.event_type,"
                    " e.idempotency_key, e.memory_id FROM memory_events e JOIN tasks t ON t.id = e.task_id"
                    " WHERE COALESCE(t.public_id, t.id) = ANY(:ids)"
                ),
                {"ids": run.task_ids},
            )
        ).all()
        mems = (
            await conn.execute(
                text(
                    "SELECT id, scope_key, canonical_key, content_hash, deprecated_at "
                    "FROM memories WHERE org = :org"
                ),
                {"org": org},
            )
        ).all()

    # -- staging: every acknowledged (id, seq) stored exactly once, nothing else stored, seq gapless
    acked = {task_id: {(a.id, a.seq) for a in acks} for task_id, acks in run.acks.items()}
    stored: dict[str, list[tuple[int, int]]] = {task_id: [] for task_id in run.task_ids}
    for row in staged:
        stored[row.task_id].append((row.id, row.seq))
    key_counts = Counter(row.idempotency_key for row in staged)
    duplicate_keys = sum(n - 1 for n in key_counts.values() if n > 1)
    seq_problems = 0
    for task_id in run.task_ids:
        assert len(run.acks[task_id]) == ENTRIES_PER_TASK
        assert set(stored[task_id]) == acked[task_id], f"acknowledged and stored writes differ for {task_id}"
        seqs = sorted(seq for _, seq in stored[task_id])
        seq_problems += seqs != list(range(1, ENTRIES_PER_TASK + 1))
    assert duplicate_keys == 0 and len(staged) == TASKS * ENTRIES_PER_TASK and seq_problems == 0

    # -- promotions: all published; each plan item published exactly once (one event per plan index)
    assert {r.state for r in results.values()} == {PromotionState.PUBLISHED} and len(results) == TASKS
    planned = sum(len(p) for p in plans.values())
    dedupe_counts = Counter(e.idempotency_key for e in events if e.idempotency_key is not None)
    duplicate_dedupe = sum(n - 1 for n in dedupe_counts.values() if n > 1)
    actions: Counter[str] = Counter()
    rows_in_scope = Counter(m.scope_key for m in mems)
    for task_id in run.task_ids:
        n_plan = len(plans[task_id])
        assert n_plan >= 5, plans[task_id]  # facts, bug pattern, skill, episode
        prefix = f"{workflow_id_for(task_key_of(task_id))}:publish:"
        published = [e for e in events if e.idempotency_key and e.idempotency_key.startswith(prefix)]
        assert sorted(int(e.idempotency_key.removeprefix(prefix)) for e in published) == list(range(n_plan))
        by_type = Counter(e.event_type for e in published)
        actions.update(by_type)
        # PROMOTED inserts a memory, SUPERSEDED inserts the new head, MERGED boosts one already there
        # (a candidate can duplicate one published moments before by the same plan)
        assert rows_in_scope[f"task:{task_key_of(task_id)}"] == by_type["PROMOTED"] + by_type["SUPERSEDED"], (
            by_type
        )
        assert by_type["PROMOTED"] >= 1 and set(by_type) <= {"PROMOTED", "MERGED", "SUPERSEDED"}, by_type
        assert len(results[task_id].published) == n_plan
        assert sum(e.event_type == "PROMOTION" for e in events if e.task_id == task_id) == 1
    active = [m for m in mems if m.deprecated_at is None]
    heads = Counter((m.scope_key, m.canonical_key) for m in active if m.canonical_key)
    duplicate_heads = sum(n - 1 for n in heads.values() if n > 1)
    same_content = Counter((m.scope_key, m.content_hash) for m in active)
    duplicate_content = sum(n - 1 for n in same_content.values() if n > 1)
    assert duplicate_dedupe == 0 and duplicate_heads == 0 and duplicate_content == 0

    via = Counter(run.promoted_via.values())
    acked_total = sum(len(a) for a in run.acks.values())
    lines = [
        f"2 gateways + 2 workers (+1 replacement); {TASKS} tasks x {ENTRIES_PER_TASK} entries, "
        f"batches of {BATCH}",
        *(f"fault: {event}" for event in run.events),
        f"failed requests {traffic.failed_requests} {dict(traffic.failures)}; batches retried on the "
        f"survivor {run.retried_batches} (committed by the dead gateway first: {run.retried_replayed})",
        f"writes: acknowledged {acked_total}, stored {len(staged)}, duplicate idempotency keys "
        f"{duplicate_keys}, tasks with seq gaps {seq_problems}",
        f"promotions: started {len(run.promoted_via)} (via gateway-0 {via[0]}, via gateway-1 {via[1]}), "
        f"published {sum(r.state == PromotionState.PUBLISHED for r in results.values())}",
        f"plan items {planned}, each published once: {dict(actions)}; memories stored "
        f"{sum(rows_in_scope.values())}",
        f"duplicates: idempotency keys {duplicate_dedupe}, active heads per (scope, canonical key) "
        f"{duplicate_heads}, same content in a scope {duplicate_content}",
        "timeline: "
        + ", ".join(f"{name} {t:.1f}s" for name, t in times.items())
        + f", checks done {time.monotonic() - started:.1f}s",
    ]
    print("\n" + "\n".join(f"[multiprocess] {line}" for line in lines))


pytestmark = pytest.mark.timeout(240)
