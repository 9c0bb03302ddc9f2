"""Retention pruning benchmark: the nightly prune step against a bare DELETE of the same rows, same run.

    python tests/bench/retention.py [--memories N] [--projects P] [--batch B]

Starts its own embedded Postgres (pgserver, in a temporary directory) with the migrations applied and writes
two identical tenants of N memories each (episodes, skills and facts with 384-d embeddings in the HNSW
index, spread over P projects' worktrees, a third of them older than 90 days, a tenth of the skills voted
down, some episodes distilled into insights). Then:

  - the dry run (load every row with votes and derivations, choose): seconds, rows/s read
  - the real run on tenant A (`RetentionActivities.prune_report`: a batch per transaction under the scopes'
    locks, chosen again, stale marks, cache rows, PRUNED events): seconds, rows/s pruned
  - the baseline on tenant B: one `DELETE FROM memories WHERE id = ANY(...)` of as many rows
  - the ratio pruned rows/s ÷ bare-delete rows/s

Not collected by pytest (tests/bench is outside the default run).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from sqlalchemy import text  # noqa: E402
from sqlalchemy.ext.asyncio import AsyncEngine  # noqa: E402

from activities.retention import PruneInput, RetentionActivities  # noqa: E402
from api.cli.embedded import start_embedded_postgres  # noqa: E402
from governance.config import Settings  # noqa: E402
from governance.retention import RetentionPolicy  # noqa: E402
from governance.storage.engine import make_engine  # noqa: E402
from governance.storage.migrate import upgrade_head  # noqa: E402

_SEED = """
INSERT INTO memories (id, citation, memory_type, scope, scope_key, org, project, title, content, content_hash,
                      embedding, confidence, reward, success, source_task_ids, decay_policy, created_at)
SELECT gen_random_uuid(), left(md5(:org || i::text), 16),
       CASE WHEN i % 10 < 6 THEN 'episode' WHEN i % 10 < 8 THEN 'skill' ELSE 'fact' END,
       'worktree', 'worktree:' || :org || '/p' || (i % :projects) || '/main', :org, 'p' || (i % :projects),
       'memory ' || i, 'content of memory ' || i || ' in ' || :org, md5(:org || 'c' || i::text),
       (SELECT CAST(array_agg(random()) AS vector) FROM generate_series(1, 384) WHERE i > 0),
       0.6, 0.3 + (i % 7) / 10.0, true, ARRAY['task-' || i], 'manual_only',
       now() - make_interval(days => CASE WHEN i % 3 = 0 THEN 120 ELSE i % 60 END)
FROM generate_series(1, :n) AS i
"""
_VOTES = """
INSERT INTO memory_votes (memory_id, actor_id, helpful)
SELECT m.id, a.actor, false FROM memories m CROSS JOIN (VALUES ('a1'), ('a2'), ('a3')) AS a(actor)
WHERE m.org = :org AND m.memory_type = 'skill' AND right(m.citation, 1) IN ('0')
"""
_INSIGHTS = """
WITH src AS (SELECT id, scope, scope_key, org, project FROM memories
             WHERE org = :org AND memory_type = 'episode' AND right(citation, 1) IN ('1', '2')),
ins AS (
    INSERT INTO memories (id, citation, memory_type, scope, scope_key, org, project, title, content,
                          content_hash, confidence, source_task_ids)
    SELECT gen_random_uuid(), left(md5('ins' || src.id::text), 16), 'insight', scope, scope_key, org, project,
           'insight', 'insight of ' || src.id, md5('ins' || src.id::text), 0.6, ARRAY['r']
    FROM src RETURNING id, content)
INSERT INTO memory_derivations (memory_id, derived_from_id)
SELECT ins.id, src.id FROM ins JOIN src ON ins.content = 'insight of ' || src.id
"""


async def _seed(engine: AsyncEngine, org: str, n: int, projects: int) -> None:
    async with engine.begin() as conn:
        await conn.execute(text(_SEED), {"org": org, "n": n, "projects": projects})
        await conn.execute(text(_VOTES), {"org": org})
        await conn.execute(text(_INSIGHTS), {"org": org})
        await conn.execute(text("ANALYZE memories"))


async def _run(database_url: str, n: int, projects: int, batch: int) -> None:
    # seeding writes HNSW entries in bulk: past the 5 s statement timeout a worker's engine has
    seeder = make_engine(Settings(database_url=database_url, db_timeout_seconds=3600))
    try:
        started = time.perf_counter()
        await _seed(seeder, "bench-a", n, projects)
        await _seed(seeder, "bench-b", n, projects)
        print(f"seeded 2 x {n} memories in {time.perf_counter() - started:.1f}s")
    finally:
        await seeder.dispose()
    # the prune runs on an engine like a worker's (LOREGATE_DB_TIMEOUT_SECONDS 5 per statement)
    engine = make_engine(Settings(database_url=database_url))
    policy = RetentionPolicy()
    try:
        acts = RetentionActivities(engine)
        now = datetime.now(UTC)

        started = time.perf_counter()
        dry = await acts.prune_report(PruneInput(now=now, dry_run=True, policy=policy, orgs=["bench-a"]))
        dry_s = time.perf_counter() - started
        started = time.perf_counter()
        real = await acts.prune_report(
            PruneInput(now=now, dry_run=False, policy=policy, orgs=["bench-a"], batch_size=batch)
        )
        real_s = time.perf_counter() - started
        pruned = len(real.items)
        assert {i.id for i in real.items} == {i.id for i in dry.items}, "dry run and run chose differently"

        async with engine.begin() as conn:
            ids = [
                r[0]
                for r in await conn.execute(
                    text(
                        "SELECT id FROM memories WHERE org = 'bench-b' AND memory_type <> 'insight' "
                        "ORDER BY created_at LIMIT :k"
                    ),
                    {"k": pruned},
                )
            ]
            started = time.perf_counter()
            await conn.execute(
                text("DELETE FROM memories WHERE id = ANY(CAST(:ids AS uuid[]))"), {"ids": ids}
            )
            bare_s = time.perf_counter() - started
    finally:
        await engine.dispose()
    total = n + n // 10  # with the insights, roughly
    print(
        f"dry run: read ~{total} memories and chose {len(dry.items)} in {dry_s:.2f}s "
        f"({total / dry_s:,.0f} rows/s)"
    )
    print(f"  by rule {dry.by_rule()}; spared {dry.spared}")
    print(f"run: pruned {pruned} in {real_s:.2f}s ({pruned / real_s:,.0f} rows/s), {real.stale_marked} stale")
    print(f"bare DELETE of {pruned} rows: {bare_s:.2f}s ({pruned / bare_s:,.0f} rows/s)")
    print(f"ratio pruned rows/s / bare delete rows/s: {bare_s / real_s:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=20_000)
    parser.add_argument("--projects", type=int, default=20)
    parser.add_argument("--batch", type=int, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="loregate-bench-") as tmp:
        server, _ = start_embedded_postgres(Path(tmp))
        try:
            server.psql("CREATE DATABASE bench;")
            database_url = server.get_uri("bench")
            upgrade_head(database_url)
            asyncio.run(_run(database_url, args.memories, args.projects, args.batch))
        finally:
            server.cleanup()


if __name__ == "__main__":
    main()
