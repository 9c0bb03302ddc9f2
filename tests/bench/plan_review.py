"""What showing a plan's nearest memories costs: a page of new items against a large target scope.

    python -m tests.bench.plan_review [--n 20000] [--other 0] [--items 100]

Loads `--n` memories into one project scope (and `--other` into another project, so the scope is a part
of the table), a plan of `--items` new items, and times, per plan page:

- `nearest_memories` (storage/plan_review.py): one LATERAL query, the planner choosing the scope's btree
  index (exact) or the HNSW index (approximate) per query;
- the baseline measured in the same run: the same top-3 by an exact scan of the scope (a materialized CTE
  of its rows, as dedup's `find_neighbours_many` does), and reading the plan page itself (`plan_page`).

Vectors are random unit vectors: fine for timing, meaningless for recall (recall is not measured here).
Uses LOREGATE_BENCH_DATABASE_URL's server, else an embedded Postgres under tests/bench/.cache.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import numpy as np
from sqlalchemy import text

from governance.cognify import Candidate
from governance.config import Settings
from governance.storage.engine import make_engine
from governance.storage.plan_items import PlanItemToWrite, finish_plan, save_plan_items
from governance.storage.plan_review import nearest_memories
from governance.storage.plans import PlanKey, plan_page, save_candidates
from tests.bench.retrieval import CACHE, bench_database, bulk_load, log, memory_row

RUNS = 7
EXACT = text(
    """
    WITH scope AS MATERIALIZED (
        SELECT id, citation, title, confidence, embedding FROM memories
        WHERE scope_key = :scope_key AND deprecated_at IS NULL AND embedding IS NOT NULL
    )
    SELECT p.idx, n.id FROM promotion_plan_items p
    CROSS JOIN LATERAL (
        SELECT s.id FROM scope s ORDER BY s.embedding <=> p.embedding LIMIT 3
    ) n
    WHERE p.workflow_id = :w AND p.run_id = :r AND p.idx = ANY(:idxs)
    """
)


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    vectors = rng.standard_normal((n, 384)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


async def _p50(label: str, run: Callable[[], Awaitable[Any]]) -> float:
    await run()  # warm the cache and the plan
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        await run()
        times.append(time.perf_counter() - started)
    p50 = statistics.median(times) * 1000
    log(f"  {label}: p50 {p50:.1f} ms")
    return p50


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=20_000, help="memories in the target scope")
    parser.add_argument("--other", type=int, default=0, help="memories in another project")
    parser.add_argument("--items", type=int, default=100, help="new items on the plan page")
    args = parser.parse_args()

    rng = np.random.default_rng(7)
    now = datetime.now(UTC)
    url, server = bench_database()
    target, other = ("bench", "plans", "main"), ("bench", "elsewhere", "main")
    vectors = _unit(rng, args.n + args.other)
    rows = [
        memory_row(i, f"memory {i}", f"memory {i} of the target", "fact", target, rng, now, vectors[i])
        for i in range(args.n)
    ]
    rows += [
        memory_row(
            args.n + i, f"other {i}", f"memory {i} elsewhere", "fact", other, rng, now, vectors[args.n + i]
        )
        for i in range(args.other)
    ]
    settings = Settings(database_url=url, db_timeout_seconds=600, data_dir=CACHE / "data")
    engine = make_engine(settings)
    await bulk_load(engine, rows)
    key = PlanKey("promote-bench", "run-1")
    scope_key = "project:bench/plans"
    try:
        async with engine.begin() as conn:
            candidates = [
                Candidate(
                    memory_type="fact",
                    title=f"new {i}",
                    content=f"new fact {i}",
                    canonical_key=None,
                    importance=0.5,
                    source_entry_ids=[],
                )
                for i in range(args.items)
            ]
            await save_candidates(conn, key, "bench-task", candidates)
            vectors = _unit(rng, args.items)
            await save_plan_items(
                conn,
                key,
                [
                    PlanItemToWrite(
                        i, i, "new", None, None, "no duplicate", f"{i:064x}", [float(x) for x in vectors[i]]
                    )
                    for i in range(args.items)
                ],
            )
            await finish_plan(conn, key, args.items)
        indexes = list(range(args.items))
        log(f"{args.n} memories in {scope_key}, {args.other} elsewhere; a page of {args.items} new items")

        async def page() -> Any:
            async with engine.connect() as conn:
                return await plan_page(conn, key, offset=0, limit=args.items)

        async def nearest() -> Any:
            async with engine.connect() as conn:
                return await nearest_memories(conn, key, indexes, scope_key)

        async def exact() -> Any:
            async with engine.connect() as conn:
                params = {"scope_key": scope_key, "w": key.workflow_id, "r": key.run_id, "idxs": indexes}
                return (await conn.execute(EXACT, params)).all()

        base_page = await _p50("plan_page (the page itself)", page)
        base_exact = await _p50("exact top-3 per item (baseline)", exact)
        ours = await _p50("nearest_memories", nearest)
        found = await nearest()
        short = sum(1 for i in indexes if len(found.get(i, [])) < 3)
        log(f"  nearest_memories / exact scan: {ours / base_exact:.3f}; / plan_page: {ours / base_page:.2f}")
        log(f"  items with fewer than 3 neighbours: {short} of {args.items}")
    finally:
        await engine.dispose()
        if server is not None:
            server.cleanup()


if __name__ == "__main__":
    asyncio.run(main())
