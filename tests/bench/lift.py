"""Lifting benchmark: what a lift costs against publishing the same memories at the target scope.

    python tests/bench/lift.py [--memories 400] [--batch 20] [--parallel 8]

Starts its own embedded Postgres (pgserver, temporary directory, migrations applied), seeds worktree-scope
facts with 384-d embeddings (distinct contents, no canonical key), then measures, in this process:

  - publish (baseline): `publish_candidate` of copies of one half of them into project scope, `--batch`
    per transaction (the target scope locked once per transaction, as a promotion publishes): the dedup
    and insert a lift cannot avoid;
  - lift: the other half lifted into project scope, `--batch` memories per request, each request stored
    with its items and applied in one transaction (`apply_change_request`: locks, originals re-checked,
    the same publish, derivation links, the originals marked lifted, two LIFTED events each);
  - lift, one at a time: single-memory lifts in sequence (p50 / p99 latency of one lift's transaction);
  - parallel: `--parallel` concurrent single-memory lifts of *the same* memory, repeated: every round must
    publish exactly one copy (the others end `conflict`), which the script checks and reports.

Prints memories/s for each phase and `lift / publish`. Everything shares this machine's cores.
Not collected by pytest (tests/bench is outside the default run).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
import uuid
import zlib
from pathlib import Path
from typing import Any

DIM = 384


def _vector(rng: random.Random) -> list[float]:
    v = [rng.gauss(0, 1) for _ in range(DIM)]
    norm = sum(x * x for x in v) ** 0.5
    return [x / norm for x in v]


async def _seed(engine: Any, org: str, project: str, n: int) -> list[str]:
    """`n` worktree facts of `org`/`project`, each with its own content and embedding."""
    from sqlalchemy import insert

    from governance.dedup import content_hash
    from governance.storage.memory_rows import make_citation
    from governance.storage.tables import memories

    rng = random.Random(zlib.crc32(project.encode()))
    rows = []
    for i in range(n):
        memory_id = str(uuid.uuid4())
        content = f"fact {i}: service-{i} answers within {100 + i} ms at p99 ({uuid.uuid4().hex[:6]})"
        rows.append(
            {
                "id": memory_id,
                "citation": make_citation(memory_id),
                "memory_type": "fact",
                "scope": "worktree",
                "scope_key": f"worktree:{org}/{project}/main",
                "org": org,
                "project": project,
                "title": content[:40],
                "content": content,
                "content_hash": content_hash(content),
                "embedding": _vector(rng),
                "confidence": 0.6,
                "validation_source": "tests_passed",
                "source_task_ids": [f"task-{i}"],
            }
        )
    async with engine.begin() as conn:
        await conn.execute(insert(memories), rows)
    return [r["id"] for r in rows]


async def _publish(engine: Any, ids: list[str], org: str, project: str, batch: int, rules: Any) -> float:
    from sqlalchemy import select

    from governance.operations.publishing import lock_for_publication, publish_candidate
    from governance.storage.memory_rows import NewMemory
    from governance.storage.tables import memories

    target, visible = f"project:{org}/{project}", [f"project:{org}/{project}", f"org:{org}"]
    started = time.perf_counter()
    for start in range(0, len(ids), batch):
        chunk = ids[start : start + batch]
        async with engine.begin() as conn:
            rows = (await conn.execute(select(memories).where(memories.c.id.in_(chunk)))).all()
            await lock_for_publication(conn, "project", target, visible)
            for row in rows:
                mem = NewMemory(
                    memory_type=row.memory_type,
                    scope="project",
                    scope_key=target,
                    org=org,
                    project=project,
                    title=row.title,
                    content=row.content,
                    confidence=row.confidence,
                    embedding=list(row.embedding),
                    source_task_ids=list(row.source_task_ids),
                )
                await publish_candidate(
                    conn,
                    mem,
                    visible_scope_keys=visible,
                    actor_id="bench",
                    actor_type="human",
                    task_id=None,
                    workflow_id=None,
                    idempotency_key=f"bench-publish:{row.id}",
                    dup_threshold=rules.dup_threshold,
                    related_threshold=rules.related_threshold,
                    locked=True,
                )
    return time.perf_counter() - started


async def _lift(engine: Any, ids: list[str], org: str, project: str, rules: Any) -> tuple[str, list[Any]]:
    """One lift request of `ids` into project scope, stored and applied in one transaction."""
    from governance.changes import ChangeOperation, ChangeTrust
    from governance.errors import Conflict
    from governance.operations.changes import apply_change_request
    from governance.storage.change_requests import (
        NewChangeRequest,
        create_change_request,
    )
    from governance.storage.lifting import add_lift_items, lift_items, lift_sources

    async with engine.begin() as conn:
        sources = await lift_sources(conn, ids)
        request = await create_change_request(
            conn,
            NewChangeRequest(
                memory_id=ids[0],
                org=org,
                project=project,
                scope="project",
                operation=ChangeOperation.LIFT,
                reason="bench",
                requested_by="bench",
                actor_type="human",
                target_scope="project",
                target_scope_key=f"project:{org}/{project}",
            ),
        )
        await add_lift_items(conn, request.id, sources)
        applied = await apply_change_request(
            conn,
            request.id,
            approver="bench",
            approver_type="human",
            note="",
            workflow_id=None,
            trust=ChangeTrust.HUMAN_VALIDATED,
            lift_rules=rules,
        )
        if applied.state != "applied":
            raise Conflict(applied.reason)
        return applied.state, await lift_items(conn, request.id)


async def main(memories: int, batch: int, parallel: int) -> None:
    from api.cli.embedded import start_embedded_postgres
    from governance.config import Settings
    from governance.errors import Conflict
    from governance.operations.lifting import LiftRules
    from governance.storage.engine import make_engine
    from tests.utils.temporal_env import fresh_bench_database

    tmp = Path(tempfile.mkdtemp(prefix="loregate-bench-lift-"))
    print(f"starting embedded Postgres in {tmp} ...", flush=True)
    pg, url = start_embedded_postgres(tmp)
    url = fresh_bench_database(pg)
    settings = Settings(database_url=url, data_dir=tmp)
    engine = make_engine(settings)
    rules = LiftRules(settings.dedup_similarity_threshold, settings.related_similarity_threshold)
    try:
        org = f"org-{uuid.uuid4().hex[:6]}"
        half = memories // 2
        # each phase's target scope starts empty and grows alike: dedup scans the target exactly
        published = await _seed(engine, org, "publish", half)
        to_lift = await _seed(engine, org, "lift", half)
        singles = await _seed(engine, org, "one", half // 2)
        single_publish = await _seed(engine, org, "one-publish", half // 2)
        publish_s = await _publish(engine, published, org, "publish", batch, rules)
        started = time.perf_counter()
        for start in range(0, half, batch):
            await _lift(engine, to_lift[start : start + batch], org, "lift", rules)
        lift_s = time.perf_counter() - started
        latencies, baseline = [], []
        for memory_id in singles:
            t0 = time.perf_counter()
            await _lift(engine, [memory_id], org, "one", rules)
            latencies.append(time.perf_counter() - t0)
        for memory_id in single_publish:
            t0 = time.perf_counter()
            await _publish(engine, [memory_id], org, "one-publish", 1, rules)
            baseline.append(time.perf_counter() - t0)

        rounds_ok, rounds = 0, 10
        contested = await _seed(engine, org, "contested", rounds)
        for memory_id in contested:
            outcomes = await asyncio.gather(
                *(_lift(engine, [memory_id], org, "contested", rules) for _ in range(parallel)),
                return_exceptions=True,
            )
            won = [o for o in outcomes if not isinstance(o, BaseException)]
            lost = [o for o in outcomes if isinstance(o, Conflict)]
            rounds_ok += int(len(won) == 1 and len(lost) == parallel - 1)

        publish_rate, lift_rate = half / publish_s, half / lift_s
        print(f"\nworktree facts (384-d embeddings), {half} per phase, batch {batch}")
        print(f"publish into project scope (baseline): {publish_rate:8.1f} memories/s")
        print(f"lift into project scope:               {lift_rate:8.1f} memories/s")
        print(f"lift / publish:                        {lift_rate / publish_rate:8.3f}")
        p50, p50_base = statistics.median(latencies) * 1000, statistics.median(baseline) * 1000
        print(
            f"one memory at a time ({len(latencies)}): lift p50 {p50:.1f} ms, publish p50 {p50_base:.1f} ms, "
            f"ratio {p50 / p50_base:.2f}"
        )
        print(f"{parallel} concurrent lifts of one memory, {rounds} rounds: exactly one copy in {rounds_ok}")
    finally:
        await engine.dispose()
        pg.cleanup()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=400)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--parallel", type=int, default=8)
    args = parser.parse_args()
    asyncio.run(main(args.memories, args.batch, args.parallel))
