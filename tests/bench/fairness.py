"""Fair workers: small promotions' latency while a big promotion runs, against the same run's unloaded.

    python tests/bench/fairness.py [--big 3000] [--small 12] [--entries 6]

Starts its own embedded Postgres (pgserver, temporary directory, migrations applied) and a Temporal dev
server, and runs the production worker (`workflows.worker.build_worker`) in this process. Then:

  1. unloaded: `--small` task-scope promotions of `--entries` entries each, one at a time, on a quiet
     worker: their p50 is the baseline;
  2. loaded: one promotion of a task of `--big` distinct entries starts on the same worker; once its plan is
     under way, `--small` more small promotions run one at a time beside it;
  3. unloaded again (the machine is shared: the baseline is taken before and after the loaded phase).

Prints the p50 and p90 of each phase and `loaded p50 / unloaded p50` (target <= 2). The big promotion is
terminated once the small ones are measured (its own time is `promotion.py --big`'s figure).
Everything shares this machine's cores (worker, embedder, Postgres, Temporal, load generator).
Not collected by pytest (tests/bench is outside the default run).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path


async def main(big_n: int, small: int, entries: int) -> None:
    """Start Postgres and Temporal, run the three phases, print the figures."""

    from api.cli.embedded import start_embedded_postgres
    from governance.approval import ApprovalMode
    from governance.config import Settings
    from governance.storage.engine import make_engine
    from governance.storage.plans import latest_plan
    from policy.enforcer import make_authorizer
    from tests.bench.promotion import _seed, _seed_big
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

    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="loregate-bench-fairness-"))
    pg, url = start_embedded_postgres(tmp)
    try:
        url = fresh_bench_database(pg)
        settings = Settings(database_url=url, data_dir=tmp, approval_mode=ApprovalMode.TRUSTING)
        engine = make_engine(settings)
        authorizer = make_authorizer(url, watch=False)
        env = await start_dev_server()
        try:
            client = env.client
            print(f"seeding {3 * small + 1} small tasks and one of {big_n} entries ...", flush=True)
            small_ids = await _seed(engine, 3 * small + 1, entries)
            big_id = await _seed_big(engine, big_n, big_n)
            requester = await make_requester(engine, "bench", "promotion")
            queue = f"bench-fair-{uuid.uuid4().hex[:6]}"

            def start_input(task_id: str) -> PromotionInput:
                return PromotionInput(
                    task_id, "task", verification=Verification("tests_passed", True), requested_by=requester
                )

            async def promote(task_id: str) -> float:
                started = time.perf_counter()
                result: PromotionResult = await client.execute_workflow(
                    PromotionWorkflow.run,
                    start_input(task_id),
                    id=workflow_id_for(task_id),
                    task_queue=queue,
                )
                assert result.state == PromotionState.PUBLISHED, result.reason
                return time.perf_counter() - started

            async def one_at_a_time(ids: list[str]) -> list[float]:
                return [await promote(task_id) for task_id in ids]

            worker = build_worker(
                client, engine=engine, settings=settings, authorizer=authorizer, task_queue=queue
            )
            async with worker:
                await promote(small_ids[0])  # warm: the embedder loads, the caches fill
                before = await one_at_a_time(small_ids[1 : small + 1])
                handle = await client.start_workflow(
                    PromotionWorkflow.run, start_input(big_id), id=workflow_id_for(big_id), task_queue=queue
                )
                # wait until the big plan is embedding (cognify stored its candidates)
                while True:
                    async with engine.connect() as conn:
                        if await latest_plan(conn, workflow_id_for(big_id)) is not None:
                            break
                    await asyncio.sleep(0.5)
                status: PromotionStatus = await handle.query(PromotionWorkflow.state)
                print(f"big promotion is {status.state}: small promotions beside it ...", flush=True)
                loaded_started = time.perf_counter()
                loaded = await one_at_a_time(small_ids[small + 1 : 2 * small + 1])
                loaded_seconds = time.perf_counter() - loaded_started
                big_state = (await handle.query(PromotionWorkflow.state)).state
                await handle.terminate("the fairness bench measured what it needed")
                after = await one_at_a_time(small_ids[2 * small + 1 :])
        finally:
            await env.shutdown()
            authorizer.close()
            await engine.dispose()
    finally:
        pg.cleanup()

    def p(values: list[float], q: float) -> float:
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    unloaded = before + after
    print()
    print(f"{'phase':<34}{'n':>4}{'p50 ms':>10}{'p90 ms':>10}")
    for name, values in (
        ("unloaded, before", before),
        ("unloaded, after", after),
        ("unloaded (both)", unloaded),
        (f"beside a {big_n}-entry promotion", loaded),
    ):
        print(f"{name:<34}{len(values):>4}{p(values, 0.5):>10.0f}{p(values, 0.9):>10.0f}")
    ratio = statistics.median(loaded) / statistics.median(unloaded)
    print(f"loaded p50 / unloaded p50: {ratio:.2f}  (target <= 2)")
    print(f"the big promotion was {big_state} throughout the {loaded_seconds:.1f} s of the loaded phase")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    repo = str(Path(__file__).resolve().parents[2])
    if repo not in sys.path:
        sys.path.insert(0, repo)
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--big", type=int, default=3000, help="entries of the big promotion's task")
    parser.add_argument("--small", type=int, default=12, help="small promotions per phase")
    parser.add_argument("--entries", type=int, default=6, help="staging entries per small task")
    args = parser.parse_args()
    asyncio.run(main(args.big, args.small, args.entries))
