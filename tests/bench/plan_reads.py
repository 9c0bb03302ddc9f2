"""What an approver's reads of a big plan cost, right after plan wrote it and after ANALYZE.

    python -m tests.bench.plan_reads [--items 10000] [--memories 2000] [--page 100]

Writes one fresh plan of `--items` items (candidates' texts from httpx's commit history, nobody here wrote
them; candidate numbers shuffled against the items' order; a quarter of the items duplicates or
supersedes of `--memories` published memories, one in 50 quarantined, the first half published), then
times, p50 of 7 runs each, every read an approver's pages make (`governance/storage/plans.py`):

- `plan_page` at the first, the middle and the last page;
- `quarantined_items` (its count and first page) and `published_page` (its count and first page);

each beside the same rows read by the plain join of plan items to candidates
(tests/utils/joined_plan_reads.py: the statements these reads used before), with the rows each touched
(EXPLAIN ANALYZE), and against the same-run baseline of publish's chunk read of the same size
(`publish_rows`, already by key). Autovacuum is off on the claim-check tables during the fresh phase, so
"fresh" means no statistics, as right after plan wrote them.
Uses LOREGATE_BENCH_DATABASE_URL's server, else an embedded Postgres under tests/bench/.cache.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.cognify import Candidate
from governance.config import Settings
from governance.storage.engine import make_engine
from governance.storage.plan_items import (
    PlanItemToWrite,
    finish_plan,
    publish_rows,
    record_outcomes,
    save_plan_items,
)
from governance.storage.plans import (
    PlanItemPublished,
    PlanKey,
    plan_page,
    published_page,
    quarantined_items,
    save_candidates,
)
from tests.bench.retrieval import CACHE, bench_database, bulk_load, log, memory_row
from tests.utils.explained import Explained, capture_statements, explain
from tests.utils.joined_plan_reads import (
    joined_count,
    joined_page,
    joined_published,
    joined_quarantined,
)

RUNS = 7
HISTORY = Path("/work/shared/data/repo-history/httpx.jsonl")
CLAIM_CHECK = ("promotion_plans", "promotion_candidates", "promotion_plan_items")


def _texts() -> list[tuple[str, str]]:
    """httpx's commits as (title, content): the subject, and the subject with the body and files."""
    found = []
    for line in HISTORY.read_text().splitlines():
        c = json.loads(line)
        files = ", ".join(f["path"] for f in c["files"][:8])
        found.append((c["subject"][:200], f"{c['subject']}\n\n{c['body']}\n\nfiles: {files}".strip()))
    return found


async def _p50(run: Callable[[], Awaitable[Any]]) -> float:
    await run()
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        await run()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


async def _touched(engine: AsyncEngine, run: Callable[[], Awaitable[Any]]) -> list[Explained]:
    """What each statement `run` sends touched."""
    with capture_statements(engine) as sent:
        await run()
    found = []
    async with engine.connect() as conn:
        for statement, parameters in sent:
            found.append(await explain(conn, statement, parameters))
    return found


def _rows(found: list[Explained]) -> str:
    items = sum(e.touched.get("promotion_plan_items", 0) for e in found)
    candidates = sum(e.touched.get("promotion_candidates", 0) for e in found)
    removed = sum(e.removed for e in found)
    buffers = sum(e.buffers for e in found)
    return f"items {items:>6} cand {candidates:>8} discarded {removed:>9} buffers {buffers:>6}"


async def _write_plan(engine: AsyncEngine, key: PlanKey, n: int, targets: list[str], seed: int) -> None:
    rng = random.Random(seed)
    texts = _texts()
    candidates = [
        Candidate(
            ("fact", "decision", "episode", "bug_pattern")[i % 4],
            f"{texts[i % len(texts)][0]} ({i})",
            f"{texts[i % len(texts)][1]} ({i})",
            canonical_key=f"httpx.{i}" if i % 4 == 1 else None,
            importance=0.3 + (i % 5) / 10,
            source_entry_ids=[10_000 + i],
        )
        for i in range(n)
    ]
    order = list(range(n))
    rng.shuffle(order)
    vectors = np.random.default_rng(seed).standard_normal((256, 384)).astype(np.float32)
    async with engine.begin() as conn:
        await save_candidates(conn, key, "bench-task", candidates)
        for start in range(0, n, 256):
            items = []
            for i in range(start, min(n, start + 256)):
                decision = ("new", "duplicate", "new", "supersede")[i % 4]
                target = targets[i % len(targets)] if decision != "new" else None
                items.append(
                    PlanItemToWrite(
                        i,
                        order[i],
                        decision,
                        target,
                        0.93 if target else None,
                        f"{decision} (bench)",
                        f"{i:064x}",
                        [float(x) for x in vectors[i % 256]],
                        quarantine="runs a command aimed at agents" if i % 50 == 7 else None,
                    )
                )
            await save_plan_items(conn, key, items)
        await finish_plan(conn, key, n)
        await record_outcomes(
            conn,
            key,
            [
                PlanItemPublished(
                    i, targets[i % len(targets)], f"c{i:07d}", "created", "fact", "", None, False
                )
                for i in range(n // 2)
            ],
        )


async def _phase(
    engine: AsyncEngine, key: PlanKey, n: int, page: int
) -> list[tuple[str, float, float, str, str]]:
    """(read, ms joined, ms now, rows joined, rows now) for every read, and the baseline."""
    results = []

    def ours(read: Callable[[Any], Awaitable[Any]]) -> Callable[[], Awaitable[Any]]:
        async def run() -> Any:
            async with engine.connect() as conn:
                return await read(conn)

        return run

    from governance.storage.plans import promotion_plan_items

    _P = promotion_plan_items.c
    cases: list[tuple[str, Callable[[], list[Any]], Callable[[], Awaitable[Any]]]] = []
    for label, offset in (("first", 0), ("middle", n // 2), ("last", n - page)):
        cases.append(
            (
                f"plan_page {label} (offset {offset})",
                lambda o=offset: [joined_page(key, o, page)],
                ours(lambda c, o=offset: plan_page(c, key, offset=o, limit=page)),
            )
        )
    cases.append(
        (
            "quarantined_items",
            lambda: [joined_count(key, _P.quarantine), joined_quarantined(key, page)],
            ours(lambda c: quarantined_items(c, key, limit=page)),
        )
    )
    cases.append(
        (
            "published_page",
            lambda: [joined_count(key, _P.memory_id), joined_published(key, 0, page)],
            ours(lambda c: published_page(c, key, offset=0, limit=page)),
        )
    )
    for label, statements, run in cases:
        # the statements built at each call, as the reads build theirs
        async def old(statements: Callable[[], list[Any]] = statements) -> None:
            async with engine.connect() as conn:
                for s in statements():
                    (await conn.execute(s)).all()

        old_ms = await _p50(old)
        new_ms = await _p50(run)
        old_rows = await _touched(engine, old)
        new_rows = await _touched(engine, run)
        results.append((label, old_ms, new_ms, _rows(old_rows), _rows(new_rows)))
    base = await _p50(ours(lambda c: publish_rows(c, key, n - page, n)))
    results.append(
        (
            f"baseline: publish_rows, last {page}",
            base,
            base,
            "",
            _rows(await _touched(engine, ours(lambda c: publish_rows(c, key, n - page, n)))),
        )
    )
    return results


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, default=10_000, help="plan items (and candidates)")
    parser.add_argument("--memories", type=int, default=2_000, help="published memories items target")
    parser.add_argument("--page", type=int, default=100, help="items a page")
    args = parser.parse_args()

    url, server = bench_database()
    settings = Settings(database_url=url, db_timeout_seconds=600, data_dir=CACHE / "data")
    engine = make_engine(settings)
    try:
        rng = np.random.default_rng(11)
        now = datetime.now(UTC)
        vectors = rng.standard_normal((args.memories, 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        texts = _texts()
        rows = [
            memory_row(
                i,
                texts[i % len(texts)][0],
                texts[i % len(texts)][1],
                "fact",
                ("bench", "plans", "main"),
                rng,
                now,
                vectors[i],
            )
            for i in range(args.memories)
        ]
        await bulk_load(engine, rows)
        targets = [r.id for r in rows]
        async with engine.begin() as conn:
            for table in CLAIM_CHECK:
                await conn.execute(text(f"ALTER TABLE {table} SET (autovacuum_enabled = false)"))
        # an older promotion's plan in the same tables, as on a platform that has run a while
        await _write_plan(engine, PlanKey("promote-older", "run-1"), args.items // 2, targets, seed=1)
        key = PlanKey("promote-bench", "run-1")
        started = time.perf_counter()
        await _write_plan(engine, key, args.items, targets, seed=2)
        log(f"plan of {args.items} items written in {time.perf_counter() - started:.1f} s; page {args.page}")
        for phase in ("fresh (no statistics)", "after ANALYZE"):
            if phase == "after ANALYZE":
                async with engine.begin() as conn:
                    for table in CLAIM_CHECK:
                        await conn.execute(text(f"ANALYZE {table}"))
            log(f"\n{phase}: p50 ms joined -> now (ratio), then rows touched joined / now")
            for label, old_ms, new_ms, old_rows, new_rows in await _phase(engine, key, args.items, args.page):
                log(f"  {label:<32} {old_ms:8.2f} -> {new_ms:7.2f} ms ({new_ms / old_ms:.3f})")
                if old_rows:
                    log(f"      joined: {old_rows}")
                log(f"      now:    {new_rows}")
    finally:
        async with engine.begin() as conn:
            for table in CLAIM_CHECK:
                await conn.execute(text(f"ALTER TABLE {table} RESET (autovacuum_enabled)"))
        await engine.dispose()
        if server is not None:
            server.cleanup()


if __name__ == "__main__":
    asyncio.run(main())
