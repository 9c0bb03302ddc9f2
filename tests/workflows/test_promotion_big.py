"""Big tasks: thousands of staged entries promote, and the history stays small (the claim check).

The plan, its candidates and their embeddings live in Postgres (governance/storage/plans.py); Temporal's
history carries ids, counts and the first few plan items. Before, a task of a few hundred candidates could
never be promoted: the plan activity's result alone was megabytes, over Temporal's 2 MB payload limit.

Also here: the embedding cache (a text is embedded once per model, across promotions) and a plan
interrupted after some chunks resuming without redoing them (the activity run directly, with its
heartbeat details, in `ActivityEnvironment`).
"""

from __future__ import annotations

import dataclasses
import random
import time
import uuid
from typing import Any

import numpy as np
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import WorkflowHandle
from temporalio.testing import ActivityEnvironment

from activities.promotion import CognifyInput, PlanInput, PlanResult, PromotionActivities
from governance.adapters.embedders import Embedder, make_embedder
from governance.config import Settings
from governance.instruction_exemplars import exemplar_texts
from governance.scopes import ActorType
from governance.storage.embedding_cache import embedding_cache
from governance.storage.plans import PlanKey, latest_plan, promotion_plan_items
from policy.enforcer import Authorizer
from tests.utils.factories import make_actor, new_tenant
from tests.utils.promotion_factories import Entry, active_memories, events_of, make_large_task, make_task
from workflows.promotion import PromotionWorkflow
from workflows.promotion_contract import (
    ApprovalRequest,
    PromotionInput,
    PromotionResult,
    PromotionState,
    PromotionStatus,
    Verification,
    workflow_id_for,
)

BIG = 2000  # staged entries of a big task
DISTINCT = 160  # distinct contents among them: repeats cost no embedding (the cache) and merge on publish
HISTORY_LIMIT = 256 * 1024
_TOPICS = ("queue", "cache", "index", "schema", "worker", "gateway", "ledger", "router")
_WORDS = (
    "retry budget tenant shard replica lease cursor backoff quorum snapshot tombstone compaction latency "
    "throughput fanout batch window watermark checkpoint manifest bucket partition rollover failover "
    "heartbeat deadline jitter token bearer rotation audit lineage provenance schema migration column "
    "vacuum analyze planner histogram cardinality bloom filter prefix suffix trie ring hash consistent "
    "vector cosine recall precision ranking rerank embedding chunk overlap stride tokenizer vocabulary"
).split()


def _phrase(seed: int, words: int = 7) -> str:
    """A deterministic bag of words: distinct seeds give texts too different to merge or supersede."""
    rng = random.Random(seed)
    return " ".join(rng.sample(_WORDS, words))


def big_entries(n: int, distinct: int, token: str) -> list[Entry]:
    """`n` entries cycling through `distinct` contents: facts, keyed decisions, preferences, insights."""
    entries: list[Entry] = []
    for i in range(n):
        j = i % distinct
        topic, words = _TOPICS[j % len(_TOPICS)], _phrase(j)
        if j % 4 == 0:
            entries.append(Entry("fact", f"The {topic} of {token}-{j}: {words}."))
        elif j % 4 == 1:
            key = f"svc{j}.{topic}"
            entries.append(Entry("decision", f"{key}: {words} ({token})", {"key": key}))
        elif j % 4 == 2:
            entries.append(Entry("preference", f"Module {token}-{j} prefers {words}."))
        else:
            entries.append(Entry("insight", f"Under load the {topic} of {token}-{j} shows {words}."))
    return entries


async def _history_size(handle: WorkflowHandle[Any, Any]) -> int:
    history = await handle.fetch_history()
    return len(history.to_json())


async def _wait_state(handle: WorkflowHandle[Any, Any], state: str, attempts: int = 1200) -> PromotionStatus:
    import asyncio

    status: PromotionStatus | None = None
    for _ in range(attempts):
        status = await handle.query(PromotionWorkflow.state)
        if status.state == state:
            return status
        await asyncio.sleep(0.1)
    raise AssertionError(f"promotion never reached {state}; last status {status}")


async def assert_published_once(engine: AsyncEngine, task_id: str, plan_total: int) -> None:
    """One publish event per plan item (`<workflow id>:publish:<index>`), and the memories they name."""
    prefix = f"{workflow_id_for(task_id)}:publish:"
    events = [e for e in await events_of(engine, task_id) if (e.idempotency_key or "").startswith(prefix)]
    assert sorted(int(e.idempotency_key.removeprefix(prefix)) for e in events) == list(range(plan_total))
    # every active memory of the task came from one of them (a superseded one is no longer active)
    active = {str(m.id) for m in await active_memories(engine, task_id=task_id)}
    assert active and active <= {str(e.memory_id) for e in events}
    async with engine.connect() as conn:
        header = await latest_plan(conn, workflow_id_for(task_id))
        assert header is not None and header.plan_total == header.published_count == plan_total
        unpublished = await conn.scalar(
            select(func.count())
            .select_from(promotion_plan_items)
            .where(
                promotion_plan_items.c.workflow_id == header.workflow_id,
                promotion_plan_items.c.memory_id.is_(None),
            )
        )
    assert unpublished == 0


async def test_promotion_of_2000_entries_publishes_with_a_small_history(
    ts_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str
) -> None:
    org, project = new_tenant()
    token = uuid.uuid4().hex[:6]
    task = await make_large_task(engine, org, project, big_entries(BIG, DISTINCT, token))
    client = ts_env.client
    started = time.perf_counter()
    async with make_worker(client, task_queue):
        handle = await client.start_workflow(
            PromotionWorkflow.run,
            PromotionInput(
                task.task_id,
                "task",
                requested_by=task.requested_by,
                verification=Verification("tests_passed", True),
            ),
            id=workflow_id_for(task.task_id),
            task_queue=task_queue,
        )
        result: PromotionResult = await handle.result()
        status: PromotionStatus = await handle.query(PromotionWorkflow.state)
    elapsed = time.perf_counter() - started
    size = await _history_size(handle)
    print(f"\n2,000-entry task-scope promotion: {elapsed:.1f} s, history {size / 1024:.1f} KiB")

    assert result.state == PromotionState.PUBLISHED, result.reason
    assert size < HISTORY_LIMIT
    # every staged entry is a candidate, plus the task's episode
    assert status.plan_total == BIG + 1 == result.published_total == status.published_total
    assert len(status.plan) == 20 and len(result.published) == 20
    assert all(len(entry.content) <= 200 for entry in status.plan)
    await assert_published_once(engine, task.task_id, status.plan_total)
    active = await active_memories(engine, task_id=task.task_id)
    # repeats merge into the memory their first copy became (near-identical texts may merge too)
    assert 0 < len(active) <= DISTINCT + 1
    assert sum(m.memory_type == "episode" for m in active) == 1


async def test_big_promotion_into_project_waits_for_approval_then_publishes(
    ts_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str
) -> None:
    org, project = new_tenant()
    human = await make_actor(engine, ActorType.HUMAN, org, project)
    token = uuid.uuid4().hex[:6]
    task = await make_large_task(engine, org, project, big_entries(BIG, DISTINCT, token))
    client = ts_env.client
    started = time.perf_counter()
    async with make_worker(client, task_queue):
        handle = await client.start_workflow(
            PromotionWorkflow.run,
            PromotionInput(
                task.task_id,
                "project",
                requested_by=task.requested_by,
                verification=Verification("pr_merged", True),
            ),
            id=workflow_id_for(task.task_id),
            task_queue=task_queue,
        )
        waiting = await _wait_state(handle, PromotionState.AWAITING_APPROVAL)
        planned_in = time.perf_counter() - started
        assert waiting.plan_total == BIG + 1 and len(waiting.plan) == 20
        assert {entry.decision for entry in waiting.plan} == {"new"}
        assert await active_memories(engine, task_id=task.task_id) == []
        await handle.signal("approve", ApprovalRequest(approver=human.principal.id, note="all of it"))
        result: PromotionResult = await handle.result()
    elapsed = time.perf_counter() - started
    size = await _history_size(handle)
    print(
        f"\n2,000-entry project promotion: planned in {planned_in:.1f} s, published after approval, "
        f"{elapsed:.1f} s in all, history {size / 1024:.1f} KiB"
    )
    assert result.state == PromotionState.PUBLISHED and result.decided_by == human.principal.id
    assert size < HISTORY_LIMIT
    assert result.published_total == waiting.plan_total
    await assert_published_once(engine, task.task_id, waiting.plan_total)
    active = await active_memories(engine, task_id=task.task_id)
    assert active and all(m.scope_key == f"project:{org}/{project}" for m in active)


# ---- the activity itself: embedding cache and resumption ------------------------------------------------


class CountingEmbedder:
    """The real embedder, counting the texts it is asked to embed; raises on call `fail_on_call` if set."""

    def __init__(self, inner: Embedder, fail_on_call: int | None = None) -> None:
        self._inner = inner
        self.dim = inner.dim
        self.name = inner.name
        self.model_id = inner.model_id
        self.calls = 0
        self.texts: list[str] = []
        self._fail_on_call = fail_on_call

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        if set(texts) <= set(exemplar_texts()):  # the known injections (verified or embedded once per
            # process): not the plan's texts
            return self._inner.embed_passages(texts)
        self.calls += 1
        if self.calls == self._fail_on_call:
            raise RuntimeError("worker lost mid-plan")
        self.texts += texts
        return self._inner.embed_passages(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._inner.embed_query(text)


@pytest.fixture
def activity_parts(engine: AsyncEngine, settings: Settings, authorizer: Authorizer) -> dict[str, Any]:
    return {
        "engine": engine,
        "settings": settings,
        "authorizer": authorizer,
        "inner": make_embedder(settings),
    }


def _activities(parts: dict[str, Any], embedder: Embedder, plan_chunk: int = 64) -> PromotionActivities:
    return PromotionActivities(
        engine=parts["engine"],
        embedder=embedder,
        authorizer=parts["authorizer"],
        settings=parts["settings"],
        plan_chunk=plan_chunk,
    )


def _env(run_id: str, heartbeat_details: list[Any] | None = None) -> ActivityEnvironment:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(
        env.info, workflow_run_id=run_id, heartbeat_details=heartbeat_details or []
    )
    return env


async def _cognify(acts: PromotionActivities, task_id: str, workflow_id: str, run_id: str, n: int) -> int:
    result = await _env(run_id).run(acts.cognify, CognifyInput(task_id, workflow_id, "a task", n - 1, True))
    return int(result.candidate_count)


async def _cache_rows(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        return int(await conn.scalar(select(func.count()).select_from(embedding_cache)) or 0)


async def test_plan_embeds_each_text_once_across_promotions(
    engine: AsyncEngine, activity_parts: dict[str, Any]
) -> None:
    org, project = new_tenant()
    token = uuid.uuid4().hex[:6]
    facts = [Entry("fact", f"Fact {i} of batch {token}: the {_TOPICS[i % 8]} is sharded.") for i in range(12)]
    first_task = await make_task(engine, org, project, facts)
    second_task = await make_task(engine, org, project, facts)
    results: list[PlanResult] = []
    for task in (first_task, second_task):
        embedder = CountingEmbedder(activity_parts["inner"])
        acts = _activities(activity_parts, embedder)
        wf, run = f"promote-{task.task_id}", f"run-{uuid.uuid4().hex[:6]}"
        count = await _cognify(acts, task.task_id, wf, run, len(facts))
        rows_before = await _cache_rows(engine)
        plan = PlanInput(task.task_id, wf, run, f"task:{task.task_id}", [f"task:{task.task_id}"])
        results.append(await _env(run).run(acts.plan, plan))
        assert results[-1].total == count == len(facts) + 1  # the facts and the episode
        assert await _cache_rows(engine) - rows_before == results[-1].embedded == len(embedder.texts)
    first, second = results
    assert first.embedded == len(facts) + 1 and first.cached == 0
    # the second promotion of the same facts embeds only its own episode (it names its task)
    assert second.embedded == 1 and second.cached == len(facts)


async def test_interrupted_plan_resumes_after_its_committed_chunks(
    engine: AsyncEngine, activity_parts: dict[str, Any]
) -> None:
    org, project = new_tenant()
    token = uuid.uuid4().hex[:6]
    facts = [Entry("fact", f"Note {i} ({token}): the {_TOPICS[i % 8]} needs a warm-up.") for i in range(40)]
    task = await make_task(engine, org, project, facts)
    wf, run = f"promote-{task.task_id}", f"run-{uuid.uuid4().hex[:6]}"
    chunk = 8
    plan = PlanInput(task.task_id, wf, run, f"task:{task.task_id}", [f"task:{task.task_id}"])
    total = await _cognify(_activities(activity_parts, activity_parts["inner"]), task.task_id, wf, run, 40)
    assert total == 41

    # first attempt: the worker is lost while embedding the third chunk
    crashing = CountingEmbedder(activity_parts["inner"], fail_on_call=3)
    beats: list[Any] = []
    first_env = _env(run)
    first_env.on_heartbeat = lambda *details: beats.append(details[0] if details else None)
    with pytest.raises(RuntimeError, match="worker lost"):
        await first_env.run(_activities(activity_parts, crashing, plan_chunk=chunk).plan, plan)
    assert max(b for b in beats if b is not None) == 2 * chunk  # two chunks committed and heartbeated
    written = await _plan_items(engine, PlanKey(wf, run))
    assert sorted(written) == list(range(2 * chunk))

    # the retry, with the last heartbeat's detail, starts at the third chunk
    resuming = CountingEmbedder(activity_parts["inner"])
    result: PlanResult = await _env(run, heartbeat_details=[2 * chunk]).run(
        _activities(activity_parts, resuming, plan_chunk=chunk).plan, plan
    )
    assert result.resumed_from == 2 * chunk and result.total == total
    assert result.embedded == total - 2 * chunk and result.cached == 0
    assert set(resuming.texts).isdisjoint(crashing.texts)  # nothing of the first two chunks again
    after = await _plan_items(engine, PlanKey(wf, run))
    assert sorted(after) == list(range(total))
    assert all(after[i] == written[i] for i in written)  # the committed chunks were not rewritten


async def _plan_items(engine: AsyncEngine, key: PlanKey) -> dict[int, Any]:
    """Index -> planned_at of a plan's items."""
    async with engine.connect() as conn:
        rows = await conn.execute(
            select(promotion_plan_items.c.idx, promotion_plan_items.c.planned_at).where(
                promotion_plan_items.c.workflow_id == key.workflow_id,
                promotion_plan_items.c.run_id == key.run_id,
            )
        )
        return {int(r.idx): r.planned_at for r in rows}
